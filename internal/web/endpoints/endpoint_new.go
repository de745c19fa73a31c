package endpoints

import (
	"net/http"

	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// NewEndpoint is GET /subscriptions/new: the empty form.
func (h *Handler) NewEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := core.Caller(r).Tenant()
	if !ok {
		h.NotFound(w, r)
		return
	}
	p, err := h.formPage(r, tenantID, endpointForm{eventTypes: []string{}}, nil)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Render(w, r, http.StatusOK, templates.EndpointForm(p))
}
