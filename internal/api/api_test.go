package api_test

import (
	"encoding/json"
	"fmt"

	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/tenants"
)

// fixture is a tenant with a subscription, a delivered and a dead delivery, plus a second tenant with
// its own objects, for the error tests.
type fixture struct {
	tenant, other        string
	sub, otherSub        string
	delivered, dead      string
	otherDelivery        string
	fullToken, otherFull string
}

func newFixture(e *env) fixture {
	e.t.Helper()
	rc := newReceiver(e.t, func(p string, _ int) int {
		if p == "/bad" {
			return 400
		}
		return 200
	})
	f := fixture{tenant: e.newTenant("fixture"), other: e.newTenant("fixture-other")}
	f.sub = e.newSubscription(f.tenant, map[string]any{"url": rc.URL + "/ok", "event_types": []string{"ok.event"}}).ID
	e.newSubscription(f.tenant, map[string]any{"url": rc.URL + "/bad", "event_types": []string{"bad.event"}})
	f.otherSub = e.newSubscription(f.other, map[string]any{"url": rc.URL + "/ok"}).ID
	f.delivered = e.publish(f.tenant, "ok.event", map[string]any{"n": 1}).Deliveries[0].ID
	f.dead = e.publish(f.tenant, "bad.event", map[string]any{"n": 2}).Deliveries[0].ID
	f.otherDelivery = e.publish(f.other, "ok.event", map[string]any{"n": 3}).Deliveries[0].ID
	e.waitState(f.tenant, f.delivered, "delivered")
	e.waitState(f.tenant, f.dead, "failed")
	e.waitState(f.other, f.otherDelivery, "delivered")
	f.fullToken = e.newToken(f.tenant, tenants.AllScopes...)
	f.otherFull = e.newToken(f.other, tenants.AllScopes...)
	return f
}

func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	paths := []struct{ method, path string }{
		{"GET", "/tenants"}, {"POST", "/tenants"}, {"GET", "/tenants/" + f.tenant + "/deliveries"},
		{"POST", "/tenants/" + f.tenant + "/events"}, {"GET", "/tenants/" + f.tenant + "/subscriptions/" + f.sub},
		{"GET", "/no/such/route"},
	}
	for _, p := range paths {
		for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer    ", "Basic YTpi", "Bearer wrong-token",
			"Bearer hl_" + strings.Repeat("A", 43), "Token " + adminToken, "Bearer " + adminToken + "x"} {
			var r reply
			if auth == "" {
				r = e.call(p.method, p.path, "", nil)
			} else {
				r = e.call(p.method, p.path, "", nil, "Authorization", auth)
			}
			wantError(t, fmt.Sprintf("%s %s with %q", p.method, p.path, auth), r, "UNAUTHENTICATED")
			if r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: 401 without WWW-Authenticate", p.method, p.path)
			}
		}
	}
	// The scheme name is case-insensitive (RFC 7235); the admin token works as "bearer" too.
	for _, scheme := range []string{"bearer", "BEARER", "bEaReR"} {
		if r := e.call("GET", "/tenants", "", nil, "Authorization", scheme+" "+adminToken); r.status != 200 {
			t.Errorf("scheme %q: %s", scheme, r)
		}
	}
}

// TestForbidden: tenant tokens on admin-only calls, and tenant tokens without the scope a call needs.
func TestForbidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	tok := f.fullToken // every tenant scope, still not admin
	for _, c := range []struct{ method, path string }{
		{"GET", "/tenants"}, {"POST", "/tenants"}, {"GET", "/tenants/" + f.tenant},
		{"POST", "/tenants/" + f.tenant + "/tokens"}, {"POST", "/tenants/" + f.tenant + "/users"},
	} {
		wantError(t, "tenant token on admin call "+c.method+" "+c.path, e.call(c.method, c.path, tok, map[string]any{"name": "x"}), "FORBIDDEN")
	}
	// On another tenant's admin paths it is NOT_FOUND: a token cannot learn that other tenants exist.
	for _, c := range []struct{ method, path string }{
		{"GET", "/tenants/" + f.other}, {"POST", "/tenants/" + f.other + "/tokens"},
	} {
		wantError(t, "tenant token on other tenant "+c.path, e.call(c.method, c.path, tok, map[string]any{"name": "x"}), "NOT_FOUND")
	}
}

