package endpoints

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/internal/web/deliveries"
	"github.com/hookline/hookline/web/templates"
)

// Subscription is one subscription's page: actions, health, contract and its deliveries, filtered and paged.
func (h *Handler) Subscription(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	rec := templates.RecoverForm{Since: h.recoverSince(r, s.ID)}
	h.renderSubscription(w, r, tenantID, s, rec)
}

// renderSubscription renders a subscription's page; rec is the recover form's state (a preview's answer
// when a recover preview renders the page).
func (h *Handler) renderSubscription(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, s subscriptions.Subscription, rec templates.RecoverForm) {
	ctx := r.Context()
	q := r.URL.Query()
	q.Del("recover_since")
	q.Del(blockedKeysCursor)
	subs, err := h.deliveries.TenantSubscriptions(ctx, tenantID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	subs[s.ID] = s
	base := "/subscriptions/" + s.ID.String()
	// The list, its tabs and the subscription's counts by state (the health card's and the paused note's)
	// come from one snapshot: the card's "3 pending", the note's "3 waiting" and the Pending tab of an
	// unfiltered list are one number.
	l, status, states, err := h.deliveries.List(ctx, q, deliveries.ListScope{TenantID: tenantID, Base: base, Sub: &s, Subs: subs})
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	sv, err := h.subscriptionWithHealth(r, tenantID, s, states)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	p := templates.SubscriptionPage{
		Layout: h.TenantLayout(r, tenantID, sv.Name(), append(h.TenantCrumbs(r, tenantID), templates.Crumb{Label: sv.Name()})...),
		Sub:    sv, ActionBase: base, Contract: h.Contract(),
		CanPause:  s.State == subscriptions.Active,
		CanResume: s.State == subscriptions.Paused || s.State == subscriptions.Disabled,
		CanTest:   s.State != subscriptions.Disabled && s.Type != subscriptions.Polling,
		TestType:  h.Brand.TestEventType(),
		List:      l,
	}
	// A polling subscription: how to pull and its consumers, and its own contract (nothing is sent).
	if p.Polling, err = h.pollingPanel(ctx, tenantID, s); err != nil {
		h.Fail(w, r, err)
		return
	}
	if p.Polling != nil {
		p.Contract = h.pollingContract()
	}
	if p.Incidents, err = h.incidentRows(r, tenantID, s.ID); err != nil {
		h.Fail(w, r, err)
		return
	}
	if p.Recover, err = h.recoverForm(r, tenantID, s.ID, rec); err != nil {
		h.Fail(w, r, err)
		return
	}
	if p.BlockedKeys, err = h.blockedKeysPanel(r, tenantID, s); err != nil {
		h.Fail(w, r, err)
		return
	}
	p.Contract = orderingContract(p.Contract, s)
	if s.State != subscriptions.Active {
		p.Waiting = core.CountText(states.Pending.N, states.Pending.AtLeast)
	}
	h.Render(w, r, status, templates.SubscriptionView(p))
}

// customerSubscription loads the {id} subscription: of the user's tenant for a customer (anything else is
// NOT_FOUND), of whichever tenant owns it for an operator.
func (h *Handler) customerSubscription(r *http.Request) (uuid.UUID, subscriptions.Subscription, error) {
	u := core.Caller(r)
	tenantID, ok := u.Tenant()
	id, err := core.PathID(r)
	if err != nil {
		return uuid.Nil, subscriptions.Subscription{}, err
	}
	if u.Admin {
		if tenantID, err = h.Subs.TenantOf(r.Context(), id); err != nil {
			return uuid.Nil, subscriptions.Subscription{}, err
		}
		ok = true
	}
	if !ok {
		return uuid.Nil, subscriptions.Subscription{}, fault.Missing("subscription")
	}
	s, err := h.Subs.Get(r.Context(), tenantID, id)
	return tenantID, s, err
}
