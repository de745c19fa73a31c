package deliveries

import (
	"net/http"

	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// DeliveriesPage is /deliveries: the tenant's deliveries across its subscriptions, with the same filters
// as a subscription's page plus the subscription and the event.
func (h *Handler) DeliveriesPage(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := core.Caller(r).Tenant()
	if !ok {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	subs, err := h.TenantSubscriptions(ctx, tenantID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	l, status, _, err := h.List(ctx, r.URL.Query(), ListScope{TenantID: tenantID, Base: "/deliveries", Subs: subs})
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	p := templates.DeliveriesPage{Layout: h.Layout(r, "Deliveries", templates.Crumb{Label: "Deliveries"}), List: l}
	h.Render(w, r, status, templates.DeliveriesView(p))
}