// TestScopesEnforced checks each documented operation's scope (api/openapi.yaml) against the server: a
// tenant token with every scope but that one is FORBIDDEN, a token with only that one gets past
// authorization (admin-only operations refuse every tenant token).
func TestScopesEnforced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	tokens := map[string]string{} // scope -> token with only it; "!"+scope -> every other scope
	for _, s := range tenants.AllScopes {
		tokens[s] = e.newToken(f.tenant, s)
		var rest []string
		for _, o := range tenants.AllScopes {
			if o != s {
				rest = append(rest, o)
			}
		}
		tokens["!"+s] = e.newToken(f.tenant, rest...)
	}
	ids := map[string]string{"tenant": f.tenant, "subscription": f.sub, "delivery": f.dead}
	for name, op := range loadSpec(t).operations(t) {
		method, path, _ := strings.Cut(name, " ")
		path, ok := strings.CutPrefix(path, "/api/v1")
		if !ok {
			continue
		}
		// Fill the path ids in order: tenant, then subscription or delivery.
		n := 0
		path = paramRE.ReplaceAllStringFunc(path, func(string) string {
			n++
			if n == 1 {
				return ids["tenant"]
			}
			if strings.Contains(path, "/deliveries/") {
				return ids["delivery"]
			}
			return ids["subscription"]
		})
		if op.Scope == "admin" {
			wantError(t, name+" with a full tenant token", e.call(method, path, f.fullToken, "{}"), "FORBIDDEN")
			continue
		}
		if op.Scope == "any" {
			// Any valid token, whatever its scopes (the event catalogue's reads).
			for _, s := range tenants.AllScopes {
				if r := e.call(method, path, tokens[s], nil); r.status == 401 || r.status == 403 || r.status >= 500 {
					t.Errorf("%s with only %s: %s", name, s, r)
				}
			}
			continue
		}
		wantError(t, name+" without "+op.Scope, e.call(method, path, tokens["!"+op.Scope], "{}"), "FORBIDDEN")
		// With only the scope, the call passes authorization. Send a body that fails validation where
		// there is one, so nothing changes.
		r := e.call(method, path, tokens[op.Scope], `{"unknown_field": 1}`)
		if r.status == 401 || r.status == 403 || r.status >= 500 {
			t.Errorf("%s with only %s: %s", name, op.Scope, r)
		}
	}
}

