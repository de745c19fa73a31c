package api_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// malformedBodies are request bodies no route should answer with a 500.
var malformedBodies = []string{
	``, ` `, `{`, `}`, `[]`, `[{}]`, `null`, `true`, `0`, `-1`, `1e999`, `"x"`, `{}`, `{}{}`, `{} x`, `{"a":}`,
	`{"a" 1}`, `{'a':1}`, `{"a":1,}`, `{"":""}`, "\x00", "{\"name\":\"a\x00b\"}", `{"name":"a\u0000b"}`,
	"\xff\xfe{}", "{\"name\":\"\xff\"}", `{"name":"\ud800"}`, `{"name":"` + strings.Repeat("x", 5000) + `"}`,
	`{"name":{"a":1}}`, `{"name":[1,2]}`, `{"name":1e400}`, `{"name":null}`, `{"name":true}`,
	`{"scopes":null,"name":"x"}`, `{"scopes":[null],"name":"x"}`, `{"scopes":[1],"name":"x"}`,
	`{"email":"a\u0000@example.com","password":"0123456789a"}`, `{"email":"a@example.com","password":"0123456789\u0000"}`,
	`{"email":"\u00e9@example.com","password":"0123456789a"}`, `{"email":"` + strings.Repeat("a", 300) + `@example.com","password":"0123456789a"}`,
	`{"url":null}`, `{"url":""}`, `{"url":"http://"}`, `{"url":"http://[::1"}`, `{"url":"http://%zz"}`,
	// Accepted subscriptions point at 127.0.0.1:9, which refuses at once: an unreachable host would make
	// every worker slot of the package's servers wait out the attempt timeout and stall later tests.
	`{"url":"http://a\u0000b/"}`, `{"url":"http://127.0.0.1:9/\u0000"}`, `{"url":"http://127.0.0.1:9/` + "\xff" + `"}`,
	`{"url":"http://127.0.0.1:9/","event_types":null}`, `{"url":"http://127.0.0.1:9/","event_types":[null]}`,
	`{"url":"http://127.0.0.1:9/","event_types":[""]}`, `{"url":"http://127.0.0.1:9/","event_types":[` + strings.Repeat(`"a",`, 150) + `"a"]}`,
	`{"url":"http://127.0.0.1:9/","headers":null}`, `{"url":"http://127.0.0.1:9/","headers":[]}`,
	`{"url":"http://127.0.0.1:9/","headers":{"":"x"}}`, `{"url":"http://127.0.0.1:9/","headers":{"X-A":"\u0000"}}`,
	`{"url":"http://127.0.0.1:9/","headers":{"X-\u00e9":"x"}}`, `{"url":"http://127.0.0.1:9/","headers":{"X-A":"` + strings.Repeat("v", 2000) + `"}}`,
	`{"url":"http://127.0.0.1:9/","description":"a\u0000b"}`, `{"url":"http://127.0.0.1:9/","description":null}`,
	`{"url":"http://127.0.0.1:9/","rate_limit_per_second":{}}`, `{"url":"http://127.0.0.1:9/","rate_limit_per_second":[]}`,
	`{"url":"http://127.0.0.1:9/","rate_limit_per_second":1e3}`, `{"url":"http://127.0.0.1:9/","rate_limit_per_second":2147483648}`,
	`{"url":"http://127.0.0.1:9/","rate_limit_per_second":-0}`, `{"url":"http://127.0.0.1:9/","rate_limit_per_second":true}`,
	`{"event_type":"a","payload":{"k":"\u0000"}}`, `{"event_type":"a","payload":{"k":"` + "\xff" + `"}}`,
	`{"event_type":"a","payload":{"k":"\ud800"}}`, `{"event_type":"a\u0000","payload":{}}`, `{"event_type":"a","payload":{}` + strings.Repeat(" ", 100) + `}`,
	`{"event_type":"a","payload":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`,
	`{"event_type":"a","payload":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}`,
	`{"event_type":null,"payload":{}}`, `{"event_type":"a","payload":{"a":1,"a":2}}`, `{"event_type":"a","payload":{},"event_type":"b"}`,
	`{"payload":{}}`, `{"event_type":"a","payload":{"big":` + strings.Repeat("9", 400) + `}}`,
	// Replays and recovers: malformed fields only (and one harmless dry run), so the sweep replays nothing.
	`{"created_from":"2026-01-01T00:00:00Z","created_to":"2026-13-01T00:00:00Z"}`, `{"created_from":"\u0000","created_to":"x"}`,
	`{"created_from":"0001-01-01T00:00:00Z","created_to":"9999-12-31T23:59:59.999999999Z","dry_run":true}`,
	`{"created_from":"0000-01-01T00:00:00+23:59","created_to":"9999-12-31T23:59:59-23:59","dry_run":true}`,
	`{"created_from":"2026-01-01T00:00:00Z","created_to":"2026-01-02T00:00:00Z","tenant_id":"00000000-0000-0000-0000-000000000000"}`,
	`{"created_from":"2026-01-01T00:00:00Z","created_to":"2026-01-02T00:00:00Z","tenant_id":"\u0000"}`,
	`{"created_from":"2026-01-01T00:00:00Z","created_to":"2026-01-02T00:00:00Z","states":["\u0000"]}`,
	`{"created_from":"2026-01-01T00:00:00Z","created_to":"2026-01-02T00:00:00Z","event_type":"\u0000","dead_reason":"\u0000"}`,
	`{"created_from":"2026-01-01T00:00:00Z","created_to":"2026-01-02T00:00:00Z","spread_seconds":99999999999}`,
	`{"since":"\u0000"}`, `{"since":"0001-01-01T00:00:00Z"}`, `{"since":"9999-12-31T23:59:59Z"}`, `{"since":"2026-01-01T00:00:00+25:00"}`,
}

