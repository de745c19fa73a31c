package params

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/fault"
)

// ListStates are the state values a dashboard list accepts (one tab at a time): the API's states, and all.
var ListStates = []string{"all", "pending", "retrying", "in_flight", "delivered", "dead", "failed", "expired"}

// Preset is one of the dashboard's time presets: the list starts Duration before now.
type Preset struct {
	Value, Label string
	Duration     time.Duration
}

// Presets are the dashboard's time presets, in the order its filter offers them.
var Presets = []Preset{{"1h", "Last hour", time.Hour}, {"24h", "Last 24 hours", 24 * time.Hour}, {"7d", "Last 7 days", 7 * 24 * time.Hour}}

// ListOptions say how a deliveries list's query is read.
type ListOptions struct {
	Dialect Dialect
	// Across is a list of every subscription of the tenant, where the query may name a subscription and an
	// event (the API's list and the dashboard's Deliveries page; not a subscription's own page).
	Across bool
	// Now is when the dashboard's time presets count back from (Form).
	Now time.Time
	// PageSize is the dashboard's page size (Form); the API reads limit.
	PageSize int
}

// ListValues are a deliveries list's filters as the query wrote them (trimmed where the dashboard trims):
// a page shows them in its form again, next to the message when one is wrong.
type ListValues struct {
	// State is the dashboard's tab, "all" when the query names none (the API's comma list as sent).
	State        string
	EventType    string
	Status       string
	Since, Until string
	// Range is the dashboard's time preset (Form).
	Range string
	// Subscription and EventID are read only by a list Across subscriptions. The dashboard takes
	// subscription, or subscription_id as the API names it, so a link written for the API filters there too.
	Subscription, EventID string
}

// Active reports whether any filter is set (the state tab aside).
func (v ListValues) Active() bool {
	return v.EventType != "" || v.Range != "" || v.Since != "" || v.Until != "" || v.Subscription != "" ||
		v.EventID != "" || v.Status != ""
}

// listParams are the API's list parameters; any other is refused.
var listParams = []string{"subscription_id", "event_id", "state", "event_type", "status", "since", "until", "limit", "cursor", "include_totals"}

// Deliveries reads a deliveries list's query into a filter. The values are filled even when one is wrong.
// Each dialect checks its parameters in the order it always has, so a query with two wrong values is
// answered with the same one of them as before.
func Deliveries(q url.Values, o ListOptions) (deliveries.Filter, ListValues, error) {
	l := deliveriesList{q: q, o: o, f: deliveries.Filter{Cursor: q.Get("cursor")}}
	l.values()
	steps := []func() error{l.known, l.subscription, l.event, l.state, l.eventType, l.status, l.since, l.until, l.limit, l.totals}
	if o.Dialect == Form {
		steps = []func() error{l.state, l.preset, l.eventType, l.status, l.since, l.until, l.subscription, l.event}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return l.f, l.v, err
		}
	}
	return l.f, l.v, nil
}

// deliveriesList is one reading of a list's query: its steps fill f from v.
type deliveriesList struct {
	q url.Values
	o ListOptions
	f deliveries.Filter
	v ListValues
	// presetSince is where the dashboard's time preset starts the list (nil: none).
	presetSince *time.Time
}

func (l *deliveriesList) values() {
	q := l.q
	if l.o.Dialect == API {
		l.v = ListValues{State: q.Get("state"), EventType: q.Get("event_type"), Status: q.Get("status"),
			Since: q.Get("since"), Until: q.Get("until"), Subscription: q.Get("subscription_id"), EventID: q.Get("event_id")}
		return
	}
	l.f.Limit = l.o.PageSize
	l.v = ListValues{State: q.Get("state"), EventType: strings.TrimSpace(q.Get("event_type")), Range: q.Get("range"),
		Since: q.Get("since"), Until: q.Get("until"), Status: strings.TrimSpace(q.Get("status"))}
	if l.o.Across {
		l.v.Subscription, l.v.EventID = strings.TrimSpace(q.Get("subscription")), strings.TrimSpace(q.Get("event_id"))
		if l.v.Subscription == "" {
			l.v.Subscription = strings.TrimSpace(q.Get("subscription_id"))
		}
	}
	if l.v.State == "" {
		l.v.State = "all"
	}
}

func (l *deliveriesList) known() error { return l.o.Dialect.Known(l.q, listParams...) }

func (l *deliveriesList) subscription() error {
	name := "subscription_id"
	if l.o.Dialect == Form {
		name = "subscription"
	}
	var err error
	l.f.SubscriptionID, err = l.o.Dialect.ID(name, l.v.Subscription)
	return err
}

func (l *deliveriesList) event() error {
	name := "event_id"
	if l.o.Dialect == Form {
		name = "event"
	}
	var err error
	l.f.EventID, err = l.o.Dialect.ID(name, l.v.EventID)
	return err
}

// state is the API's comma list, checked by the service (deliveries.ParseStates), or the dashboard's tab.
func (l *deliveriesList) state() error {
	if l.o.Dialect == API {
		if l.v.State != "" {
			l.f.States = strings.Split(l.v.State, ",")
		}
		return nil
	}
	if !contains(ListStates, l.v.State) {
		return fault.Invalid("state %q is not one of %s", l.v.State, strings.Join(ListStates, ", "))
	}
	if l.v.State != "all" {
		l.f.States = []string{l.v.State}
	}
	return nil
}

// preset is the dashboard's time preset: the list starts that long before now.
func (l *deliveriesList) preset() error {
	if l.v.Range == "" {
		return nil
	}
	for _, p := range Presets {
		if p.Value == l.v.Range {
			t := l.o.Now.Add(-p.Duration)
			l.presetSince = &t
			return nil
		}
	}
	return fault.Invalid("time range %q is not one of 1h, 24h, 7d", l.v.Range)
}

func (l *deliveriesList) eventType() error {
	var err error
	l.f.EventType, l.f.EventTypePrefix, err = l.o.Dialect.EventType("event_type", l.v.EventType)
	return err
}

func (l *deliveriesList) status() error {
	var err error
	l.f.Status, err = Status(l.v.Status)
	return err
}

func (l *deliveriesList) since() error {
	name := "since"
	if l.o.Dialect == Form {
		name = "From"
	}
	var err error
	if l.f.Since, err = l.o.Dialect.Time(name, l.v.Since); err != nil {
		return err
	}
	// A preset and a From time both hold: the later one wins.
	if p := l.presetSince; p != nil && (l.f.Since == nil || p.After(*l.f.Since)) {
		l.f.Since = p
	}
	return nil
}

func (l *deliveriesList) until() error {
	name := "until"
	if l.o.Dialect == Form {
		name = "Until"
	}
	var err error
	l.f.Until, err = l.o.Dialect.Time(name, l.v.Until)
	return err
}

func (l *deliveriesList) limit() error {
	var err error
	l.f.Limit, err = API.Limit(l.q.Get("limit"), 0)
	return err
}

// totals is the API's include_totals: any deliveries:read token may ask, so the count is capped
// (deliveries.TotalUpTo), never unbounded.
func (l *deliveriesList) totals() error {
	v := l.q.Get("include_totals")
	if v == "" {
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fault.Invalid("include_totals must be true or false")
	}
	l.f.WithTotal = b
	l.f.CountUpTo = deliveries.TotalUpTo
	return nil
}
