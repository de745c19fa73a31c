package web

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// tabCountUpTo caps each state tab's count: a tab says "1,000+" rather than scan a million rows.
const tabCountUpTo = 1000

// typesUpTo is how many of the newest deliveries the event-type choice is drawn from.
const typesUpTo = 1000

// stateValues are the ?state= values a list accepts: the API's, and all.
var stateValues = []string{"all", "pending", "retrying", "in_flight", "delivered", "dead", "failed", "expired"}

// stateTabs are the tabs every list shows; another state, when chosen by URL, gets a tab of its own.
var stateTabs = []templates.Tab{
	{State: "all", Label: "All"}, {State: "delivered", Label: "Delivered"}, {State: "retrying", Label: "Retrying"},
	{State: "pending", Label: "Pending"}, {State: "dead", Label: "Dead"},
}

var stateLabels = map[string]string{"in_flight": "In flight", "failed": "Failed", "expired": "Expired"}

// rangePresets are the time presets: the list starts this long before now.
var rangePresets = []struct {
	value, label string
	d            time.Duration
}{{"1h", "Last hour", time.Hour}, {"24h", "Last 24 hours", 24 * time.Hour}, {"7d", "Last 7 days", 7 * 24 * time.Hour}}

// listScope is what a list spans: one subscription, or every subscription of the tenant.
type listScope struct {
	tenantID uuid.UUID
	base     string                      // the page's path
	sub      *subscriptions.Subscription // nil: every subscription
	// subs are the tenant's subscriptions by id: rows name theirs and say when it holds them (paused).
	subs map[uuid.UUID]subscriptions.Subscription
}

// parseListFilter reads a list's query: state tab, event type (exact, or a prefix ending in "." or "*"),
// last status (404, 5xx), time preset, from/until, and on the Deliveries page the subscription and event. The form view is filled
// even when a value is wrong, so the page can show it with the error.
func parseListFilter(q url.Values, all bool, now time.Time) (deliveries.Filter, templates.Filter, error) {
	f := deliveries.Filter{Limit: pageSize, Cursor: q.Get("cursor")}
	v := templates.Filter{State: q.Get("state"), EventType: strings.TrimSpace(q.Get("event_type")), Range: q.Get("range"),
		Since: q.Get("since"), Until: q.Get("until"), Status: strings.TrimSpace(q.Get("status"))}
	if all {
		// subscription_id is the API's name for it; a link written for the API filters here too.
		v.Subscription, v.EventID = strings.TrimSpace(q.Get("subscription")), strings.TrimSpace(q.Get("event_id"))
		if v.Subscription == "" {
			v.Subscription = strings.TrimSpace(q.Get("subscription_id"))
		}
	}
	if v.State == "" {
		v.State = "all"
	}
	v.Active = v.EventType != "" || v.Range != "" || v.Since != "" || v.Until != "" || v.Subscription != "" || v.EventID != "" || v.Status != ""
	v.Ranges = []templates.Option{{Value: "", Label: "Any time", Selected: v.Range == ""}}
	var since *time.Time
	known := v.Range == ""
	for _, p := range rangePresets {
		sel := p.value == v.Range
		v.Ranges = append(v.Ranges, templates.Option{Value: p.value, Label: p.label, Selected: sel})
		if sel {
			t := now.Add(-p.d)
			since, known = &t, true
		}
	}
	if !slices.Contains(stateValues, v.State) {
		return f, v, fault.Invalid("state %q is not one of %s", v.State, strings.Join(stateValues, ", "))
	}
	if v.State != "all" {
		f.States = []string{v.State}
	}
	if !known {
		return f, v, fault.Invalid("time range %q is not one of 1h, 24h, 7d", v.Range)
	}
	if typ, prefix := strings.CutSuffix(v.EventType, "*"); prefix || strings.HasSuffix(typ, ".") {
		if !eventtype.Valid(typ) {
			return f, v, fault.Invalid("event type prefix %q is not the start of a valid event type", v.EventType)
		}
		f.EventTypePrefix = typ
	} else if v.EventType != "" {
		if !eventtype.Valid(v.EventType) {
			return f, v, fault.Invalid("event type %q is not a valid event type", v.EventType)
		}
		f.EventType = v.EventType
	}
	if _, _, err := deliveries.ParseStatus(v.Status); err != nil {
		return f, v, err
	}
	f.Status = v.Status
	var err error
	if f.Since, err = parseFormTime("From", v.Since); err != nil {
		return f, v, err
	}
	if f.Until, err = parseFormTime("Until", v.Until); err != nil {
		return f, v, err
	}
	// A preset and a From time both hold: the later one wins.
	if since != nil && (f.Since == nil || since.After(*f.Since)) {
		f.Since = since
	}
	if v.Subscription != "" {
		id, err := uuid.Parse(v.Subscription)
		if err != nil {
			return f, v, fault.Invalid("subscription %q is not a subscription id", v.Subscription)
		}
		f.SubscriptionID = &id
	}
	if v.EventID != "" {
		id, err := uuid.Parse(v.EventID)
		if err != nil {
			return f, v, fault.Invalid("event %q is not an event id", v.EventID)
		}
		f.EventID = &id
	}
	return f, v, nil
}

