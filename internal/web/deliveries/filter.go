package deliveries

import (
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

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

// pageSize is how many deliveries a subscription page lists.
const pageSize = 25

// parseListFilter reads a list's query: state tab, event type (exact, or a prefix ending in "." or "*"),
// last status (404, 5xx), time preset, from/until, and on the Deliveries page the subscription and event. The form view is filled
// even when a value is wrong, so the page can show it with the error.
func parseListFilter(q url.Values, all bool, now time.Time) (delivery.Filter, templates.Filter, error) {
	f := delivery.Filter{Limit: pageSize, Cursor: q.Get("cursor")}
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
	if _, _, err := delivery.ParseStatus(v.Status); err != nil {
		return f, v, err
	}
	f.Status = v.Status
	var err error
	if f.Since, err = core.ParseFormTime("From", v.Since); err != nil {
		return f, v, err
	}
	if f.Until, err = core.ParseFormTime("Until", v.Until); err != nil {
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

func without(q url.Values, keys ...string) url.Values {
	out := core.CloneValues(q)
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
