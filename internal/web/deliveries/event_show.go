package deliveries

import (
	"net/http"
	"net/url"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// Event is one event's page: its type, time, payload and every delivery of it, one per subscription.
func (h *Handler) Event(w http.ResponseWriter, r *http.Request) {
	id, err := core.PathID(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	ctx := r.Context()
	u := core.Caller(r)
	tenantID, ok := u.Tenant()
	if u.Admin {
		if tenantID, err = h.Dels.EventTenant(ctx, id); err != nil {
			h.Fail(w, r, err)
			return
		}
		ok = true
	}
	if !ok {
		h.Fail(w, r, fault.Missing("event"))
		return
	}
	ev, err := h.Dels.Event(ctx, tenantID, id)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	subs, err := h.TenantSubscriptions(ctx, tenantID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	page, err := h.Dels.List(ctx, tenantID, deliveries.Filter{EventID: &id, Limit: deliveries.MaxPageSize})
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	title := "Event " + core.ShortID(id)
	p := templates.EventPage{
		Layout: h.TenantLayout(r, tenantID, title, append(h.TenantCrumbs(r, tenantID), templates.Crumb{Label: title})...),
		ID:     id.String(), EventType: ev.EventType, Created: h.TimeView(ev.CreatedAt), Body: core.PrettyJSON(ev.Body),
	}
	for _, d := range page.Items {
		p.Rows = append(p.Rows, h.listRow(d, subs))
	}
	if page.NextCursor != "" {
		p.More = "/deliveries?" + url.Values{"event_id": {id.String()}}.Encode()
	}
	h.Render(w, r, http.StatusOK, templates.EventView(p))
}
