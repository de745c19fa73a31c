package endpoints

import (
	"net/http"
)

// DeleteEndpoint is POST /subscriptions/{id}/delete: the API's DELETE (the same service call, so its
// waiting deliveries end the same way), then the list (303).
func (h *Handler) DeleteEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if err := h.Subs.Delete(r.Context(), tenantID, s.ID); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.SetFlash(r, "success", "Deleted "+subName(s)+". It receives no more events; any deliveries that were waiting for it ended as dead (subscription deleted) and stay listed under Deliveries.")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
