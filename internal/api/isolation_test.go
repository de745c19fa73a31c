package api_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/hookline/hookline/internal/api"
	"github.com/hookline/hookline/internal/tenants"
)

// The tenant-isolation walk: every route the API registers is called with another tenant's ids in every
// path parameter, with tokens lacking its scope and, for admin routes, with a tenant token. A route added to
// internal/api/api.go without an entry in isolationRoutes fails TestIsolationWalkCoversEveryRoute, so no
// route escapes the walk.

// isoRoute is what the walk needs to call one route: a valid body (nil: none), so that a handler that
// reads its body before its path ids still reaches the id lookup, and extra query strings for lists.
type isoRoute struct {
	body    func(w *isoWorld) any
	queries func(w *isoWorld) []string
	// fullToken: the route's scope alone does not answer it (a portal link also needs the scopes of the
	// role it hands out), so A's own collection is called with A's token holding every scope.
	fullToken bool
}

// isolationRoutes are the routes the walk knows how to fill in, keyed "METHOD /api/v1/path" with path
// parameters as {} (the OpenAPI test's normalisation).
var isolationRoutes = map[string]isoRoute{
	"POST /api/v1/tenants":   {body: func(*isoWorld) any { return map[string]any{"name": "iso-created"} }},
	"GET /api/v1/tenants":    {},
	"GET /api/v1/me":         {},
	"POST /api/v1/replays":   {body: func(w *isoWorld) any { return w.replayBody(w.a.tenant) }},
	"GET /api/v1/replays":    {},
	"GET /api/v1/replays/{}": {},
	"GET /api/v1/tenants/{}": {},
	"POST /api/v1/tenants/{}/tokens": {body: func(*isoWorld) any {
		return map[string]any{"name": "iso", "scopes": []string{tenants.ScopeDeliveriesRead}}
	}},
	"GET /api/v1/tenants/{}/tokens":       {},
	"DELETE /api/v1/tenants/{}/tokens/{}": {},
	"POST /api/v1/tenants/{}/users": {body: func(*isoWorld) any {
		return map[string]any{"email": "iso-" + uuid.NewString()[:13] + "@example.com", "password": "iso-password-123"}
	}},
	"POST /api/v1/tenants/{}/subscriptions": {body: func(w *isoWorld) any {
		return map[string]any{"url": w.rc.URL + "/iso-a/created", "event_types": []string{"iso.none"}}
	}},
	"GET /api/v1/tenants/{}/subscriptions": {},
	"POST /api/v1/tenants/{}/filter-test": {body: func(*isoWorld) any {
		return map[string]any{"filter": map[string]any{}, "event_type": "iso.none", "payload": map[string]any{}}
	}},
	"POST /api/v1/tenants/{}/portal-links": {body: func(*isoWorld) any {
		return map[string]any{"role": "view", "user": map[string]any{"id": "iso"}}
	}, fullToken: true},
	"DELETE /api/v1/tenants/{}/portal-sessions": {},
	"GET /api/v1/tenants/{}/activity":           {},
	"GET /api/v1/tenants/{}/subscriptions/{}":   {},
	"PATCH /api/v1/tenants/{}/subscriptions/{}": {body: func(*isoWorld) any {
		return map[string]any{"description": "changed through another tenant", "url": "http://127.0.0.1:9/hijacked"}
	}},
	"DELETE /api/v1/tenants/{}/subscriptions/{}":             {},
	"POST /api/v1/tenants/{}/subscriptions/{}/pause":         {},
	"POST /api/v1/tenants/{}/subscriptions/{}/resume":        {},
	"POST /api/v1/tenants/{}/subscriptions/{}/rotate-secret": {},
	"GET /api/v1/tenants/{}/subscriptions/{}/health":         {},
	"GET /api/v1/tenants/{}/subscriptions/{}/secret":         {},
	"POST /api/v1/tenants/{}/subscriptions/{}/recover": {body: func(w *isoWorld) any {
		return map[string]any{"since": w.since.Format(time.RFC3339)}
	}},
	"GET /api/v1/tenants/{}/subscriptions/{}/poll":      {},
	"GET /api/v1/tenants/{}/subscriptions/{}/consumers": {},
	"POST /api/v1/tenants/{}/subscriptions/{}/consumers/{}/commit": {body: func(*isoWorld) any {
		return map[string]any{"cursor": "not-a-cursor"}
	}},
	"POST /api/v1/tenants/{}/events": {body: func(*isoWorld) any {
		return map[string]any{"event_type": "iso.none", "payload": map[string]any{"n": 1}}
	}},
	"GET /api/v1/tenants/{}/deliveries": {queries: func(w *isoWorld) []string {
		return []string{"subscription_id=" + w.b.sub, "subscription_id=" + w.b.deadSub + "&state=dead",
			"state=dead&include_totals=true", "event_type=iso.bad", "limit=100", "event_id=" + w.b.eventIDs[0],
			"event_id=" + w.b.eventIDs[1] + "&include_totals=true"}
	}},
	"GET /api/v1/tenants/{}/deliveries/{}":            {},
	"DELETE /api/v1/tenants/{}/deliveries/{}":         {},
	"POST /api/v1/tenants/{}/deliveries/{}/retry":     {},
	"POST /api/v1/tenants/{}/deliveries/{}/retry-now": {},
	"GET /api/v1/tenants/{}/replays":                  {queries: func(*isoWorld) []string { return []string{"limit=100"} }},
	"GET /api/v1/tenants/{}/replays/{}":               {},
	"GET /api/v1/event-types":                         {queries: func(*isoWorld) []string { return []string{"include_archived=true"} }},
	"POST /api/v1/event-types": {body: func(*isoWorld) any {
		return map[string]any{"name": "iso.created-" + uuid.NewString()[:8], "schema": map[string]any{"type": "object"}}
	}},
	"POST /api/v1/event-types/import": {body: func(*isoWorld) any {
		return "openapi: 3.1.0\nwebhooks:\n  iso.imported:\n    post: {summary: imported through a tenant token}\n"
	}},
	"GET /api/v1/event-types/{}":    {},
	"PATCH /api/v1/event-types/{}":  {body: func(*isoWorld) any { return map[string]any{"description": "changed by a tenant token"} }},
	"DELETE /api/v1/event-types/{}": {},
}