// deliveryList builds a list of deliveries for a page: the filter form with its choices, the state tabs
// with capped counts, one page of rows and the pager. A bad filter is not an error of the page: the list
// says what is wrong (status 400) and shows no rows, without also saying that nothing matches.
// On a subscription's page (sc.sub set) it also returns the subscription's deliveries by state now
// (its health card's counts and its paused note's "N waiting"): read in the same snapshot as the rows and
// the tabs, so that every number on the page is of one moment.
func (h *Handler) deliveryList(ctx context.Context, q url.Values, sc listScope) (templates.DeliveryList, int, deliveries.StateCounts, error) {
	var states deliveries.StateCounts
	l := templates.DeliveryList{Action: sc.base, AllSubscriptions: sc.sub == nil}
	f, fv, ferr := parseListFilter(q, sc.sub == nil, h.now())
	var subID *uuid.UUID
	if sc.sub != nil {
		subID = &sc.sub.ID
		f.SubscriptionID = subID
	}
	// Choices first: the form shows them even when the filter is wrong.
	types, err := h.dels.EventTypes(ctx, sc.tenantID, subID, typesUpTo)
	if err != nil {
		return l, 0, states, err
	}
	if sc.sub != nil {
		types = append(types, sc.sub.EventTypes...)
	} else {
		for _, s := range sc.subs {
			types = append(types, s.EventTypes...)
		}
	}
	fv.EventTypes = eventTypeOptions(types, fv.EventType)
	if sc.sub == nil {
		fv.Subscriptions = subscriptionOptions(sc.subs, fv.Subscription)
	}
	l.Filter = fv
	l.Tabs = tabs(sc.base, q, fv.State)
	if ferr == nil && sc.sub == nil && f.SubscriptionID != nil {
		// Another tenant's or an unknown subscription would list nothing, which reads as "no deliveries".
		if _, ok := sc.subs[*f.SubscriptionID]; !ok {
			known, err := h.subs.Known(ctx, sc.tenantID, *f.SubscriptionID)
			if err != nil {
				return l, 0, states, err
			}
			if !known {
				ferr = fault.New(fault.NotFound, "No such subscription: %s is not one of your subscriptions", f.SubscriptionID)
			}
		}
	}
	// The page, each tab's capped count and the subscription's counts by state, in one snapshot: one by one,
	// a delivery that moved in between was counted by one number and not by the next ("10 matching" above
	// 9 rows). One transaction runs its statements one after another; each count stops at tabCountUpTo.
	var (
		page    deliveries.Page
		listErr error
		counts  = make([]deliveries.Capped, len(l.Tabs))
	)
	err = h.dels.Read(ctx, func(v *deliveries.View) error {
		if sc.sub != nil {
			by, err := v.StateCounts(ctx, sc.tenantID, []uuid.UUID{sc.sub.ID}, tabCountUpTo)
			if err != nil {
				return err
			}
			states = by[sc.sub.ID]
		}
		if ferr != nil {
			return nil
		}
		if page, listErr = v.List(ctx, sc.tenantID, f); listErr != nil {
			if fe := fault.As(listErr); fe != nil {
				return nil // the filter's fault, shown on the list
			}
			return listErr
		}
		for i := range l.Tabs {
			tf := f
			tf.States = nil
			if s := l.Tabs[i].State; s != "all" {
				tf.States = []string{s}
			}
			n, atLeast, err := v.Count(ctx, sc.tenantID, tf, tabCountUpTo)
			if err != nil {
				return err
			}
			counts[i] = deliveries.Capped{N: n, AtLeast: atLeast}
		}
		return nil
	})
	if err != nil {
		return l, 0, states, err
	}
	if ferr == nil {
		ferr = listErr
	}
	if ferr != nil {
		l, status, err := h.listError(l, ferr)
		return l, status, states, err
	}
	for i, c := range counts {
		l.Tabs[i].Count = countText(c.N, c.AtLeast)
		if l.Tabs[i].Current {
			l.Total = countText(c.N, c.AtLeast) + " matching deliveries"
			if c.N == 1 && !c.AtLeast {
				l.Total = "1 matching delivery"
			}
		}
	}
	for _, d := range page.Items {
		l.Rows = append(l.Rows, h.listRow(d, sc.subs))
	}
	if page.NextCursor != "" {
		nq := cloneValues(q)
		nq.Set("cursor", page.NextCursor)
		l.NextHref = sc.base + "?" + nq.Encode()
	}
	if q.Get("cursor") != "" {
		l.FirstHref = withQuery(sc.base, without(q, "cursor"))
	}
	return l, http.StatusOK, states, nil
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
	row := h.deliveryRow(d)
	row.EventID, row.EventShort, row.EventHref = d.EventID.String(), shortID(d.EventID), "/events/"+d.EventID.String()
	row.SubName = "deleted subscription"
	if s, ok := subs[d.SubscriptionID]; ok {
		row.SubName, row.SubHref = h.subscriptionView(s).Name(), "/subscriptions/"+d.SubscriptionID.String()
		switch {
		case d.State == delivery.Pending && s.State != subscriptions.Active:
			row.Waiting = s.State + ": waits until resumed"
			row.Next = templates.Time{}
		case d.State == delivery.Pending && s.Circuit.State == delivery.CircuitOpen && d.NextAttemptAt != nil && !d.NextAttemptAt.After(h.now()):
			// Due, but held by the open circuit: not overdue either.
			row.Waiting = "circuit open: waits for the endpoint to recover"
			row.Next = templates.Time{}
		}
	}
	return row
}

