package admin

import (
	"net/http"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// CreateTenant creates a tenant and leads to its page; a bad name comes back beside the field (400).
func (h *Handler) CreateTenant(w http.ResponseWriter, r *http.Request) {
	name := r.PostFormValue("name")
	t, err := h.Tenants.CreateTenant(r.Context(), name)
	if _, msg, ok := fieldOf(err, "name"); ok {
		h.Render(w, r, fault.As(err).Code.Status(), templates.NewTenant(templates.NewTenantPage{
			Layout: h.adminLayout(r, templates.NavOverview, "New tenant", templates.Crumb{Label: "New tenant"}),
			Name:   name, NameError: msg,
		}))
		return
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	httpx.Logger(r.Context()).Info("tenant created from the dashboard", "tenant_id", t.ID, "by", core.Caller(r).ID)
	h.SetFlash(r, "success", "Tenant created. Add its dashboard users and API tokens here.")
	http.Redirect(w, r, tenantHref(t), http.StatusSeeOther)
}