// isoTenant is one tenant's objects, as ids by path parameter name.
type isoTenant struct {
	tenant, name                  string
	sub, deadSub, pausedSub       string
	pollSub                       string // a polling subscription, with a consumer that polled
	delivered, dead               string
	token                         string
	recoverReplay, adminReplay    string
	ids                           map[string][]string // chi parameter name → ids to put there
	secrets                       []string            // strings that must never show up in another tenant's answers
	full                          string              // a token with every scope
	only, lacking                 map[string]string   // scope → a token with only it / with every other one
	eventIDs                      []string
	marker, description, hdrValue string
}

// isoWorld is the walk's fixture: tenants A (the caller) and B (the victim) and a tenantless replay.
type isoWorld struct {
	e      *env
	rc     *receiver
	a, b   *isoTenant
	global string // a replay of no tenant
	since  time.Time
	// eventType is a type of the (global) event catalogue: any token reads it, only the admin changes it.
	eventType string
	// bIDs are B's ids by path parameter, and the replay of no tenant, which A must not reach either.
	bIDs map[string][]string
	// requests counts the walk's requests.
	requests int
}

// walkedRoute is one registered route: its key (as in isolationRoutes) and chi pattern.
type walkedRoute struct {
	key, method, pattern string
}

// walkAPI walks the router api.go builds.
func walkAPI(t *testing.T) []walkedRoute {
	t.Helper()
	r, ok := (&api.API{}).Routes().(chi.Routes)
	if !ok {
		t.Fatal("API.Routes() is not a chi router")
	}
	var out []walkedRoute
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, walkedRoute{key: method + " /api/v1" + normalise(route), method: method, pattern: route})
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// TestIsolationWalkCoversEveryRoute fails when the router, the OpenAPI document and the walk's table
// disagree: a new route must be documented (with its x-required-scope) and taught to the walk.
func TestIsolationWalkCoversEveryRoute(t *testing.T) {
	t.Parallel()
	walked := map[string]bool{}
	for _, rt := range walkAPI(t) {
		walked[rt.key] = true
		if _, ok := isolationRoutes[rt.key]; !ok {
			t.Errorf("route %s is registered but the isolation walk does not know it: add it to isolationRoutes", rt.key)
		}
		for _, p := range paramNameRE.FindAllStringSubmatch(rt.pattern, -1) {
			if !slices.Contains(isoParams, p[1]) {
				t.Errorf("route %s has path parameter {%s}, which the isolation walk cannot fill in", rt.key, p[1])
			}
		}
	}
	for k := range isolationRoutes {
		if !walked[k] {
			t.Errorf("isolationRoutes lists %s, which the router does not register", k)
		}
	}
	ops := loadSpec(t).operations(t)
	for k := range walked {
		op, ok := ops[k]
		if !ok {
			t.Errorf("route %s is registered but not in api/openapi.yaml", k)
			continue
		}
		if op.Scope != "admin" && op.Scope != "any" && !slices.Contains(tenants.AllScopes, op.Scope) {
			t.Errorf("%s: x-required-scope %q is neither admin, any nor a tenant scope", k, op.Scope)
		}
		if op.Scope == "any" && strings.Contains(k, "/tenants/{}") {
			t.Errorf("%s: x-required-scope any is for global reads, not a tenant's objects", k)
		}
	}
	for k := range ops {
		if strings.HasPrefix(k[strings.Index(k, " ")+1:], "/api/v1/") && !walked[k] {
			t.Errorf("api/openapi.yaml documents %s, which the router does not register", k)
		}
	}
}

