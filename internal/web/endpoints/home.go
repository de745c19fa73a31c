package endpoints

import (
	"net/http"

	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// Home lists the tenant's subscriptions with their health. An operator without a tenant goes to /admin.
func (h *Handler) Home(w http.ResponseWriter, r *http.Request) {
	u := core.Caller(r)
	tenantID, ok := u.Tenant()
	if !ok {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	p := templates.HomePage{Layout: h.Layout(r, "Subscriptions", templates.Crumb{Label: "Subscriptions"})}
	if t, err := h.Tenants.GetTenant(ctx, tenantID); err == nil {
		p.TenantName = t.Name
	}
	var err error
	if p.Subscriptions, err = h.SubscriptionsWithHealth(ctx, tenantID); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Render(w, r, http.StatusOK, templates.Home(p))
}
