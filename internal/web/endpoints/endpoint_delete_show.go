package endpoints

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/internal/web/deliveries"
	"github.com/hookline/hookline/web/templates"
)

// DeleteEndpointPage is GET /subscriptions/{id}/delete: how many deliveries wait, what becomes of them,
// and the button.
func (h *Handler) DeleteEndpointPage(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	// Waiting and in flight counted in one statement (one moment), as the subscription's page counts them.
	states, err := h.Dels.StateCounts(r.Context(), tenantID, []uuid.UUID{s.ID}, deliveries.TabCountUpTo)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	st := states[s.ID]
	waiting, inFlight := core.CountText(st.Pending.N, st.Pending.AtLeast), core.CountText(st.InFlight.N, st.InFlight.AtLeast)
	base := "/subscriptions/" + s.ID.String()
	url := s.URL
	if s.Type == subscriptions.Polling {
		url = "Pulled by consumers (polling)"
	}
	h.Render(w, r, http.StatusOK, templates.DeleteEndpoint(templates.DeleteEndpointPage{
		Layout: h.TenantLayout(r, tenantID, "Delete "+subName(s), append(h.TenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName(s), Href: base}, templates.Crumb{Label: "Delete"})...),
		Name: subName(s), URL: url, Action: base + "/delete", Back: base, Waiting: waiting, InFlight: inFlight,
	}))
}