// malformedQueries are list query strings no route should answer with a 500.
var malformedQueries = []string{
	"limit=", "limit=%00", "limit=1e2", "limit=0x10", "limit=+5", "limit=%205", "limit=5&limit=abc", "cursor=", "cursor=%ff%fe",
	"cursor=eyJ0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJpIjoiMDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwIn0",
	"cursor=eyJ0IjoiMDAwMS0wMS0wMVQwMDowMDowMFoiLCJpIjoiMDFhMjA0YTktNWEyNi03NjdmLWFmYzctYjEwNzlmNWE2N2E1In0",
	"cursor=eyJ0Ijo1LCJpIjpbXX0", "cursor=" + strings.Repeat("A", 5000), "state=", "state=,,,", "state=%00", "state=dead,retrying",
	"state=" + strings.Repeat("dead,", 500), "event_type=%00", "event_type=%ff", "event_type=" + strings.Repeat("a", 500),
	"since=0000-01-01T00:00:00Z", "since=9999-12-31T23:59:59Z", "until=0001-01-01T00:00:00Z", "since=2026-01-01T00:00:00%2B25:00",
	"since=2026-02-30T00:00:00Z", "since=%00", "until=2026-01-01T00:00:00.999999999999Z", "subscription_id=%00",
	"subscription_id=" + uuid.NewString(), "subscription_id={" + uuid.NewString() + "}", "event_id=%00", "event_id=" + uuid.NewString(), "include_totals=1", "include_totals=TRUE",
	"include_totals=%00", "status=%00", "status=%ff", "status=4%00x", "status=" + strings.Repeat("5", 500), "%zz=1", "=1", "&&&", "a[b]=1", "limit=1;DROP%20TABLE%20x", strings.Repeat("x=1&", 200),
}