var paramNameRE = regexp.MustCompile(`\{([^}:]+)(?::[^}]*)?\}`)

// isoParams are the path parameters the walk fills in.
var isoParams = []string{"tenantID", "subscriptionID", "deliveryID", "replayID", "tokenID", "eventType", "consumer"}

// fill puts ids into a chi pattern (params: name → id) and drops the subrouter's trailing slash.
func fill(pattern string, params map[string]string) string {
	p := paramNameRE.ReplaceAllStringFunc(pattern, func(m string) string {
		return params[paramNameRE.FindStringSubmatch(m)[1]]
	})
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// combos are every assignment of ids to the pattern's parameters other than tenantID.
func combos(pattern string, ids map[string][]string, tenant string) []map[string]string {
	out := []map[string]string{{"tenantID": tenant}}
	for _, m := range paramNameRE.FindAllStringSubmatch(pattern, -1) {
		name := m[1]
		if name == "tenantID" {
			continue
		}
		var next []map[string]string
		for _, c := range out {
			for _, id := range ids[name] {
				n := map[string]string{name: id}
				for k, v := range c {
					n[k] = v
				}
				next = append(next, n)
			}
		}
		out = next
	}
	return out
}

func (w *isoWorld) replayBody(tenantID string) map[string]any {
	// A dry run over a range holding nothing: it is recorded, and changes nothing.
	return map[string]any{"tenant_id": tenantID, "created_from": "2001-01-01T00:00:00Z", "created_to": "2001-01-02T00:00:00Z", "dry_run": true}
}

// newIsoTenant creates a tenant with two active subscriptions (one answering 400), a paused one, a
// delivered and a dead delivery, a token, a user, a recover and an admin replay.
func newIsoTenant(w *isoWorld, label string) *isoTenant {
	e := w.e
	e.t.Helper()
	mark := "iso" + label + "-" + uuid.NewString()[:8]
	tn := &isoTenant{name: "tenant " + mark, marker: mark, description: "description " + mark, hdrValue: "header-secret-" + mark}
	tn.tenant = must[tenant](e, 201, "POST", "/tenants", adminToken, map[string]any{"name": tn.name}).ID
	s := e.newSubscription(tn.tenant, map[string]any{"url": w.rc.URL + "/" + mark + "/ok", "event_types": []string{"iso.ok"},
		"description": tn.description, "headers": map[string]string{"X-Iso-Secret": tn.hdrValue}})
	tn.sub = s.ID
	d := e.newSubscription(tn.tenant, map[string]any{"url": w.rc.URL + "/" + mark + "/bad", "event_types": []string{"iso.bad"}})
	tn.deadSub = d.ID
	p := e.newSubscription(tn.tenant, map[string]any{"url": w.rc.URL + "/" + mark + "/paused", "event_types": []string{"iso.paused"}})
	tn.pausedSub = p.ID
	must[subscription](e, 200, "POST", "/tenants/"+tn.tenant+"/subscriptions/"+tn.pausedSub+"/pause", adminToken, nil)
	tn.secrets = append(tn.secrets, s.Secret, d.Secret, p.Secret)
	ps := e.newSubscription(tn.tenant, map[string]any{"type": "polling", "event_types": []string{"iso.ok"}})
	tn.pollSub = ps.ID
	tn.secrets = append(tn.secrets, ps.Secret)

	ok := e.publish(tn.tenant, "iso.ok", map[string]any{"secret": "payload-" + mark})
	bad := e.publish(tn.tenant, "iso.bad", map[string]any{"secret": "payload-" + mark})
	tn.delivered, tn.dead = ok.Deliveries[0].ID, bad.Deliveries[0].ID
	tn.eventIDs = []string{ok.ID, bad.ID}
	e.waitState(tn.tenant, tn.delivered, "delivered")
	e.waitState(tn.tenant, tn.dead, "failed")
	// The polling subscription's consumer pulls the iso.ok event and commits it: with nothing waiting, the
	// maintenance leader leaves the subscription's row alone during the walk (it marks one nobody pulls).
	pulled := e.pollFor(tn.tenant, tn.pollSub, "iso-consumer", 10, 1)
	must[map[string]any](e, 204, "POST", commitPath(tn.tenant, tn.pollSub, "iso-consumer"), adminToken, map[string]any{"cursor": pulled.Cursor})

	tok := must[struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}](e, 201, "POST", "/tenants/"+tn.tenant+"/tokens", adminToken, map[string]any{"name": "token " + mark, "scopes": tenants.AllScopes})
	tn.token, tn.full = tok.ID, tok.Token
	tn.only, tn.lacking = map[string]string{}, map[string]string{}
	for _, sc := range tenants.AllScopes {
		tn.only[sc] = e.newToken(tn.tenant, sc)
		var rest []string
		for _, o := range tenants.AllScopes {
			if o != sc {
				rest = append(rest, o)
			}
		}
		tn.lacking[sc] = e.newToken(tn.tenant, rest...)
	}
	must[map[string]any](e, 201, "POST", "/tenants/"+tn.tenant+"/users", adminToken,
		map[string]any{"email": mark + "@example.com", "password": "iso-password-123"})

	type replay struct {
		ID string `json:"id"`
	}
	tn.recoverReplay = must[replay](e, 201, "POST", "/tenants/"+tn.tenant+"/subscriptions/"+tn.deadSub+"/recover", adminToken,
		map[string]any{"since": w.since.Format(time.RFC3339), "dry_run": true}).ID
	tn.adminReplay = must[replay](e, 201, "POST", "/replays", adminToken, w.replayBody(tn.tenant)).ID

	tn.ids = map[string][]string{
		"subscriptionID": {tn.sub, tn.deadSub, tn.pausedSub, tn.pollSub},
		"consumer":       {"iso-consumer"},
		"deliveryID":     {tn.delivered, tn.dead},
		"replayID":       {tn.recoverReplay, tn.adminReplay},
		"tokenID":        {tn.token},
	}
	tn.secrets = append(tn.secrets, tn.tenant, tn.name, mark, tn.description, tn.hdrValue, tn.sub, tn.deadSub, tn.pausedSub, tn.pollSub,
		tn.delivered, tn.dead, tn.token, tn.recoverReplay, tn.adminReplay, tn.full, mark+"@example.com")
	tn.secrets = append(tn.secrets, tn.eventIDs...)
	return tn
}

