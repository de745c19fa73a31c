package endpoints

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/web/core"
)

// SkipKey is POST /subscriptions/{id}/skip-key: the blocked key's dead head (delivery_id, of ordering_key)
// is discarded, which lets the key's next delivery go; then the subscription's page (303) says what was
// done. A delivery that is not this subscription's, or not of that key, is NOT_FOUND; one that is not dead
// any more (resent meanwhile) or already discarded is not skipped, and the page says why.
func (h *Handler) SkipKey(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	id, perr := uuid.Parse(r.PostFormValue("delivery_id"))
	key := r.PostFormValue("ordering_key")
	if perr != nil || key == "" {
		h.Fail(w, r, fault.Invalid("the form names no blocked key"))
		return
	}
	d, err := h.Dels.Get(r.Context(), tenantID, id)
	if err == nil && (d.SubscriptionID != s.ID || d.OrderingKey == nil || *d.OrderingKey != key) {
		err = fault.Missing("delivery")
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	back := "/subscriptions/" + s.ID.String()
	if !d.State.Dead() {
		h.SetFlash(r, "warning", "Not skipped: delivery "+core.ShortID(id)+" of key “"+key+"” is "+string(d.State)+
			" now, not dead, so it no longer blocks the key.")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	err = h.Dels.Discard(r.Context(), tenantID, id)
	switch fe := fault.As(err); {
	case err == nil:
		h.SetFlash(r, "success", "Skipped key “"+key+"”: its dead delivery "+core.ShortID(id)+
			" was discarded (kept for audit), and the deliveries waiting behind it are being sent, in order.")
	case fe != nil && fe.Code == fault.InvalidState:
		h.SetFlash(r, "warning", "Not skipped: "+fe.Message+".")
	default:
		h.Fail(w, r, err)
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
