package deliveries

import (
	"cmp"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// stateTabs are the tabs every list shows; another state, when chosen by URL, gets a tab of its own.
var stateTabs = []templates.Tab{
	{State: "all", Label: "All"}, {State: "delivered", Label: "Delivered"}, {State: "retrying", Label: "Retrying"},
	{State: "pending", Label: "Pending"}, {State: "dead", Label: "Dead"},
}

var stateLabels = map[string]string{"in_flight": "In flight", "failed": "Failed", "expired": "Expired"}

// pageSize is how many deliveries a subscription page lists.
const pageSize = 25

// parseListFilter reads a list's query (params.Deliveries in the dashboard's dialect): state tab, event
// type (exact, or a prefix ending in "." or "*"), last status (404, 5xx), time preset, from/until, and on
// the Deliveries page the subscription and event. The form view is filled even when a value is wrong, so the
// page can show it with the error.
func parseListFilter(q url.Values, all bool, now time.Time) (deliveries.Filter, templates.Filter, error) {
	f, lv, err := params.Deliveries(q, params.ListOptions{Dialect: params.Form, Across: all, Now: now, PageSize: pageSize})
	v := templates.Filter{State: lv.State, EventType: lv.EventType, Range: lv.Range, Since: lv.Since, Until: lv.Until,
		Status: lv.Status, Subscription: lv.Subscription, EventID: lv.EventID, Active: lv.Active()}
	v.Ranges = []templates.Option{{Value: "", Label: "Any time", Selected: v.Range == ""}}
	for _, p := range params.Presets {
		v.Ranges = append(v.Ranges, templates.Option{Value: p.Value, Label: p.Label, Selected: p.Value == v.Range})
	}
	return f, v, err
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
		switch {
		case s.Type == subscriptions.Polling:
			name = cmp.Or(s.Description, templates.PollingName) + " (polling)"
		case s.Description != "":
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