// malformedHeaders are extra request headers (name, value) that must not cause a 500.
var malformedHeaders = [][2]string{
	{"Idempotency-Key", ""}, {"Idempotency-Key", " "}, {"Idempotency-Key", "\xff\xfe"}, {"Idempotency-Key", "é"},
	{"Idempotency-Key", strings.Repeat("k", 5000)}, {"X-Correlation-ID", strings.Repeat("c", 500)},
	{"X-Correlation-ID", "\xff"}, {"Content-Type", "text/plain"}, {"Content-Type", "application/json; charset=latin1"},
	{"Content-Encoding", "gzip"}, {"Authorization", "Bearer " + adminToken + " extra"},
}

// TestNoServerErrorOnMalformedInput sends many malformed bodies, query strings, headers and ids to every
// route and requires an answer below 500, in the contract's error shape when it is an error.
func TestNoServerErrorOnMalformedInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	routes, idRoutes := malformedRoutes(t, f)
	reqs := malformedRequests(routes, idRoutes, f)
	var fails sync.Map
	check := func(rq malformedRequest) {
		r := e.call(rq.method, rq.path, rq.token, rq.body, rq.hdr...)
		key := rq.method + " " + truncate(rq.path, 120) + " " + truncate(strings.ToValidUTF8(toString(rq.body), "?"), 120) + " " + strings.Join(rq.hdr, ":")
		switch {
		case r.status >= 500:
			fails.Store(key, r.String())
		case r.status >= 400:
			if err := checkErrorShape(r); err != nil {
				fails.Store(key, err.Error()+": "+r.String())
			}
		}
		if r.header.Get("X-Correlation-ID") == "" {
			fails.Store(key, "no X-Correlation-ID")
		}
	}
	// Don't let the sweep delete the fixture's objects midway: run the destructive calls last.
	work := make(chan malformedRequest)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for rq := range work {
				check(rq)
			}
		})
	}
	for _, rq := range reqs {
		if rq.method != "DELETE" {
			work <- rq
		}
	}
	close(work)
	wg.Wait()
	for _, rq := range reqs {
		if rq.method == "DELETE" {
			check(rq)
		}
	}
	n := 0
	fails.Range(func(k, v any) bool {
		n++
		if n <= 40 {
			t.Errorf("%s: %s", k, v)
		}
		return true
	})
	if n > 40 {
		t.Errorf("... and %d more", n-40)
	}
	t.Logf("%d requests", len(reqs))
}

type malformedRoute struct{ method, path string }

// malformedRoutes are every documented route with the fixture's ids, then (from idRoutes on) routes with
// malformed ids in every position.
func malformedRoutes(t *testing.T, f fixture) (routes []malformedRoute, idRoutes int) {
	for name := range loadSpec(t).operations(t) {
		method, path, _ := strings.Cut(name, " ")
		path, ok := strings.CutPrefix(path, "/api/v1")
		if !ok {
			continue
		}
		n := 0
		path = paramRE.ReplaceAllStringFunc(path, func(string) string {
			n++
			switch {
			case n == 1:
				return f.tenant
			case strings.Contains(path, "/deliveries/"):
				return f.dead
			}
			return f.sub
		})
		routes = append(routes, malformedRoute{method, path})
	}
	// Malformed ids in every position (these get one body each, below).
	idRoutes = len(routes)
	for _, id := range []string{"%00", "%ff", "..", "%2e%2e", "a%2Fb", uuid.Nil.String(), strings.Repeat("9", 1000)} {
		routes = append(routes,
			malformedRoute{"GET", "/tenants/" + id},
			malformedRoute{"POST", "/tenants/" + id + "/events"},
			malformedRoute{"GET", "/tenants/" + f.tenant + "/subscriptions/" + id + "/health"},
			malformedRoute{"PATCH", "/tenants/" + f.tenant + "/subscriptions/" + id},
			malformedRoute{"DELETE", "/tenants/" + f.tenant + "/deliveries/" + id},
			malformedRoute{"POST", "/tenants/" + f.tenant + "/deliveries/" + id + "/retry"},
			malformedRoute{"POST", "/tenants/" + f.tenant + "/deliveries/" + id + "/retry-now"},
			malformedRoute{"GET", "/replays/" + id},
			malformedRoute{"GET", "/tenants/" + f.tenant + "/replays/" + id},
			malformedRoute{"POST", "/tenants/" + f.tenant + "/subscriptions/" + id + "/recover"},
		)
	}
	return routes, idRoutes
}

