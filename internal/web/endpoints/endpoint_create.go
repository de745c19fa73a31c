package endpoints

import (
	"net/http"

	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
)

// CreateEndpoint is POST /subscriptions: a new subscription, then its page (303); a refused field shows
// the form again with the message beside it (400), nothing saved.
func (h *Handler) CreateEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := core.Caller(r).Tenant()
	if !ok {
		h.NotFound(w, r)
		return
	}
	f := readEndpointForm(r)
	in, rateError := f.input(nil)
	f.applyType(&in, nil)
	f.rateError = rateError
	var err error
	var s subscriptions.Subscription
	if !f.problem() {
		// The first secret the API answers here is not shown: it is one Reveal away, in a POST's answer.
		s, _, err = h.Subs.Create(r.Context(), tenantID, in)
	}
	if err == nil && !f.problem() {
		if s.Type == subscriptions.Polling {
			h.SetFlash(r, "success", "Polling subscription added. Its deliveries wait from now on until a consumer pulls and commits them: see How to pull below.")
		} else {
			h.SetFlash(r, "success", "Endpoint added. It receives events from now on; reveal its signing secret below to check their signatures.")
		}
		http.Redirect(w, r, "/subscriptions/"+s.ID.String(), http.StatusSeeOther)
		return
	}
	h.refuseEndpointForm(w, r, tenantID, f, nil, err)
}
