package deliveries

import (
	"context"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// TabCountUpTo caps each state tab's count: a tab says "1,000+" rather than scan a million rows.
const TabCountUpTo = 1000

// TypesUpTo is how many of the newest deliveries the event-type choice is drawn from.
const TypesUpTo = 1000

// ListScope is what a list spans: one subscription, or every subscription of the tenant.
type ListScope struct {
	TenantID uuid.UUID
	Base     string                      // the page's path
	Sub      *subscriptions.Subscription // nil: every subscription
	// Subs are the tenant's subscriptions by id: rows name theirs and say when it holds them (paused).
	Subs map[uuid.UUID]subscriptions.Subscription
}

// List builds a list of deliveries for a page: the filter form with its choices, the state tabs
// with capped counts, one page of rows and the pager. A bad filter is not an error of the page: the list
// says what is wrong (status 400) and shows no rows, without also saying that nothing matches.
// On a subscription's page (sc.Sub set) it also returns the subscription's deliveries by state now
// (its health card's counts and its paused note's "N waiting"): read in the same snapshot as the rows and
// the tabs, so that every number on the page is of one moment.
func (h *Handler) List(ctx context.Context, q url.Values, sc ListScope) (templates.DeliveryList, int, deliveries.StateCounts, error) {
	l, f, ferr, err := h.listForm(ctx, q, sc)
	if err != nil {
		return l, 0, deliveries.StateCounts{}, err
	}
	snap, err := h.readList(ctx, sc, f, ferr, l.Tabs)
	if err != nil {
		return l, 0, snap.states, err
	}
	if ferr == nil {
		ferr = snap.listErr
	}
	if ferr != nil {
		l, status, err := h.listError(l, ferr)
		return l, status, snap.states, err
	}
	h.fillList(&l, snap, q, sc)
	return l, http.StatusOK, snap.states, nil
}

// listForm reads the list's filter and fills its form (with the event-type and subscription choices) and
// its tabs. ferr is the filter's own fault (shown on the list); err fails the page.
func (h *Handler) listForm(ctx context.Context, q url.Values, sc ListScope) (l templates.DeliveryList, f deliveries.Filter, ferr, err error) {
	l = templates.DeliveryList{Action: sc.Base, AllSubscriptions: sc.Sub == nil}
	f, fv, ferr := parseListFilter(q, sc.Sub == nil, h.Now())
	var subID *uuid.UUID
	if sc.Sub != nil {
		subID = &sc.Sub.ID
		f.SubscriptionID = subID
	}
	// Choices first: the form shows them even when the filter is wrong.
	types, err := h.Dels.EventTypes(ctx, sc.TenantID, subID, TypesUpTo)
	if err != nil {
		return l, f, ferr, err
	}
	if sc.Sub != nil {
		types = append(types, sc.Sub.EventTypes...)
	} else {
		for _, s := range sc.Subs {
			types = append(types, s.EventTypes...)
		}
	}
	fv.EventTypes = eventTypeOptions(types, fv.EventType)
	if sc.Sub == nil {
		fv.Subscriptions = subscriptionOptions(sc.Subs, fv.Subscription)
	}
	l.Filter = fv
	l.Tabs = tabs(sc.Base, q, fv.State)
	if ferr == nil && sc.Sub == nil && f.SubscriptionID != nil {
		// Another tenant's or an unknown subscription would list nothing, which reads as "no deliveries".
		if _, ok := sc.Subs[*f.SubscriptionID]; !ok {
			known, err := h.Subs.Known(ctx, sc.TenantID, *f.SubscriptionID)
			if err != nil {
				return l, f, ferr, err
			}
			if !known {
				ferr = fault.New(fault.NotFound, "No such subscription: %s is not one of your subscriptions", f.SubscriptionID)
			}
		}
	}
	return l, f, ferr, nil
}

// listSnapshot is what a list reads in one snapshot: the page of rows, each tab's capped count and, on a
// subscription's page, the subscription's deliveries by state. listErr is the filter's fault found by the
// list's query.
type listSnapshot struct {
	page    deliveries.Page
	listErr error
	counts  []deliveries.Capped
	states  deliveries.StateCounts
}

// readList reads the page, each tab's capped count and the subscription's counts by state, in one snapshot:
// one by one, a delivery that moved in between was counted by one number and not by the next ("10
// matching" above 9 rows). One transaction runs its statements one after another; each count stops at
// TabCountUpTo. With a filter already at fault (ferr) only the subscription's counts are read.
func (h *Handler) readList(ctx context.Context, sc ListScope, f deliveries.Filter, ferr error, tabs []templates.Tab) (listSnapshot, error) {
	snap := listSnapshot{counts: make([]deliveries.Capped, len(tabs))}
	err := h.Dels.Read(ctx, func(v *deliveries.View) error {
		if sc.Sub != nil {
			by, err := v.StateCounts(ctx, sc.TenantID, []uuid.UUID{sc.Sub.ID}, TabCountUpTo)
			if err != nil {
				return err
			}
			snap.states = by[sc.Sub.ID]
		}
		if ferr != nil {
			return nil
		}
		if snap.page, snap.listErr = v.List(ctx, sc.TenantID, f); snap.listErr != nil {
			if fe := fault.As(snap.listErr); fe != nil {
				return nil // the filter's fault, shown on the list
			}
			return snap.listErr
		}
		for i := range tabs {
			tf := f
			tf.States = nil
			if s := tabs[i].State; s != "all" {
				tf.States = []string{s}
			}
			n, atLeast, err := v.Count(ctx, sc.TenantID, tf, TabCountUpTo)
			if err != nil {
				return err
			}
			snap.counts[i] = deliveries.Capped{N: n, AtLeast: atLeast}
		}
		return nil
	})
	return snap, err
}

// fillList puts what was read on the list: the tabs' counts, the total, the rows and the pager.
func (h *Handler) fillList(l *templates.DeliveryList, snap listSnapshot, q url.Values, sc ListScope) {
	for i, c := range snap.counts {
		l.Tabs[i].Count = core.CountText(c.N, c.AtLeast)
		if l.Tabs[i].Current {
			l.Total = core.CountText(c.N, c.AtLeast) + " matching deliveries"
			if c.N == 1 && !c.AtLeast {
				l.Total = "1 matching delivery"
			}
		}
	}
	for _, d := range snap.page.Items {
		l.Rows = append(l.Rows, h.listRow(d, sc.Subs))
	}
	if snap.page.NextCursor != "" {
		nq := core.CloneValues(q)
		nq.Set("cursor", snap.page.NextCursor)
		l.NextHref = sc.Base + "?" + nq.Encode()
	}
	if q.Get("cursor") != "" {
		l.FirstHref = withQuery(sc.Base, without(q, "cursor"))
	}
}

// listError puts a filter's INVALID_REQUEST (400) or the NOT_FOUND of what it names (404) on the list;
// anything else fails the page.
func (h *Handler) listError(l templates.DeliveryList, err error) (templates.DeliveryList, int, error) {
	if fe := fault.As(err); fe != nil && (fe.Code == fault.InvalidRequest || fe.Code == fault.NotFound) {
		l.Filter.Error = fe.Message
		for i := range l.Tabs {
			l.Tabs[i].Count = ""
		}
		return l, fe.Code.Status(), nil
	}
	return l, 0, err
}

// listRow is deliveryRow with the event's link and, from the tenant's subscriptions, the subscription's
// name and whether it holds the delivery (paused or disabled: a waiting delivery is then not overdue).
func (h *Handler) listRow(d deliveries.Delivery, subs map[uuid.UUID]subscriptions.Subscription) templates.DeliveryRow {
	row := h.DeliveryRow(d)
	row.EventID, row.EventShort, row.EventHref = d.EventID.String(), core.ShortID(d.EventID), "/events/"+d.EventID.String()
	row.SubName = "deleted subscription"
	if s, ok := subs[d.SubscriptionID]; ok {
		row.SubName, row.SubHref = h.SubscriptionView(s).Name(), "/subscriptions/"+d.SubscriptionID.String()
		switch {
		case d.State == delivery.Pending && s.State != subscriptions.Active:
			row.Waiting = s.State + ": waits until resumed"
			row.Next = templates.Time{}
		case d.State == delivery.Pending && s.Type == subscriptions.Polling:
			// Nothing is sent to a polling subscription: it has no next attempt, a consumer pulls it.
			row.Waiting = "waits to be pulled"
			row.Next = templates.Time{}
			row.State, row.StateClass = "pending", "badge-info" // a resent one is not retrying: nothing was sent
		case d.State == delivery.Pending && s.Circuit.State == delivery.CircuitOpen && d.NextAttemptAt != nil && !d.NextAttemptAt.After(h.Now()):
			// Due, but held by the open circuit: not overdue either.
			row.Waiting = "circuit open: waits for the endpoint to recover"
			row.Next = templates.Time{}
		}
	}
	return row
}

// TenantSubscriptions are the tenant's subscriptions by id.
func (h *Handler) TenantSubscriptions(ctx context.Context, tenantID uuid.UUID) (map[uuid.UUID]subscriptions.Subscription, error) {
	list, err := h.Subs.List(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]subscriptions.Subscription, len(list))
	for _, s := range list {
		out[s.ID] = s
	}
	return out, nil
}
