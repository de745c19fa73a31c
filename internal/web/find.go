package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/web/templates"
)

// find is the header's search: an event id (the webhook-id receivers log) leads to the event's page, a
// delivery id to the delivery's; anything else stays here and says why. A customer finds only their own
// tenant's ids; an operator finds any.
func (h *Handler) find(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("q")
	q := strings.Trim(strings.TrimSpace(raw), `"'`+"`")
	p := templates.FindPage{Layout: h.layout(r, "Find", templates.Crumb{Label: "Find"}), Query: raw}
	p.NoSearch = true
	if q == "" {
		h.render(w, r, http.StatusOK, templates.FindView(p))
		return
	}
	id, err := uuid.Parse(q)
	if err != nil {
		p.Message = "“" + q + "” is not an event id or a delivery id: they look like 0192c8a1-7b3e-7c4d-9e2f-1a2b3c4d5e6f."
		h.render(w, r, http.StatusBadRequest, templates.FindView(p))
		return
	}
	ctx := r.Context()
	u := currentUser(r)
	tenantID, customer := tenantOf(u)
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
	if ok, err := mine(h.dels.TenantOf(ctx, id)); err != nil {
		h.fail(w, r, err)
		return
	} else if ok {
		http.Redirect(w, r, "/deliveries/"+id.String(), http.StatusSeeOther)
		return
	}
	if ok, err := mine(h.dels.EventTenant(ctx, id)); err != nil {
		h.fail(w, r, err)
		return
	} else if ok {
		http.Redirect(w, r, "/events/"+id.String(), http.StatusSeeOther)
		return
	}
	p.Message = "No event or delivery has the id " + id.String() + " in your account. Retention deletes delivered deliveries after a while, dead ones later; check the id is from this account."
	h.render(w, r, http.StatusNotFound, templates.FindView(p))
}

func isMissing(err error) bool {
	fe := fault.As(err)
	return fe != nil && fe.Code == fault.NotFound
}

// event is one event's page: its type, time, payload and every delivery of it, one per subscription.
func (h *Handler) event(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	u := currentUser(r)
	tenantID, ok := tenantOf(u)
	if u.Admin {
		if tenantID, err = h.dels.EventTenant(ctx, id); err != nil {
			h.fail(w, r, err)
			return
		}
		ok = true
	}
	if !ok {
		h.fail(w, r, fault.Missing("event"))
		return
	}
	ev, err := h.dels.Event(ctx, tenantID, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	subs, err := h.tenantSubscriptions(ctx, tenantID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page, err := h.dels.List(ctx, tenantID, deliveries.Filter{EventID: &id, Limit: deliveries.MaxPageSize})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	title := "Event " + shortID(id)
	p := templates.EventPage{
		Layout: h.tenantLayout(r, tenantID, title, append(h.tenantCrumbs(r, tenantID), templates.Crumb{Label: title})...),
		ID:     id.String(), EventType: ev.EventType, Created: h.timeView(ev.CreatedAt), Body: prettyJSON(ev.Body),
	}
	for _, d := range page.Items {
		p.Rows = append(p.Rows, h.listRow(d, subs))
	}
	if page.NextCursor != "" {
		p.More = "/deliveries?" + url.Values{"event_id": {id.String()}}.Encode()
	}
	h.render(w, r, http.StatusOK, templates.EventView(p))
}
