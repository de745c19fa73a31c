package web

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// Fixed URLs of the platform's branding, served by this process (never inline: the CSP allows neither
// inline styles nor inline images of the platform's choosing).
const (
	brandCSSPath  = "/static/brand.css"
	brandLogoPath = "/static/brand-logo"
)

// brandRoutes serves the accent stylesheet and the logo when they are configured.
func (h *Handler) brandRoutes(r chi.Router) {
	if h.brand.Accent != nil {
		css := []byte(h.brand.Accent.CSS())
		r.Get(brandCSSPath, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(css)
		})
	}
	if l := h.brand.Logo; l != nil {
		r.Get(brandLogoPath, func(w http.ResponseWriter, r *http.Request) {
			hd := w.Header()
			hd.Set("Content-Type", l.ContentType)
			hd.Set("Cache-Control", "public, max-age=3600")
			hd.Set("X-Content-Type-Options", "nosniff")
			if l.SVG() {
				// Shown only through <img> (where SVG never runs script), but opened on its own an SVG is a
				// document: this policy keeps any script in it from running and sandboxes it.
				hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
			}
			_, _ = w.Write(l.Data)
		})
	}
}

// marks are the header's logo and the browser tab's icon: Hookline's own without a brand, the platform's
// logo under a brand that has one, and none under a brand without one (Hookline's mark beside another name
// would say whose product this is).
func (h *Handler) marks() (logo, icon string) {
	switch {
	case h.brand.Logo != nil:
		return brandLogoPath, brandLogoPath
	case h.brand.Custom():
		return "", ""
	}
	return "/static/logo.svg", "/static/favicon.svg"
}

// iconURL is the browser tab's icon (marks).
func (h *Handler) iconURL() string {
	_, icon := h.marks()
	return icon
}

// favicon answers /favicon.ico, which browsers ask for on their own: the page's icon, or 404 under a
// brand without a logo.
func (h *Handler) favicon(w http.ResponseWriter, r *http.Request) {
	icon := h.iconURL()
	if icon == "" {
		http.NotFound(w, r)
		return
	}
	http.Redirect(w, r, icon, http.StatusMovedPermanently)
}

// embeddable makes the session cookie work inside the platform's frame when framing is allowed: a
// third-party frame gets its cookies only when they are SameSite=None (hence Secure), and Partitioned
// (CHIPS) keeps them to that embedding site, which is also what browsers phasing out third-party cookies
// still allow. Without framing the cookie stays SameSite=Lax.
func (h *Handler) embeddable() {
	if len(h.frameAncestors) == 0 {
		return
	}
	h.sessions.Cookie.SameSite = http.SameSiteNoneMode
	h.sessions.Cookie.Secure = true
	h.sessions.Cookie.Partitioned = true
}

// frameOrigins is what app.js may post the page's height to: the allowed parents, space-separated.
func (h *Handler) frameOrigins() string { return strings.Join(h.frameAncestors, " ") }
