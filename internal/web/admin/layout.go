package admin

import (
	"net/http"
	"strconv"

	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// RequireAdmin lets operators through to the /admin pages and answers the 404 page to anyone else.
func (h *Handler) RequireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !core.Caller(r).Admin {
			h.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// adminLayout is the frame of an operator page: the breadcrumb starts at Admin, the sub-navigation shows.
// No incident banner of the operator's own tenant: these pages are about every tenant.
func (h *Handler) adminLayout(r *http.Request, nav, title string, crumbs ...templates.Crumb) templates.Layout {
	l := h.Frame(r, title, append([]templates.Crumb{{Label: "Admin", Href: "/admin"}}, crumbs...)...)
	l.AdminNav = nav
	if !h.Subs.Encrypted() {
		// The server's log says so at start too; operators who never read it see it here.
		l.Warning = "HOOKLINE_SECRET_KEY is not set: signing secrets and custom headers are stored unencrypted in the database. " +
			"Set it to base64 of 32 random bytes (openssl rand -base64 32) and restart; existing rows are encrypted at start."
	}
	return l
}

// capped writes a count that stopped at its cap as "10000+".
func capped(n, upTo int) string {
	if n >= upTo {
		return strconv.Itoa(upTo) + "+"
	}
	return strconv.Itoa(n)
}