// tabs are the state tabs of a list: each keeps the other filters and starts at the newest.
func tabs(base string, q url.Values, current string) []templates.Tab {
	out := slices.Clone(stateTabs)
	if label, ok := stateLabels[current]; ok {
		out = append(out, templates.Tab{State: current, Label: label})
	}
	for i := range out {
		tq := without(q, "cursor", "state")
		if out[i].State != "all" {
			tq.Set("state", out[i].State)
		}
		out[i].Href = withQuery(base, tq)
		out[i].Current = out[i].State == current
	}
	return out
}

// eventTypeOptions are the event-type choices: any, each dotted prefix shared by several types
// ("invoice.*"), each type, and the current value when it is none of those.
func eventTypeOptions(types []string, current string) []templates.Option {
	slices.Sort(types)
	types = slices.Compact(types)
	perPrefix := map[string]int{}
	for _, t := range types {
		if i := strings.Index(t, "."); i > 0 {
			perPrefix[t[:i+1]]++
		}
	}
	out := []templates.Option{{Value: "", Label: "Any type"}}
	for _, p := range slices.Sorted(maps.Keys(perPrefix)) {
		if perPrefix[p] > 1 {
			out = append(out, templates.Option{Value: p + "*", Label: p + "* (every " + p + " type)"})
		}
	}
	for _, t := range types {
		out = append(out, templates.Option{Value: t, Label: t})
	}
	found := false
	for i := range out {
		if out[i].Value == current || (current != "" && strings.TrimSuffix(out[i].Value, "*") == strings.TrimSuffix(current, "*") && strings.HasSuffix(out[i].Value, "*")) {
			out[i].Selected, found = true, true
			break
		}
	}
	if !found {
		out = append(out, templates.Option{Value: current, Label: current, Selected: true})
	}
	return out
}

func subscriptionOptions(subs map[uuid.UUID]subscriptions.Subscription, current string) []templates.Option {
	list := make([]subscriptions.Subscription, 0, len(subs))
	for _, s := range subs {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b subscriptions.Subscription) int { return a.CreatedAt.Compare(b.CreatedAt) })
	out := []templates.Option{{Value: "", Label: "Every subscription", Selected: current == ""}}
	found := current == ""
	for _, s := range list {
		name := s.URL
		if s.Description != "" {
			name = s.Description + " (" + s.URL + ")"
		}
		sel := s.ID.String() == current
		found = found || sel
		out = append(out, templates.Option{Value: s.ID.String(), Label: name, Selected: sel})
	}
	if !found {
		out = append(out, templates.Option{Value: current, Label: current, Selected: true})
	}
	return out
}

// countText writes a capped count: "12", "1,000+".
func countText(n int64, atLeast bool) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if atLeast {
		s += "+"
	}
	return s
}

func without(q url.Values, keys ...string) url.Values {
	out := cloneValues(q)
	for _, k := range keys {
		out.Del(k)
	}
	return out
}

func withQuery(base string, q url.Values) string {
	if len(q) == 0 {
		return base
	}
	return base + "?" + q.Encode()
}

// tenantSubscriptions are the tenant's subscriptions by id.
func (h *Handler) tenantSubscriptions(ctx context.Context, tenantID uuid.UUID) (map[uuid.UUID]subscriptions.Subscription, error) {
	list, err := h.subs.List(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]subscriptions.Subscription, len(list))
	for _, s := range list {
		out[s.ID] = s
	}
	return out, nil
}

// deliveriesPage is /deliveries: the tenant's deliveries across its subscriptions, with the same filters
// as a subscription's page plus the subscription and the event.
func (h *Handler) deliveriesPage(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := tenantOf(currentUser(r))
	if !ok {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	subs, err := h.tenantSubscriptions(ctx, tenantID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l, status, _, err := h.deliveryList(ctx, r.URL.Query(), listScope{tenantID: tenantID, base: "/deliveries", subs: subs})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := templates.DeliveriesPage{Layout: h.layout(r, "Deliveries", templates.Crumb{Label: "Deliveries"}), List: l}
	h.render(w, r, status, templates.DeliveriesView(p))
}