// snapshot is every row of the tenant's, in every table, as JSON: what the walk must not change.
func (w *isoWorld) snapshot(tenantID string) map[string]string {
	w.e.t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for table, where := range map[string]string{
		"tenants":                "id = $1",
		"api_tokens":             "tenant_id = $1",
		"users":                  "tenant_id = $1",
		"subscriptions":          "tenant_id = $1",
		"subscription_secrets":   "subscription_id IN (SELECT id FROM subscriptions WHERE tenant_id = $1)",
		"events":                 "tenant_id = $1",
		"replays":                "tenant_id = $1",
		"webhook_deliveries":     "tenant_id = $1",
		"webhook_attempts":       "tenant_id = $1",
		"subscription_consumers": "tenant_id = $1",
	} {
		var s string
		q := fmt.Sprintf(`SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY to_jsonb(x)::text), '[]')::text FROM %s x WHERE %s`, table, where)
		if err := w.e.srv.Pool.QueryRow(ctx, q, tenantID).Scan(&s); err != nil {
			w.e.t.Fatalf("snapshot %s: %v", table, err)
		}
		out[table] = s
	}
	return out
}

// TestIsolationWalk calls every API route with tenant B's ids from tenant A (and as admin under A's path),
// with tokens lacking the route's scope and with tenant tokens on admin routes.
//   - another tenant's id in any path parameter is 404 NOT_FOUND, for every token that could reach it;
//   - a token lacking the route's x-required-scope is 403, one holding only that scope is not;
//   - a tenant token on an admin route is 403 (404 when the path names another tenant);
//   - no answer holds B's ids, names, urls, secrets or payloads, and B's rows are unchanged afterwards.
func TestIsolationWalk(t *testing.T) {
	t.Parallel()
	w := newIsoWorld(t)
	before := w.snapshot(w.b.tenant)
	hitsBefore := w.hitsOfB()

	ops := loadSpec(t).operations(t)
	routes := walkAPI(t)
	// Destructive calls last, so that a leak that lets one through does not hide the others.
	slices.SortStableFunc(routes, func(x, y walkedRoute) int {
		return boolInt(x.method == "DELETE") - boolInt(y.method == "DELETE")
	})
	for _, rt := range routes {
		spec, known := isolationRoutes[rt.key]
		op, documented := ops[rt.key]
		if !known || !documented {
			continue // TestIsolationWalkCoversEveryRoute reports it
		}
		w.walk(t, rt, spec, op.Scope)
	}

	// Nothing of B's changed, and nothing was sent to B's endpoints. Nothing is left to wait for: a
	// wrongly accepted retry or send changes B's deliveries or events in its request's own transaction,
	// before it answers, so the snapshot shows it now, before any worker could send it.
	after := w.snapshot(w.b.tenant)
	for table, rows := range before {
		if after[table] != rows {
			t.Errorf("tenant B's %s changed during the walk:\nbefore %s\nafter  %s", table, truncate(rows, 2000), truncate(after[table], 2000))
		}
	}
	if h := w.hitsOfB(); h != hitsBefore {
		t.Errorf("B's endpoints got %d requests during the walk", h-hitsBefore)
	}
	if s := must[subscription](w.e, 200, "GET", "/tenants/"+w.b.tenant+"/subscriptions/"+w.b.pausedSub, adminToken, nil); s.State != "paused" {
		t.Errorf("B's paused subscription is %s", s.State)
	}
	t.Logf("%d routes walked, %d requests", len(routes), w.requests)
}

