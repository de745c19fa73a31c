package web

import (
	"net/http"

	"github.com/hookline/hookline/web/templates"
)

// admin lists every tenant, for operators (users with Admin). Anyone else gets a 404.
func (h *Handler) admin(w http.ResponseWriter, r *http.Request) {
	if !currentUser(r).Admin {
		h.notFound(w, r)
		return
	}
	ts, err := h.tenants.ListTenants(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := templates.AdminPage{Layout: h.layout(r, "Tenants", templates.Crumb{Label: "Admin", Href: "/admin"}, templates.Crumb{Label: "Tenants"})}
	for _, t := range ts {
		p.Tenants = append(p.Tenants, templates.Tenant{ID: t.ID.String(), Name: t.Name, Created: h.timeView(t.CreatedAt)})
	}
	h.render(w, r, http.StatusOK, templates.Admin(p))
}
