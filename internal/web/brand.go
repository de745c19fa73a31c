package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/web/core"
)

// brandRoutes serves the accent stylesheet and the logo when they are configured.
func (h *Handler) brandRoutes(r chi.Router) {
	if h.Brand.Accent != nil {
		css := []byte(h.Brand.Accent.CSS())
		r.Get(core.BrandCSSPath, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(css)
		})
	}
	if l := h.Brand.Logo; l != nil {
		r.Get(core.BrandLogoPath, func(w http.ResponseWriter, r *http.Request) {
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

// favicon answers /favicon.ico, which browsers ask for on their own: the page's icon, or 404 under a
// brand without a logo.
func (h *Handler) favicon(w http.ResponseWriter, r *http.Request) {
	icon := h.IconURL()
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
	if len(h.FrameAncestors) == 0 {
		return
	}
	h.Sessions.Cookie.SameSite = http.SameSiteNoneMode
	h.Sessions.Cookie.Secure = true
	h.Sessions.Cookie.Partitioned = true
}
