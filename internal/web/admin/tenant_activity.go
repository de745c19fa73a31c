package admin

import (
	"net/http"

	"github.com/hookline/hookline/web/templates"
)

// AdminTenantActivity is /admin/tenants/{id}/activity: any tenant's log, for operators.
func (h *Handler) AdminTenantActivity(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	base := tenantHref(t)
	p := templates.ActivityPage{
		Layout: h.adminLayout(r, templates.NavOverview, "Activity of "+t.Name, h.tenantCrumb(t), templates.Crumb{Label: "Activity"}),
		Scope:  "Activity of " + t.Name + ": every change made through its dashboard, portal sessions and the API.", FormAction: base + "/activity",
	}
	h.activityLog.Page(w, r, t.ID, p)
}