// TestNotFound: unknown, malformed and other tenants' ids, unknown routes.
func TestNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	unknown := uuid.NewString()
	malformed := []string{"not-a-uuid", "123", "00000000-0000-0000-0000-00000000000g", "%20", "'%20OR%201=1", strings.Repeat("a", 300)}
	cases := []struct {
		what, token, method, path string
	}{
		{"unknown tenant (admin)", adminToken, "GET", "/tenants/" + unknown},
		{"unknown tenant subscriptions (admin)", adminToken, "GET", "/tenants/" + unknown + "/subscriptions"},
		{"unknown tenant publish (admin)", adminToken, "POST", "/tenants/" + unknown + "/events"},
		{"unknown subscription", adminToken, "GET", "/tenants/" + f.tenant + "/subscriptions/" + unknown},
		{"unknown subscription health", adminToken, "GET", "/tenants/" + f.tenant + "/subscriptions/" + unknown + "/health"},
		{"unknown subscription pause", adminToken, "POST", "/tenants/" + f.tenant + "/subscriptions/" + unknown + "/pause"},
		{"unknown subscription rotate", adminToken, "POST", "/tenants/" + f.tenant + "/subscriptions/" + unknown + "/rotate-secret"},
		{"unknown subscription delete", adminToken, "DELETE", "/tenants/" + f.tenant + "/subscriptions/" + unknown},
		{"unknown subscription patch", adminToken, "PATCH", "/tenants/" + f.tenant + "/subscriptions/" + unknown},
		{"unknown delivery", adminToken, "GET", "/tenants/" + f.tenant + "/deliveries/" + unknown},
		{"unknown delivery retry", adminToken, "POST", "/tenants/" + f.tenant + "/deliveries/" + unknown + "/retry"},
		{"unknown delivery discard", adminToken, "DELETE", "/tenants/" + f.tenant + "/deliveries/" + unknown},
		{"unknown route", adminToken, "GET", "/nope"},
		{"unknown route below tenant", adminToken, "GET", "/tenants/" + f.tenant + "/nope"},
		// Another tenant's objects through one's own tenant path, and another tenant's path.
		{"other's subscription via own path", f.fullToken, "GET", "/tenants/" + f.tenant + "/subscriptions/" + f.otherSub},
		{"other's subscription via own path (patch)", f.fullToken, "PATCH", "/tenants/" + f.tenant + "/subscriptions/" + f.otherSub},
		{"other's subscription via own path (delete)", f.fullToken, "DELETE", "/tenants/" + f.tenant + "/subscriptions/" + f.otherSub},
		{"other's subscription via own path (rotate)", f.fullToken, "POST", "/tenants/" + f.tenant + "/subscriptions/" + f.otherSub + "/rotate-secret"},
		{"other's delivery via own path", f.fullToken, "GET", "/tenants/" + f.tenant + "/deliveries/" + f.otherDelivery},
		{"other's delivery retry via own path", f.fullToken, "POST", "/tenants/" + f.tenant + "/deliveries/" + f.otherDelivery + "/retry"},
		{"other's delivery discard via own path", f.fullToken, "DELETE", "/tenants/" + f.tenant + "/deliveries/" + f.otherDelivery},
		{"other tenant's subscriptions", f.fullToken, "GET", "/tenants/" + f.other + "/subscriptions"},
		{"other tenant's subscription", f.fullToken, "GET", "/tenants/" + f.other + "/subscriptions/" + f.otherSub},
		{"other tenant's deliveries", f.fullToken, "GET", "/tenants/" + f.other + "/deliveries"},
		{"other tenant's delivery", f.fullToken, "GET", "/tenants/" + f.other + "/deliveries/" + f.otherDelivery},
		{"other tenant's publish", f.fullToken, "POST", "/tenants/" + f.other + "/events"},
		{"other tenant's retry", f.fullToken, "POST", "/tenants/" + f.other + "/deliveries/" + f.otherDelivery + "/retry"},
		{"unknown tenant (tenant token)", f.fullToken, "GET", "/tenants/" + unknown + "/deliveries"},
	}
	for _, m := range malformed {
		cases = append(cases,
			struct{ what, token, method, path string }{"malformed tenant id " + m, adminToken, "GET", "/tenants/" + m + "/subscriptions"},
			struct{ what, token, method, path string }{"malformed tenant id (tenant token) " + m, f.fullToken, "GET", "/tenants/" + m + "/deliveries"},
			struct{ what, token, method, path string }{"malformed subscription id " + m, adminToken, "GET", "/tenants/" + f.tenant + "/subscriptions/" + m},
			struct{ what, token, method, path string }{"malformed subscription id (pause) " + m, adminToken, "POST", "/tenants/" + f.tenant + "/subscriptions/" + m + "/pause"},
			struct{ what, token, method, path string }{"malformed delivery id " + m, adminToken, "GET", "/tenants/" + f.tenant + "/deliveries/" + m},
			struct{ what, token, method, path string }{"malformed delivery id (retry) " + m, adminToken, "POST", "/tenants/" + f.tenant + "/deliveries/" + m + "/retry"},
		)
	}
	for _, c := range cases {
		var body any
		if c.method == "PATCH" {
			body = "{}" // a valid (empty) change, so the id is what is wrong
		}
		wantError(t, c.what, e.call(c.method, c.path, c.token, body), "NOT_FOUND")
	}
	// The other tenant's objects are untouched.
	if d := e.delivery(f.other, f.otherDelivery); d.State != "delivered" || d.ManualRetries != 0 {
		t.Errorf("other tenant's delivery changed: %+v", d)
	}
	must[subscription](e, 200, "GET", "/tenants/"+f.other+"/subscriptions/"+f.otherSub, f.otherFull, nil)
}

