package endpoints

import (
	"cmp"
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// RecoverPage is one recover, for the customer whose it is (an operator may open any): what it scheduled
// and what became of it, following it until every delivery it scheduled is final, like the operator's
// replay page.
func (h *Handler) RecoverPage(w http.ResponseWriter, r *http.Request) {
	id, err := core.PathID(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	u := core.Caller(r)
	var scope *uuid.UUID
	if !u.Admin {
		t, ok := u.Tenant()
		if !ok {
			h.NotFound(w, r)
			return
		}
		scope = &t
	}
	ctx := r.Context()
	rep, err := h.Replays.Get(ctx, id, scope)
	if err == nil && (rep.Kind != replays.ReplayRecover || rep.TenantID == nil || rep.SubscriptionID == nil) {
		err = fault.Missing("recover")
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	tenantID, subID := *rep.TenantID, *rep.SubscriptionID
	subName := core.ShortID(subID)
	if s, err := h.Subs.Get(ctx, tenantID, subID); err == nil {
		subName = cmp.Or(s.Description, s.URL, templates.PollingName)
	} else if !fault.Is(err, fault.NotFound) {
		h.Fail(w, r, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	dels, err := h.Replays.Deliveries(ctx, id, core.ReplayPageSize, cursor)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	title := "Recover " + core.ShortID(id)
	crumbs := append(h.TenantCrumbs(r, tenantID), templates.Crumb{Label: subName, Href: "/subscriptions/" + subID.String()},
		templates.Crumb{Label: title})
	p := templates.ReplayPage{Layout: h.TenantLayout(r, tenantID, title, crumbs...), Customer: !u.Admin}
	h.FillReplayPage(&p, rep, nil, dels, core.RecoverHref(id), cursor)
	p.Replay = recoverRow(p.Replay, rep)
	if p.Customer {
		p.Replay.Actor = startedBy(rep)
	}
	h.Render(w, r, http.StatusOK, templates.ReplayView(p))
}