// newIsoWorld makes the walk's fixture: tenants A and B, a replay of no tenant, a catalogued event type.
func newIsoWorld(t *testing.T) *isoWorld {
	e := newEnv(t, withBackground)
	w := &isoWorld{e: e, since: time.Now().Add(-time.Hour).UTC()}
	w.rc = newReceiver(t, func(p string, _ int) int {
		if strings.HasSuffix(p, "/bad") {
			return 400
		}
		return 200
	})
	w.a = newIsoTenant(w, "a")
	w.b = newIsoTenant(w, "b")
	w.global = must[struct {
		ID string `json:"id"`
	}](e, 201, "POST", "/replays", adminToken, map[string]any{"created_from": "2001-01-01T00:00:00Z",
		"created_to": "2001-01-02T00:00:00Z", "dry_run": true}).ID
	w.eventType = "iso.catalogued-" + uuid.NewString()[:8]
	must[map[string]any](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": w.eventType, "description": "iso"})
	// Replays A must not reach under its own path: B's, and one of no tenant.
	w.bIDs = map[string][]string{}
	for k, v := range w.b.ids {
		w.bIDs[k] = v
	}
	w.bIDs["replayID"] = append(slices.Clone(w.bIDs["replayID"]), w.global)
	return w
}

// hitsOfB is how many requests B's endpoints have had.
func (w *isoWorld) hitsOfB() int {
	return len(w.rc.requests("/"+w.b.marker+"/ok")) + len(w.rc.requests("/"+w.b.marker+"/bad"))
}

// call sends one request of the walk and checks its answer holds nothing of B's.
func (w *isoWorld) call(t *testing.T, what, method, path, token string, body any) reply {
	t.Helper()
	w.requests++
	r := w.e.call(method, path, token, body)
	w.checkNoLeak(t, what+": "+method+" "+path, path, body, r)
	return r
}

// expect calls and requires the error code.
func (w *isoWorld) expect(t *testing.T, what, method, path, token string, body any, code string) {
	t.Helper()
	r := w.call(t, what, method, path, token, body)
	wantError(t, what+": "+method+" "+path, r, code)
}

// walk calls one route every way the walk knows.
func (w *isoWorld) walk(t *testing.T, rt walkedRoute, spec isoRoute, scope string) {
	body := func() any {
		if spec.body == nil {
			return nil
		}
		return spec.body(w)
	}
	if !strings.Contains(rt.pattern, "{tenantID}") {
		w.walkGlobal(t, rt, spec, scope, body)
		return
	}
	// (a) B's tenant in the path: 404 for every token of A's, whatever the route.
	for _, params := range combos(rt.pattern, w.b.ids, w.b.tenant) {
		w.expect(t, "A's token, B's tenant", rt.method, fill(rt.pattern, params), w.a.full, body(), "NOT_FOUND")
		if scope != "admin" {
			w.expect(t, "A's token with only the scope, B's tenant", rt.method, fill(rt.pattern, params), w.a.only[scope], body(), "NOT_FOUND")
		}
	}
	if len(paramNameRE.FindAllString(rt.pattern, -1)) > 1 {
		w.walkBObjects(t, rt, scope, body)
	} else {
		w.walkOwnCollection(t, rt, spec, scope, body)
	}
	w.walkOwnObjects(t, rt, scope, body)
}

// walkGlobal calls a route of no tenant: a global read answers any token; a global admin route refuses
// every tenant token (c).
func (w *isoWorld) walkGlobal(t *testing.T, rt walkedRoute, spec isoRoute, scope string, body func() any) {
	params := map[string]string{"replayID": w.a.adminReplay, "eventType": w.eventType}
	if scope == "any" {
		// Global reads (the event catalogue): every tenant token, whatever its scopes, reads them.
		queries := []string{""}
		if spec.queries != nil {
			queries = append(queries, spec.queries(w)...)
		}
		for _, q := range queries {
			path := fill(rt.pattern, params)
			if q != "" {
				path += "?" + q
			}
			for _, tok := range append([]string{w.a.full, adminToken}, mapValues(w.a.only)...) {
				if r := w.call(t, "any token on a global read", rt.method, path, tok, body()); r.status != 200 {
					t.Errorf("any token on a global read %s %s: %s", rt.method, path, r)
				}
			}
		}
		return
	}
	// (c) Global admin routes: every tenant token is 403.
	for _, tok := range append([]string{w.a.full}, mapValues(w.a.only)...) {
		w.expect(t, "tenant token on an admin route", rt.method, fill(rt.pattern, params), tok, body(), "FORBIDDEN")
	}
}

// walkBObjects (a): A's tenant with B's objects is 404 for A's tokens and for the admin token too.
func (w *isoWorld) walkBObjects(t *testing.T, rt walkedRoute, scope string, body func() any) {
	for _, params := range combos(rt.pattern, w.bIDs, w.a.tenant) {
		path := fill(rt.pattern, params)
		w.expect(t, "admin, A's tenant with B's objects", rt.method, path, adminToken, body(), "NOT_FOUND")
		if scope == "admin" {
			w.expect(t, "A's token on an admin route with B's objects", rt.method, path, w.a.full, body(), "FORBIDDEN")
			continue
		}
		w.expect(t, "A's token, A's tenant with B's objects", rt.method, path, w.a.full, body(), "NOT_FOUND")
		w.expect(t, "A's token with only the scope, B's objects", rt.method, path, w.a.only[scope], body(), "NOT_FOUND")
	}
}

// walkOwnCollection: A's own collections answer, and hold nothing of B's.
func (w *isoWorld) walkOwnCollection(t *testing.T, rt walkedRoute, spec isoRoute, scope string, body func() any) {
	tok := adminToken
	switch {
	case spec.fullToken:
		tok = w.a.full
	case scope != "admin":
		tok = w.a.only[scope]
	}
	queries := []string{""}
	if spec.queries != nil {
		queries = append(queries, spec.queries(w)...)
	}
	for _, q := range queries {
		path := fill(rt.pattern, map[string]string{"tenantID": w.a.tenant})
		if q != "" {
			path += "?" + q
		}
		for _, tk := range []string{tok, adminToken} {
			if r := w.call(t, "A's own collection", rt.method, path, tk, body()); r.status < 200 || r.status > 299 {
				t.Errorf("A's own collection %s %s: %s", rt.method, path, r)
			}
		}
	}
}

// walkOwnObjects (b) and (c): A's own objects with a token lacking the scope are 403 before anything
// happens; a body smuggling B's ids is refused or ignored.
func (w *isoWorld) walkOwnObjects(t *testing.T, rt walkedRoute, scope string, body func() any) {
	own := combos(rt.pattern, w.a.ids, w.a.tenant)[0]
	path := fill(rt.pattern, own)

	// A body smuggling B's ids (fields the route does not take, or might): refused or ignored, never
	// acting on B (B's rows are compared at the end).
	if m, ok := body().(map[string]any); ok && scope != "admin" {
		m["tenant_id"], m["subscription_id"], m["delivery_id"] = w.b.tenant, w.b.deadSub, w.b.dead
		if r := w.call(t, "a body naming B", rt.method, path, w.a.full, m); r.status >= 400 {
			wantError(t, "a body naming B: "+rt.method+" "+path, r, "INVALID_REQUEST")
		}
	}
	if scope == "admin" {
		for _, tok := range append([]string{w.a.full}, mapValues(w.a.only)...) {
			w.expect(t, "tenant token on an admin route", rt.method, path, tok, body(), "FORBIDDEN")
		}
		return
	}
	w.expect(t, "token lacking "+scope, rt.method, path, w.a.lacking[scope], body(), "FORBIDDEN")
	for _, sc := range tenants.AllScopes {
		if sc != scope {
			w.expect(t, "token with only "+sc+" (route needs "+scope+")", rt.method, path, w.a.only[sc], body(), "FORBIDDEN")
		}
	}
}

// checkNoLeak fails when an answer holds one of B's strings that the request did not itself carry.
func (w *isoWorld) checkNoLeak(t *testing.T, what, path string, body any, r reply) {
	t.Helper()
	sent := path + " " + fmt.Sprint(body)
	for _, s := range w.b.secrets {
		if s != "" && !strings.Contains(sent, s) && strings.Contains(string(r.body), s) {
			t.Errorf("%s: the answer holds tenant B's %q: %s", what, s, r)
		}
	}
	if r.status >= 500 {
		t.Errorf("%s: %s", what, r)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
