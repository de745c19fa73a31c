package core

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
)

// SendOne publishes one event to s only, whatever its event types, recording action (Send test event,
// Send example). It answers the request itself when nothing was sent: a refusal, or a subscription that
// takes no new deliveries, is a flash on back (what names the event in it); ok is false then.
func (h *Handler) SendOne(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, s subscriptions.Subscription,
	eventType string, payload []byte, action, what, back string) (deliveryID string, ok bool) {
	pub, err := h.Publisher.SendTo(r.Context(), tenantID, s.ID, eventType, payload, action)
	if err != nil {
		if fe := fault.As(err); fe != nil && fe.Code != fault.Internal {
			h.SetFlash(r, "error", what+" not sent: "+fe.Message+".")
			http.Redirect(w, r, back, http.StatusSeeOther)
			return "", false
		}
		h.Fail(w, r, err)
		return "", false
	}
	if len(pub.Deliveries) == 0 {
		h.SetFlash(r, "warning", what+" not sent: that subscription takes no new deliveries ("+s.State+"). Resume it on its page first.")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return "", false
	}
	return pub.Deliveries[0].ID, true
}