// TestInvalidRequest: malformed bodies, unknown fields, wrong types, invalid values and query parameters.
func TestInvalidRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	tp := "/tenants/" + f.tenant
	for _, c := range invalidRequests(tp, f.sub) {
		wantError(t, c.what, e.call(c.method, c.path, adminToken, c.body), "INVALID_REQUEST")
	}
	for _, key := range []string{"\xff\xfe", "a\tb"} {
		wantError(t, "Idempotency-Key "+key, e.call("POST", tp+"/events", adminToken, `{"event_type":"a","payload":{}}`, "Idempotency-Key", key), "INVALID_REQUEST")
	}
	for _, q := range invalidListQueries {
		r := e.call("GET", tp+"/deliveries?"+q, adminToken, nil)
		if q == "include_totals=" { // empty means not asked
			if r.status != 200 {
				t.Errorf("?%s: %s", q, r)
			}
			continue
		}
		wantError(t, "query ?"+q, r, "INVALID_REQUEST")
	}
}

// invalidRequest is a request every route refuses with INVALID_REQUEST.
type invalidRequest struct {
	what, method, path string
	body               any
}

// invalidRequests are TestInvalidRequest's bodies, below tenant path tp with subscription sub.
func invalidRequests(tp, sub string) []invalidRequest {
	return []invalidRequest{
		{"empty body", "POST", "/tenants", ""},
		{"whitespace body", "POST", "/tenants", "  \n "},
		{"malformed JSON", "POST", tp + "/events", `{"event_type": `},
		{"not an object", "POST", tp + "/events", `[1,2]`},
		{"string body", "POST", tp + "/events", `"x"`},
		{"null body", "POST", tp + "/events", `null`},
		{"two objects", "POST", tp + "/events", `{"event_type":"a","payload":{}} {}`},
		{"trailing garbage", "POST", tp + "/events", `{"event_type":"a","payload":{}}x`},
		{"unknown field", "POST", tp + "/events", `{"event_type":"a","payload":{},"extra":1}`},
		{"unknown field tenant", "POST", "/tenants", `{"nme":"x"}`},
		{"wrong type event_type", "POST", tp + "/events", `{"event_type":5,"payload":{}}`},
		{"wrong type name", "POST", "/tenants", `{"name":["x"]}`},
		{"missing payload", "POST", tp + "/events", `{"event_type":"a"}`},
		{"null payload", "POST", tp + "/events", `{"event_type":"a","payload":null}`},
		{"array payload", "POST", tp + "/events", `{"event_type":"a","payload":[1]}`},
		{"string payload", "POST", tp + "/events", `{"event_type":"a","payload":"{}"}`},
		{"empty event type", "POST", tp + "/events", `{"event_type":"","payload":{}}`},
		{"bad event type space", "POST", tp + "/events", `{"event_type":"a b","payload":{}}`},
		{"bad event type leading dot", "POST", tp + "/events", `{"event_type":".a","payload":{}}`},
		{"bad event type too long", "POST", tp + "/events", `{"event_type":"` + strings.Repeat("a", 129) + `","payload":{}}`},
		{"bad event type unicode", "POST", tp + "/events", `{"event_type":"ordér","payload":{}}`},
		{"empty tenant name", "POST", "/tenants", `{"name":"  "}`},
		{"long tenant name", "POST", "/tenants", `{"name":"` + strings.Repeat("n", 201) + `"}`},
		{"no scopes", "POST", tp + "/tokens", `{"name":"x","scopes":[]}`},
		{"unknown scope", "POST", tp + "/tokens", `{"name":"x","scopes":["admin"]}`},
		{"scopes wrong type", "POST", tp + "/tokens", `{"name":"x","scopes":"events:write"}`},
		{"bad email", "POST", tp + "/users", `{"email":"nope","password":"0123456789"}`},
		{"short password", "POST", tp + "/users", `{"email":"a@example.com","password":"short"}`},
		{"long password", "POST", tp + "/users", `{"email":"a@example.com","password":"` + strings.Repeat("p", 73) + `"}`},
		{"missing url", "POST", tp + "/subscriptions", `{"event_types":["a"]}`},
		{"bad url", "POST", tp + "/subscriptions", `{"url":"not a url"}`},
		{"ftp url", "POST", tp + "/subscriptions", `{"url":"ftp://example.com/x"}`},
		{"relative url", "POST", tp + "/subscriptions", `{"url":"/hook"}`},
		{"url with user info", "POST", tp + "/subscriptions", `{"url":"https://u:p@example.com/"}`},
		{"url with fragment", "POST", tp + "/subscriptions", `{"url":"https://example.com/#x"}`},
		{"url too long", "POST", tp + "/subscriptions", `{"url":"https://example.com/` + strings.Repeat("a", 2048) + `"}`},
		{"url wrong type", "POST", tp + "/subscriptions", `{"url":42}`},
		{"bad event type in subscription", "POST", tp + "/subscriptions", `{"url":"https://example.com/","event_types":["a b"]}`},
		{"event types wrong type", "POST", tp + "/subscriptions", `{"url":"https://example.com/","event_types":"a"}`},
		{"reserved header", "POST", tp + "/subscriptions", `{"url":"https://example.com/","headers":{"Content-Type":"x"}}`},
		{"webhook- header", "POST", tp + "/subscriptions", `{"url":"https://example.com/","headers":{"Webhook-Signature":"x"}}`},
		{"bad header name", "POST", tp + "/subscriptions", `{"url":"https://example.com/","headers":{"a b":"x"}}`},
		{"header value newline", "POST", tp + "/subscriptions", `{"url":"https://example.com/","headers":{"X-A":"x\r\nY: z"}}`},
		{"header value number", "POST", tp + "/subscriptions", `{"url":"https://example.com/","headers":{"X-A":1}}`},
		{"rate limit string", "POST", tp + "/subscriptions", `{"url":"https://example.com/","rate_limit_per_second":"5"}`},
		{"rate limit fraction", "POST", tp + "/subscriptions", `{"url":"https://example.com/","rate_limit_per_second":1.5}`},
		{"rate limit negative", "POST", tp + "/subscriptions", `{"url":"https://example.com/","rate_limit_per_second":-1}`},
		{"rate limit huge", "POST", tp + "/subscriptions", `{"url":"https://example.com/","rate_limit_per_second":99999999999999999999}`},
		// 0 is out of the range 1 to 10000, not "no limit" (null is): refused on create and on change alike.
		{"rate limit zero", "POST", tp + "/subscriptions", `{"url":"https://example.com/","rate_limit_per_second":0}`},
		{"patch rate limit zero", "PATCH", tp + "/subscriptions/" + sub, `{"rate_limit_per_second":0}`},
		{"description too long", "POST", tp + "/subscriptions", `{"url":"https://example.com/","description":"` + strings.Repeat("d", 501) + `"}`},
		{"patch bad url", "PATCH", tp + "/subscriptions/" + sub, `{"url":"javascript:alert(1)"}`},
		{"patch unknown field", "PATCH", tp + "/subscriptions/" + sub, `{"state":"paused"}`},
		{"patch empty body", "PATCH", tp + "/subscriptions/" + sub, ``},
		{"method not allowed", "PUT", tp + "/subscriptions/" + sub, `{}`},
		// NUL cannot be stored in PostgreSQL text: refused up front rather than failing as INTERNAL.
		{"NUL in tenant name", "POST", "/tenants", `{"name":"a\u0000b"}`},
		{"NUL in token name", "POST", tp + "/tokens", `{"name":"a\u0000b","scopes":["events:write"]}`},
		{"NUL in email", "POST", tp + "/users", `{"email":"a\u0000b@example.com","password":"0123456789a"}`},
		{"NUL in description", "POST", tp + "/subscriptions", `{"url":"https://example.com/","description":"a\u0000b"}`},
		{"NUL in description (patch)", "PATCH", tp + "/subscriptions/" + sub, `{"description":"\u0000"}`},
	}
}