type malformedRequest struct {
	method, path, token string
	body                any
	hdr                 []string
}

// malformedRequests are the sweep's requests: each route with every malformed body and header, as the
// admin and as a tenant token, and every malformed query; a malformed id's route once with {} each way.
func malformedRequests(routes []malformedRoute, idRoutes int, f fixture) []malformedRequest {
	var reqs []malformedRequest
	for i, rt := range routes {
		if i >= idRoutes {
			reqs = append(reqs, malformedRequest{rt.method, rt.path, adminToken, `{}`, nil}, malformedRequest{rt.method, rt.path, f.fullToken, `{}`, nil})
			continue
		}
		for _, tok := range []string{adminToken, f.fullToken} {
			for _, b := range malformedBodies {
				reqs = append(reqs, malformedRequest{rt.method, rt.path, tok, b, nil})
			}
			for _, h := range malformedHeaders {
				reqs = append(reqs, malformedRequest{rt.method, rt.path, tok, `{"event_type":"a","payload":{}}`, []string{h[0], h[1]}})
			}
		}
		for _, q := range malformedQueries {
			reqs = append(reqs, malformedRequest{rt.method, rt.path + "?" + q, adminToken, nil, nil})
		}
	}
	return reqs
}

func toString(b any) string {
	if s, ok := b.(string); ok {
		return s
	}
	return ""
}

// FuzzPublishBody publishes arbitrary bodies: the answer is never a 500, and an error is in the contract's
// shape. `go test -fuzz FuzzPublishBody ./internal/api/` explores; plain `go test` runs the seeds.
func FuzzPublishBody(f *testing.F) {
	for _, s := range []string{
		`{"event_type":"order.created","payload":{"id":1}}`,
		`{"event_type":"a","payload":{"s":"\u0000"}}`,
		`{"event_type":"a","payload":{}}x`,
		`{"event_type":"a\u0000","payload":{}}`,
		"{\"event_type\":\"a\",\"payload\":{\"k\":\"\xff\"}}",
		`{"event_type":"a","payload":[]}`,
		`{"payload":{"a":{"b":{"c":[1,2,{"d":null}]}}},"event_type":"x.y:z/w-v_u"}`,
		``, `{`, `null`,
	} {
		f.Add(s, "")
	}
	f.Add(`{"event_type":"order.created","payload":{"id":1}}`, "key-\xff")
	e := newEnv(f, httpOnly)
	tid := e.newTenant("fuzz")
	e.newSubscription(tid, map[string]any{"url": "http://127.0.0.1:9/fuzz", "event_types": []string{"none"}})
	f.Fuzz(func(t *testing.T, body, key string) {
		e := &env{t: t, srv: e.srv, base: e.base, client: e.client}
		var hdr []string
		// Only keys an HTTP client can send (no control bytes but tab).
		if key != "" && !strings.ContainsFunc(key, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }) {
			hdr = []string{"Idempotency-Key", key}
		}
		r := e.call("POST", "/tenants/"+tid+"/events", adminToken, body, hdr...)
		if r.status >= 500 {
			t.Fatalf("body %q key %q: %s", body, key, r)
		}
		if r.status >= 400 {
			if err := checkErrorShape(r); err != nil {
				t.Fatalf("body %q: %v: %s", body, err, r)
			}
		} else if r.status != 202 {
			t.Fatalf("body %q: %s", body, r)
		}
	})
}
