package admin

import (
	"net/http"

	"github.com/hookline/hookline/web/templates"
)

// NewTenant is the form creating a tenant.
func (h *Handler) NewTenant(w http.ResponseWriter, r *http.Request) {
	h.Render(w, r, http.StatusOK, templates.NewTenant(templates.NewTenantPage{
		Layout: h.adminLayout(r, templates.NavOverview, "New tenant", templates.Crumb{Label: "New tenant"}),
	}))
}