// invalidListQueries are list queries refused with INVALID_REQUEST, but for include_totals= (empty: not asked).
var invalidListQueries = []string{
	"limit=abc", "limit=0", "limit=101", "limit=-1", "limit=1.5", "limit=99999999999999999999",
	"since=notatime", "until=2026-13-01T00:00:00Z", "since=2026-01-01", "state=bogus", "state=pending,bogus",
	"cursor=garbage", "cursor=" + "eyJ0IjoieCJ9", "cursor=%00", "include_totals=maybe", "include_totals=",
	"subscription_id=nope", "event_id=nope", "event_id=msg_123", "unknown=1", "limit=1&LIMIT=2", "event_type=a%20b",
	"status=abc", "status=4x", "status=99", "status=600", "status=6xx", "status=44xx", "status=4xx,5xx", "status=-40", "status=%00",
}

// TestInvalidState: retrying a pending delivery, discarding a delivered or pending one, discarding twice,
// pausing a disabled subscription is covered by the subscriptions package.
func TestInvalidState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	tp := "/tenants/" + f.tenant
	paused := e.newSubscription(f.tenant, map[string]any{"url": "https://example.com/hook", "event_types": []string{"wait.event"}})
	must[subscription](e, 200, "POST", tp+"/subscriptions/"+paused.ID+"/pause", adminToken, nil)
	pending := e.publish(f.tenant, "wait.event", map[string]any{}).Deliveries[0].ID

	wantError(t, "retry pending", e.call("POST", tp+"/deliveries/"+pending+"/retry", adminToken, nil), "INVALID_STATE")
	wantError(t, "retry pending (tenant)", e.call("POST", tp+"/deliveries/"+pending+"/retry", f.fullToken, nil), "INVALID_STATE")
	// Retry now is for deliveries waiting for a retry: not one never tried, nor a finished one.
	wantError(t, "retry now, never tried", e.call("POST", tp+"/deliveries/"+pending+"/retry-now", f.fullToken, nil), "INVALID_STATE")
	wantError(t, "retry now, delivered", e.call("POST", tp+"/deliveries/"+f.delivered+"/retry-now", f.fullToken, nil), "INVALID_STATE")
	wantError(t, "retry now, dead", e.call("POST", tp+"/deliveries/"+f.dead+"/retry-now", adminToken, nil), "INVALID_STATE")
	wantError(t, "discard delivered", e.call("DELETE", tp+"/deliveries/"+f.delivered, adminToken, nil), "INVALID_STATE")
	wantError(t, "discard pending", e.call("DELETE", tp+"/deliveries/"+pending, f.fullToken, nil), "INVALID_STATE")

	if r := e.call("DELETE", tp+"/deliveries/"+f.dead, f.fullToken, nil); r.status != 204 || len(r.body) != 0 {
		t.Fatalf("discard dead: %s", r)
	}
	wantError(t, "discard twice", e.call("DELETE", tp+"/deliveries/"+f.dead, adminToken, nil), "INVALID_STATE")
	wantError(t, "retry discarded", e.call("POST", tp+"/deliveries/"+f.dead+"/retry", adminToken, nil), "INVALID_STATE")
	// Discarded: still readable, gone from lists.
	if d := e.delivery(f.tenant, f.dead); d.State != "failed" {
		t.Errorf("discarded delivery: %+v", d)
	}
	p := must[page](e, 200, "GET", tp+"/deliveries?state=dead&include_totals=true", adminToken, nil)
	if *p.Total != 0 || len(p.Items) != 0 {
		t.Errorf("discarded delivery still listed: %+v", p)
	}
}

