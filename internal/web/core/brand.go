package core

import (
	"strings"
)

// Fixed URLs of the platform's branding, served by this process (never inline: the CSP allows neither
// inline styles nor inline images of the platform's choosing).
const (
	BrandCSSPath  = "/static/brand.css"
	BrandLogoPath = "/static/brand-logo"
)

// marks are the header's logo and the browser tab's icon: Hookline's own without a brand, the platform's
// logo under a brand that has one, and none under a brand without one (Hookline's mark beside another name
// would say whose product this is).
func (h *Handler) marks() (logo, icon string) {
	switch {
	case h.Brand.Logo != nil:
		return BrandLogoPath, BrandLogoPath
	case h.Brand.Custom():
		return "", ""
	}
	return "/static/logo.svg", "/static/favicon.svg"
}

// IconURL is the browser tab's icon (marks).
func (h *Handler) IconURL() string {
	_, icon := h.marks()
	return icon
}

// frameOrigins is what app.js may post the page's height to: the allowed parents, space-separated.
func (h *Handler) frameOrigins() string { return strings.Join(h.FrameAncestors, " ") }
