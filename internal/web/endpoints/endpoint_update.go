package endpoints

import (
	"net/http"
)

// UpdateEndpoint is POST /subscriptions/{id}: the form's settings replace the stored ones (a header's
// empty value keeps its stored value, as does an empty secret or certificate; a section left as shown
// changes nothing), then the subscription's page (303).
func (h *Handler) UpdateEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	f := readEndpointForm(r)
	in, rateError := f.input(&s)
	f.applyType(&in, &s)
	f.typ = s.Type
	f.rateError = rateError
	if !f.problem() {
		_, err = h.Subs.Update(r.Context(), tenantID, s.ID, in)
		if err == nil {
			h.SetFlash(r, "success", "Saved. The changes apply to deliveries from now on.")
			http.Redirect(w, r, "/subscriptions/"+s.ID.String(), http.StatusSeeOther)
			return
		}
	}
	h.refuseEndpointForm(w, r, tenantID, f, &s, err)
}