// TestMaxRetriesExceeded: a tenant token may retry one delivery HOOKLINE_MAX_MANUAL_RETRIES times; admins
// are neither capped nor counted.
func TestMaxRetriesExceeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground, func(c *config.Config) { c.MaxManualRetries = 2 })
	f := newFixture(e)
	path := "/tenants/" + f.tenant + "/deliveries/" + f.dead + "/retry"
	type retried struct {
		ID            string `json:"id"`
		State         string `json:"state"`
		ManualRetries int    `json:"manual_retries"`
	}
	for i := 1; i <= 2; i++ {
		r := must[retried](e, 202, "POST", path, f.fullToken, nil)
		if r.State != "pending" || r.ManualRetries != i || r.ID != f.dead {
			t.Fatalf("retry %d: %+v", i, r)
		}
		e.waitState(f.tenant, f.dead, "failed")
	}
	er := wantError(t, "third retry by a tenant", e.call("POST", path, f.fullToken, nil), "MAX_RETRIES_EXCEEDED")
	if !strings.Contains(er.Error.Message, "2") {
		t.Errorf("message does not say the cap: %q", er.Error.Message)
	}
	r := must[retried](e, 202, "POST", path, adminToken, nil)
	if r.ManualRetries != 2 {
		t.Errorf("admin retry counted: %+v", r)
	}
	d := e.waitState(f.tenant, f.dead, "failed")
	if d.TotalAttempts != 4 || d.AttemptCount != 1 || len(d.Attempts) != 4 {
		t.Errorf("after 3 retries: total_attempts %d attempt_count %d attempts %d, want 4, 1, 4", d.TotalAttempts, d.AttemptCount, len(d.Attempts))
	}
	for i, a := range d.Attempts {
		if a.Attempt != i+1 {
			t.Errorf("attempt numbers: %d at %d", a.Attempt, i)
		}
	}
	// Resend of a delivered delivery is allowed too.
	must[retried](e, 202, "POST", "/tenants/"+f.tenant+"/deliveries/"+f.delivered+"/retry", f.fullToken, nil)
}

