package endpoints

import (
	"net/http"

	"github.com/hookline/hookline/internal/fault"
)

// setSubscriptionState pauses or resumes, then leads back to the subscription's page (303) with a message.
func (h *Handler) setSubscriptionState(w http.ResponseWriter, r *http.Request, pause bool) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if pause {
		_, err = h.Subs.Pause(r.Context(), tenantID, s.ID)
	} else {
		_, err = h.Subs.Resume(r.Context(), tenantID, s.ID)
	}
	switch fe := fault.As(err); {
	case err == nil && pause:
		h.SetFlash(r, "success", "Paused. New events are kept and wait; nothing is sent until you resume.")
	case err == nil:
		h.SetFlash(r, "success", "Resumed. Waiting deliveries are being sent.")
	case fe != nil && fe.Code != fault.NotFound && fe.Code != fault.Internal:
		h.SetFlash(r, "error", "Not changed: "+fe.Message+".")
	default:
		h.Fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/subscriptions/"+s.ID.String(), http.StatusSeeOther)
}
