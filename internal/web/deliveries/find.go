package deliveries

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// Find is the header's search: an event id (the webhook-id receivers log) leads to the event's page, a
// delivery id to the delivery's; anything else stays here and says why. A customer finds only their own
// tenant's ids; an operator finds any.
func (h *Handler) Find(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("q")
	q := strings.Trim(strings.TrimSpace(raw), `"'`+"`")
	p := templates.FindPage{Layout: h.Layout(r, "Find", templates.Crumb{Label: "Find"}), Query: raw}
	p.NoSearch = true
	if q == "" {
		h.Render(w, r, http.StatusOK, templates.FindView(p))
		return
	}
	id, err := uuid.Parse(q)
	if err != nil {
		p.Message = "“" + q + "” is not an event id or a delivery id: they look like 0192c8a1-7b3e-7c4d-9e2f-1a2b3c4d5e6f."
		h.Render(w, r, http.StatusBadRequest, templates.FindView(p))
		return
	}
	ctx := r.Context()
	u := core.Caller(r)
	tenantID, customer := u.Tenant()
	if u.Admin {
		customer = false
	}
	// A delivery first, then an event; another tenant's id is as missing as an unknown one.
	mine := func(owner uuid.UUID, err error) (bool, error) {
		if isMissing(err) {
			return false, nil
		}
		return err == nil && (!customer || owner == tenantID), err
	}
	if ok, err := mine(h.Dels.TenantOf(ctx, id)); err != nil {
		h.Fail(w, r, err)
		return
	} else if ok {
		http.Redirect(w, r, "/deliveries/"+id.String(), http.StatusSeeOther)
		return
	}
	if ok, err := mine(h.Dels.EventTenant(ctx, id)); err != nil {
		h.Fail(w, r, err)
		return
	} else if ok {
		http.Redirect(w, r, "/events/"+id.String(), http.StatusSeeOther)
		return
	}
	p.Message = "No event or delivery has the id " + id.String() + " in your account. Retention deletes delivered deliveries after a while, dead ones later; check the id is from this account."
	h.Render(w, r, http.StatusNotFound, templates.FindView(p))
}

func isMissing(err error) bool {
	fe := fault.As(err)
	return fe != nil && fe.Code == fault.NotFound
}
