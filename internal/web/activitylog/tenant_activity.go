package activitylog

import (
	"net/http"

	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// TenantActivity is /activity: the signed-in tenant's own log.
func (h *Handler) TenantActivity(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := core.Caller(r).Tenant()
	if !ok {
		h.NotFound(w, r)
		return
	}
	p := templates.ActivityPage{Layout: h.Layout(r, "Activity", templates.Crumb{Label: "Activity"}), FormAction: "/activity"}
	h.Page(w, r, tenantID, p)
}
