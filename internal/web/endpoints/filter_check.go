package endpoints

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// NewEndpointFilterTest is POST /subscriptions/filter-test, the Test filter button of the new endpoint
// form: the same form again (200) with every value typed kept but the secrets, and the test's result
// beside the filter. Nothing is saved.
func (h *Handler) NewEndpointFilterTest(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := core.Caller(r).Tenant()
	if !ok {
		h.NotFound(w, r)
		return
	}
	h.renderFilterTest(w, r, tenantID, nil)
}

// EditEndpointFilterTest is POST /subscriptions/{id}/filter-test, the Test filter button of an endpoint's
// form, as NewEndpointFilterTest.
func (h *Handler) EditEndpointFilterTest(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.renderFilterTest(w, r, tenantID, &s)
}

// renderFilterTest shows the posted form again with the filter test's result; sub is the stored
// subscription of an edit form.
func (h *Handler) renderFilterTest(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, sub *subscriptions.Subscription) {
	f := readEndpointForm(r)
	p, err := h.formPage(r, tenantID, f, sub)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	p.Filter.Result = h.filterTestResult(r.Context(), f.receiver)
	p.SecretsNote = f.receiver.secretsNote()
	if len(f.headers) > 0 {
		p.HeadersNote = headersNote(sub != nil)
	}
	h.Render(w, r, http.StatusOK, templates.EndpointForm(p))
}
