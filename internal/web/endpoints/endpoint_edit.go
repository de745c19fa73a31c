package endpoints

import (
	"net/http"

	"github.com/hookline/hookline/web/templates"
)

// EditEndpoint is GET /subscriptions/{id}/edit: the form with the subscription's settings.
func (h *Handler) EditEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	p, err := h.formPage(r, tenantID, formOf(s), &s)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Render(w, r, http.StatusOK, templates.EndpointForm(p))
}