// TestRateLimited: manual resends per subscription per minute, with Retry-After.
func TestRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground, func(c *config.Config) { c.ResendPerMinute = 1 })
	rc := newReceiver(t, func(string, int) int { return 400 })
	tid := e.newTenant("ratelimit")
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/gone"})
	a := e.publish(tid, "x", map[string]any{}).Deliveries[0].ID
	b := e.publish(tid, "x", map[string]any{}).Deliveries[0].ID
	e.waitState(tid, a, "failed")
	e.waitState(tid, b, "failed")
	if r := e.call("POST", "/tenants/"+tid+"/deliveries/"+a+"/retry", adminToken, nil); r.status != 202 {
		t.Fatalf("first resend: %s", r)
	}
	r := e.call("POST", "/tenants/"+tid+"/deliveries/"+b+"/retry", adminToken, nil)
	wantError(t, "second resend in a minute", r, "RATE_LIMITED")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After %q, want 1..60 seconds", r.header.Get("Retry-After"))
	}
	// Another subscription has its own budget.
	sub2 := e.newSubscription(tid, map[string]any{"url": rc.URL + "/gone2", "event_types": []string{"y"}})
	c := e.publish(tid, "y", map[string]any{}).Deliveries
	var cid string
	for _, d := range c {
		if d.SubscriptionID == sub2.ID {
			cid = d.ID
		}
	}
	e.waitState(tid, cid, "failed")
	if r := e.call("POST", "/tenants/"+tid+"/deliveries/"+cid+"/retry", adminToken, nil); r.status != 202 {
		t.Errorf("resend on another subscription: %s", r)
	}

}

// TestPayloadTooLarge: bodies over 256 KiB are refused on every route that reads one; 256 KiB exactly is read.
func TestPayloadTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tid := e.newTenant("large")
	sub := e.newSubscription(tid, map[string]any{"url": "https://example.com/hook", "event_types": []string{"none"}})
	big := `{"name":"` + strings.Repeat("a", 256<<10) + `"}`
	for _, c := range []struct{ method, path string }{
		{"POST", "/tenants"}, {"POST", "/tenants/" + tid + "/tokens"}, {"POST", "/tenants/" + tid + "/users"},
		{"POST", "/tenants/" + tid + "/subscriptions"}, {"PATCH", "/tenants/" + tid + "/subscriptions/" + sub.ID},
		{"POST", "/tenants/" + tid + "/events"},
	} {
		wantError(t, c.method+" "+c.path, e.call(c.method, c.path, adminToken, big), "PAYLOAD_TOO_LARGE")
	}
	// Exactly 256 KiB is accepted (padding with spaces inside the payload object).
	body := `{"event_type":"big.event","payload":{"a":"b"}}`
	exact := strings.Replace(body, `{"a"`, `{`+strings.Repeat(" ", 256<<10-len(body))+`"a"`, 1)
	if len(exact) != 256<<10 {
		t.Fatalf("body is %d bytes", len(exact))
	}
	if r := e.call("POST", "/tenants/"+tid+"/events", adminToken, exact); r.status != 202 {
		t.Errorf("256 KiB body: %s", r)
	}
	wantError(t, "256 KiB + 1", e.call("POST", "/tenants/"+tid+"/events", adminToken, exact+" "), "PAYLOAD_TOO_LARGE")
}

