package api_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/tenants"
)

// Fuzz targets of the deliveries list's query (params.Deliveries, ParseStates, the cursor, and the SQL behind
// them), through the handler of a running server: never a 500, an error in the contract's shape, a page no
// longer than asked and holding only the caller's deliveries. `make fuzz` runs each for a while; a plain
// `go test` runs the seeds.

// listFuzz is one server with a tenant A (the caller: three deliveries, so pages and cursors exist) and a
// tenant B whose deliveries must never show up.
type listFuzz struct {
	e              *env
	tenant, token  string
	subs           []string
	foreign        []string // B's delivery and subscription ids
	cursor, second string   // a real next_cursor of A's, and of B's
}

func newListFuzz(f *testing.F) *listFuzz {
	e := newEnv(f, httpOnly)
	lf := &listFuzz{e: e}
	lf.tenant = e.newTenant("fuzz-list")
	other := e.newTenant("fuzz-list-other")
	// Deliveries wait on a paused subscription: nothing is sent, the rows stay as they are.
	for _, tn := range []string{lf.tenant, other} {
		s := e.newSubscription(tn, map[string]any{"url": "http://127.0.0.1:9/fuzz", "event_types": []string{"fuzz.list"}})
		must[subscription](e, 200, "POST", "/tenants/"+tn+"/subscriptions/"+s.ID+"/pause", adminToken, nil)
		for range 3 {
			p := e.publish(tn, "fuzz.list", map[string]any{"n": 1})
			if tn == other {
				lf.foreign = append(lf.foreign, p.Deliveries[0].ID)
			}
		}
		if tn == other {
			lf.foreign = append(lf.foreign, s.ID)
		} else {
			lf.subs = append(lf.subs, s.ID)
		}
	}
	lf.token = e.newToken(lf.tenant, tenants.ScopeDeliveriesRead)
	lf.cursor = must[page](e, 200, "GET", "/tenants/"+lf.tenant+"/deliveries?limit=1", lf.token, nil).NextCursor
	lf.second = must[page](e, 200, "GET", "/tenants/"+other+"/deliveries?limit=1", adminToken, nil).NextCursor
	if lf.cursor == "" || lf.second == "" {
		f.Fatal("no next_cursor with limit=1 and three deliveries")
	}
	return lf
}

// check lists A's deliveries with the raw query q and judges the answer.
func (lf *listFuzz) check(t *testing.T, q string) {
	e := &env{t: t, srv: lf.e.srv, base: lf.e.base, client: lf.e.client}
	r := e.call("GET", "/tenants/"+lf.tenant+"/deliveries?"+q, lf.token, nil)
	switch {
	case r.status >= 500:
		t.Fatalf("query %q: %s", q, r)
	case r.status >= 400:
		if err := checkErrorShape(r); err != nil {
			t.Fatalf("query %q: %v: %s", q, err, r)
		}
		return
	case r.status != 200:
		t.Fatalf("query %q: %s", q, r)
	}
	var p page
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("query %q: %v: %s", q, err, r)
	}
	if len(p.Items) > 100 {
		t.Fatalf("query %q: %d items", q, len(p.Items))
	}
	for _, d := range p.Items {
		if !slices.Contains(lf.subs, d.SubscriptionID) {
			t.Fatalf("query %q: delivery %s of subscription %s is not the caller's", q, d.ID, d.SubscriptionID)
		}
	}
	for _, id := range lf.foreign {
		if strings.Contains(string(r.body), id) {
			t.Fatalf("query %q: the answer holds another tenant's %s", q, id)
		}
	}
}

// queryText makes s sendable as a raw query: bytes a URL cannot carry are percent-encoded, the rest is kept
// as it is (malformed escapes and all).
func queryText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '#' || c >= 0x80 {
			b.WriteString(url.QueryEscape(string([]byte{c})))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// FuzzListDeliveriesQuery sends arbitrary raw query strings to GET /tenants/{t}/deliveries.
func FuzzListDeliveriesQuery(f *testing.F) {
	lf := newListFuzz(f)
	for _, q := range malformedQueries {
		f.Add(q)
	}
	for _, q := range []string{"", "limit=1&cursor=" + lf.cursor, "cursor=" + lf.second, "state=dead,retrying&include_totals=true",
		"subscription_id=" + lf.subs[0] + "&state=pending&limit=2", "subscription_id=" + lf.foreign[len(lf.foreign)-1],
		"since=2026-01-01T00:00:00Z&until=2099-01-01T00:00:00.5%2B01:00&event_type=fuzz.list", "state=retrying", "limit=100&state=in_flight"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) { lf.check(t, queryText(q)) })
}

// FuzzListDeliveriesFilter sends arbitrary values of each list parameter (properly encoded), so the
// fuzzer explores the values rather than the query syntax.
func FuzzListDeliveriesFilter(f *testing.F) {
	lf := newListFuzz(f)
	f.Add("", "", "", "", "", "", "", "")
	f.Add("dead", "fuzz.list", "2026-01-01T00:00:00Z", "2099-12-31T23:59:59.999999999Z", "1", lf.cursor, lf.subs[0], "true")
	f.Add("retrying,pending", "a", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "100", lf.second, lf.foreign[len(lf.foreign)-1], "1")
	f.Add(",,dead,,", "x:y/z", "2026-01-01T00:00:00+23:59", "2026-01-01T00:00:00-23:59", "0", "e30", "00000000-0000-0000-0000-000000000000", "f")
	f.Add("\x00", "\xff", "\x00", "x", "-1", "%", "{"+lf.subs[0]+"}", "maybe")
	f.Fuzz(func(t *testing.T, state, eventType, since, until, limit, cursor, subscriptionID, totals string) {
		v := url.Values{}
		for k, s := range map[string]string{"state": state, "event_type": eventType, "since": since, "until": until,
			"limit": limit, "cursor": cursor, "subscription_id": subscriptionID, "include_totals": totals} {
			if s != "" {
				v.Set(k, s)
			}
		}
		lf.check(t, v.Encode())
	})
}