// TestCorrelationID: every response carries X-Correlation-ID, the request's own when it sent a sane one.
func TestCorrelationID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tid := e.newTenant("corr")
	idRE := regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)
	reqs := []struct{ method, path, token string }{
		{"GET", "/tenants", adminToken}, {"GET", "/tenants", ""}, {"GET", "/nope", adminToken},
		{"GET", "/tenants/" + tid + "/deliveries?limit=0", adminToken}, {"POST", "/tenants/" + tid + "/events", adminToken},
		{"GET", e.base + "/healthz", ""}, {"GET", e.base + "/readyz", ""}, {"GET", e.base + "/metrics", ""},
	}
	seen := map[string]bool{}
	for _, rq := range reqs {
		r := e.call(rq.method, rq.path, rq.token, nil)
		got := r.header.Get("X-Correlation-ID")
		if !idRE.MatchString(got) || seen[got] {
			t.Errorf("%s %s: generated X-Correlation-ID %q (missing, malformed or repeated)", rq.method, rq.path, got)
		}
		seen[got] = true
		r = e.call(rq.method, rq.path, rq.token, nil, "X-Correlation-ID", "my-corr.id:42")
		if got := r.header.Get("X-Correlation-ID"); got != "my-corr.id:42" {
			t.Errorf("%s %s: X-Correlation-ID %q, want it echoed", rq.method, rq.path, got)
		}
		if r.status >= 400 && strings.HasPrefix(rq.path, "/") {
			if er := wantError(t, rq.path, r, codeOf(r)); er.Error.CorrelationID != "my-corr.id:42" {
				t.Errorf("%s %s: error correlation_id %q", rq.method, rq.path, er.Error.CorrelationID)
			}
		}
		// A correlation id that is not sane is replaced, not echoed.
		r = e.call(rq.method, rq.path, rq.token, nil, "X-Correlation-ID", "bad id <script>")
		if got := r.header.Get("X-Correlation-ID"); got == "bad id <script>" || !idRE.MatchString(got) {
			t.Errorf("%s %s: insane correlation id answered with %q", rq.method, rq.path, got)
		}
	}
}

func codeOf(r reply) string {
	var e apiError
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// TestOperationalEndpoints: /healthz, /readyz and /metrics answer without a token.
func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := e.call("GET", e.base+p, "", nil); r.status != 200 || strings.TrimSpace(string(r.body)) != "ok" {
			t.Errorf("%s: %s", p, r)
		}
	}
	r := e.call("GET", e.base+"/metrics", "", nil)
	for _, m := range []string{"webhook_deliveries_failed_total", "webhook_delivery_attempts_total",
		"webhook_delivery_attempt_duration_seconds", "webhook_deliveries_pending", "webhook_deliveries_dead",
		"webhook_queue_lag_seconds", "webhook_subscriptions_circuit_open", "webhook_subscriptions_disabled"} {
		if r.status != 200 || !strings.Contains(string(r.body), m) {
			t.Errorf("/metrics lacks %s (%d)", m, r.status)
		}
	}
}

// TestConcurrentRetries: of concurrent retries of one dead delivery exactly one queues it; the rest are 409.
func TestConcurrentRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	// Pause the endpoint so the retried delivery stays pending while the calls race.
	bad := must[struct {
		Items []subscription `json:"items"`
	}](e, 200, "GET", "/tenants/"+f.tenant+"/subscriptions", adminToken, nil)
	for _, s := range bad.Items {
		must[subscription](e, 200, "POST", "/tenants/"+f.tenant+"/subscriptions/"+s.ID+"/pause", adminToken, nil)
	}
	for round, tok := range []string{adminToken, f.fullToken} {
		id := f.dead
		if round == 1 {
			id = f.delivered
		}
		const n = 12
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]reply, n)
		for i := range n {
			wg.Go(func() {
				<-start
				results[i] = e.call("POST", "/tenants/"+f.tenant+"/deliveries/"+id+"/retry", tok, nil)
			})
		}
		close(start)
		wg.Wait()
		var codes []int
		for _, r := range results {
			codes = append(codes, r.status)
			if r.status == 409 {
				wantError(t, "losing retry", r, "INVALID_STATE")
			}
		}
		slices.Sort(codes)
		if codes[0] != 202 || codes[1] != 409 || codes[n-1] != 409 {
			t.Errorf("round %d: statuses %v, want one 202 and the rest 409", round, codes)
		}
		d := e.delivery(f.tenant, id)
		if d.State != "pending" {
			t.Errorf("round %d: state %s", round, d.State)
		}
		if round == 1 && d.ManualRetries != 1 {
			t.Errorf("concurrent tenant retries counted %d times", d.ManualRetries)
		}
	}
}
