package web_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/web"
)

// The dashboard's tenant-isolation walk: every route the dashboard registers is visited by a customer of
// tenant A with tenant B's ids (and B's tenant in forms and queries). A route added to internal/web/web.go
// without an entry in webIsolationRoutes fails TestWebIsolationWalkCoversEveryRoute.

// webRoute says how the walk fills in one dashboard route.
type webRoute struct {
	// params says what each path parameter names: "subscription", "delivery", "event", "tenant", "replay",
	// "token" or "user" (nil for routes without one), or "event type": a type of the catalogue, which is
	// no tenant's (the walk fills in a registered one; the route's form names B's objects).
	params map[string]string
	// access: "public" (no sign-in needed), "customer" (a signed-in customer's own pages), "admin"
	// (operators only: a customer gets the 404 page).
	access string
	// form is a valid form (POST) or query (GET) for the route, naming B where it can.
	form func(w *webIsoWorld) url.Values
	// status is what A's customer gets with form (0: 200).
	status int
}

// webIsolationRoutes are the dashboard routes the walk knows, keyed "METHOD pattern" as chi registers them.
var webIsolationRoutes = map[string]webRoute{
	"GET /static/*":                   {access: "public"},
	"GET /favicon.ico":                {access: "public"},
	"GET /login":                      {access: "public"},
	"POST /login":                     {access: "public"},
	"GET /logout":                     {access: "public"},
	"POST /logout":                    {access: "public"},
	"GET /portal/{token}":             {access: "portal"}, // a portal link's token, not an object's id
	"GET /":                           {access: "customer"},
	"GET /subscriptions/{id}":         {access: "customer", params: idParam("subscription"), form: filterQuery},
	"POST /subscriptions/{id}/pause":  {access: "customer", params: idParam("subscription")},
	"POST /subscriptions/{id}/resume": {access: "customer", params: idParam("subscription")},
	"POST /subscriptions/{id}/test":   {access: "customer", params: idParam("subscription")},
	// Endpoint self-service: B's subscription is the 404 page whatever is posted, and nothing of it
	// changes (the snapshot of B's rows after the walk); A's own form pages answer.
	"GET /subscriptions/new": {access: "customer"},
	"POST /subscriptions": {access: "customer", status: http.StatusSeeOther, form: func(w *webIsoWorld) url.Values {
		return url.Values{"url": {w.e.recv.URL + "/iso-walk/created"}, "description": {"created by the walk"}, "event_types": {"iso.none"}}
	}},
	"POST /subscriptions/{id}": {access: "customer", params: idParam("subscription"), form: func(w *webIsoWorld) url.Values {
		return url.Values{"url": {"http://127.0.0.1:9/hijacked"}, "description": {"changed through another tenant"},
			"header_name": {"X-Hijack"}, "header_value": {"1"}}
	}},
	// Test filter shows A's own form again with the result; B's subscription is the 404 page.
	"POST /subscriptions/filter-test":        {access: "customer", form: filterTestForm},
	"POST /subscriptions/{id}/filter-test":   {access: "customer", params: idParam("subscription"), form: filterTestForm},
	"GET /subscriptions/{id}/edit":           {access: "customer", params: idParam("subscription")},
	"GET /subscriptions/{id}/delete":         {access: "customer", params: idParam("subscription")},
	"POST /subscriptions/{id}/delete":        {access: "customer", params: idParam("subscription")},
	"POST /subscriptions/{id}/secret":        {access: "customer", params: idParam("subscription")},
	"POST /subscriptions/{id}/rotate-secret": {access: "customer", params: idParam("subscription")},
	"GET /deliveries/{id}":                   {access: "customer", params: idParam("delivery")},
	"GET /events/{id}":                       {access: "customer", params: idParam("event")},
	// The Deliveries page filtered to B's subscription and event: "No such subscription" (404), listing
	// nothing of B's.
	"GET /deliveries": {access: "customer", status: http.StatusNotFound, form: func(w *webIsoWorld) url.Values {
		return url.Values{"subscription": {w.b.dead.String()}, "event_id": {w.b.events[1].String()}, "state": {"dead"}}
	}},
	// The search with B's ids is TestFindIsolation's; the walk checks the empty search.
	"GET /find":        {access: "customer"},
	"GET /activity":    {access: "customer"},
	"GET /event-types": {access: "customer"},
	// Send example to B's subscription: the 404 page, and nothing sent.
	"POST /event-types/{name}/send": {access: "customer", params: map[string]string{"name": eventTypeParam}, status: http.StatusNotFound,
		form: func(w *webIsoWorld) url.Values { return url.Values{"subscription_id": {w.b.active.String()}} }},
	"POST /deliveries/{id}/resend": {access: "customer", params: idParam("delivery")},
	// Skip a blocked key of B's subscription, naming B's dead delivery: the 404 page, nothing discarded.
	"POST /subscriptions/{id}/skip-key": {access: "customer", params: idParam("subscription"), form: func(w *webIsoWorld) url.Values {
		return url.Values{"delivery_id": {w.b.deadDelivery.String()}, "ordering_key": {"iso-key"}}
	}},
	"POST /deliveries/{id}/retry-now": {access: "customer", params: idParam("delivery")},
	"POST /subscriptions/{id}/recover": {access: "customer", params: idParam("subscription"), form: func(w *webIsoWorld) url.Values {
		return url.Values{"since": {w.since}, "action": {"confirm"}}
	}},
	"GET /admin":              {access: "admin", form: func(*webIsoWorld) url.Values { return url.Values{"sort": {"dead"}} }},
	"GET /admin/tenants/{id}": {access: "admin", params: idParam("tenant")},
	"GET /admin/dead":         {access: "admin", form: deadQuery},
	"GET /admin/replay":       {access: "admin", form: deadQuery},
	"POST /admin/replay": {access: "admin", form: func(w *webIsoWorld) url.Values {
		v := deadQuery(w)
		v.Set("action", "confirm")
		v.Set("spread", "0")
		return v
	}},
	"GET /admin/replays":                             {access: "admin"},
	"POST /admin/tenants/{id}/tokens/{token}/revoke": {access: "admin", params: map[string]string{"id": "tenant", "token": "token"}},
	"GET /admin/replays/{id}":                        {access: "admin", params: idParam("replay")},
	"GET /admin/tenants/new":                         {access: "admin"},
	"POST /admin/tenants": {access: "admin", form: func(*webIsoWorld) url.Values {
		return url.Values{"name": {"created by the walk"}}
	}},
	"GET /admin/tenants/{id}/users":    {access: "admin", params: idParam("tenant")},
	"GET /admin/tenants/{id}/activity": {access: "admin", params: idParam("tenant")},
	"POST /admin/tenants/{id}/users": {access: "admin", params: idParam("tenant"), form: func(w *webIsoWorld) url.Values {
		return url.Values{"email": {"walk-" + w.b.marker + "@example.com"}, "password": {"a walk password"}}
	}},
	"POST /admin/tenants/{id}/users/{user}/remove": {access: "admin", params: map[string]string{"id": "tenant", "user": "user"}},
	"POST /admin/tenants/{id}/users/{user}/password": {access: "admin", params: map[string]string{"id": "tenant", "user": "user"},
		form: func(*webIsoWorld) url.Values { return url.Values{"password": {"a walk password"}} }},
	"GET /admin/tenants/{id}/tokens/new": {access: "admin", params: idParam("tenant")},
	"POST /admin/tenants/{id}/tokens": {access: "admin", params: idParam("tenant"), form: func(*webIsoWorld) url.Values {
		return url.Values{"name": {"walk token"}, "scope": {"deliveries:read"}}
	}},
	// A customer's own recover; a bulk replay's id, or another tenant's recover, is the 404 page.
	"GET /recovers/{id}": {access: "customer", params: idParam("replay")},
}

// eventTypeParam names a path parameter that is an event type of the catalogue: global, no tenant's.
const eventTypeParam = "event type"

// onlyGlobalParams says whether every parameter of a route is global (an event type), so the route is
// walked as a tenant-less one with the walk's registered type filled in.
func onlyGlobalParams(params map[string]string) bool {
	for _, kind := range params {
		if kind != eventTypeParam {
			return false
		}
	}
	return len(params) > 0
}

// idParam is the params of a route whose one parameter {id} names a kind of object.
func idParam(kind string) map[string]string { return map[string]string{"id": kind} }

func filterQuery(*webIsoWorld) url.Values { return url.Values{"state": {"dead"}} }

// filterTestForm tests a filter against the walk's registered type's example.
func filterTestForm(w *webIsoWorld) url.Values {
	return url.Values{"url": {w.e.recv.URL + "/iso-walk/filter-test"}, "filter": {`{"data": {"n": 1}}`}, "filter_test_type": {w.eventType}}
}

func deadQuery(w *webIsoWorld) url.Values {
	return url.Values{"tenant": {w.b.ID.String()}, "from": {w.since}, "to": {time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04")}}
}

// webIsoTenant is one tenant's objects.
type webIsoTenant struct {
	tenant
	marker                    string
	active, dead, paused      uuid.UUID // subscriptions
	delivered, deadDelivery   uuid.UUID
	recoverReplay, bulkReplay uuid.UUID
	events                    []uuid.UUID         // of delivered, deadDelivery
	ids                       map[string][]string // kind → ids
	secrets                   []string
	description               string
}

type webIsoWorld struct {
	e     *env
	a, b  *webIsoTenant
	since string // an hour ago, as the forms take it
	// eventType is a registered type with an example, for routes naming one.
	eventType string
}

var webParamRE = regexp.MustCompile(`\{([^}:]+)(?::[^}]*)?\}`)

type walkedWebRoute struct{ key, method, pattern string }

// walkWeb walks the dashboard's router as web.go builds it.
func walkWeb(t *testing.T, e *env) []walkedWebRoute {
	t.Helper()
	h := web.New(web.Options{Sessions: e.srv.Sessions, LoginThrottle: e.srv.LoginThrottle, Activity: e.srv.Activity, Tenants: e.srv.Tenants, Subscriptions: e.srv.Subscriptions,
		Deliveries: e.srv.Deliveries, Replays: e.srv.Replays, Publisher: e.srv.Publisher})
	r, ok := h.Routes().(chi.Routes)
	if !ok {
		t.Fatal("web Routes() is not a chi router")
	}
	var out []walkedWebRoute
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, walkedWebRoute{key: method + " " + route, method: method, pattern: route})
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// TestWebIsolationWalkCoversEveryRoute fails when the dashboard registers a route the walk does not know,
// or the walk lists one that is gone.
func TestWebIsolationWalkCoversEveryRoute(t *testing.T) {
	e := setup(t, httpOnly, nil)
	walked := map[string]bool{}
	for _, rt := range walkWeb(t, e) {
		walked[rt.key] = true
		spec, ok := webIsolationRoutes[rt.key]
		if !ok {
			t.Errorf("dashboard route %s is not known to the isolation walk: add it to webIsolationRoutes", rt.key)
			continue
		}
		params := webParamRE.FindAllStringSubmatch(rt.pattern, -1)
		known := len(params) == len(spec.params)
		for _, p := range params {
			kind, ok := spec.params[p[1]]
			known = known && ok && slices.Contains([]string{"subscription", "delivery", "event", "tenant", "replay", "token", "user", eventTypeParam}, kind)
		}
		if !known && spec.access != "portal" {
			t.Errorf("dashboard route %s: the walk fills in %v, the route has parameters %v", rt.key, spec.params, params)
		}
	}
	for k := range webIsolationRoutes {
		if !walked[k] {
			t.Errorf("webIsolationRoutes lists %s, which the dashboard does not register", k)
		}
	}
}

func newWebIsoTenant(w *webIsoWorld, label string) *webIsoTenant {
	e := w.e
	t := e.t
	t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	mark := "iso" + label + "-" + uuid.NewString()[:8]
	tn := &webIsoTenant{tenant: e.newTenant("Tenant " + mark), marker: mark, description: "description " + mark}
	tn.active = e.newSubscription(tn.tenant, "/"+mark+"/ok", tn.description, "iso.ok").ID
	tn.dead = e.newSubscription(tn.tenant, "/bad/"+mark, "", "iso.bad").ID
	tn.paused = e.newSubscription(tn.tenant, "/"+mark+"/paused", "", "iso.paused").ID
	if _, err := e.srv.Subscriptions.Pause(ctx, tn.ID, tn.paused); err != nil {
		t.Fatal(err)
	}
	tn.delivered = e.publishTo(tn.tenant, tn.active, "iso.ok", map[string]any{"secret": "payload-" + mark})
	tn.deadDelivery = e.publishTo(tn.tenant, tn.dead, "iso.bad", map[string]any{"secret": "payload-" + mark})
	e.waitState(tn.tenant, tn.delivered, delivery.Delivered)
	e.waitState(tn.tenant, tn.deadDelivery, delivery.Failed)
	for _, id := range []uuid.UUID{tn.delivered, tn.deadDelivery} {
		d, err := e.srv.Deliveries.Get(ctx, tn.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		tn.events = append(tn.events, d.EventID)
	}
	since, _ := time.Parse("2006-01-02T15:04", w.since)
	rec, err := e.srv.Replays.Recover(ctx, tn.ID, tn.dead, since, true, tn.Email)
	if err != nil {
		t.Fatal(err)
	}
	tn.recoverReplay = rec.ID
	to := time.Now().Add(time.Hour)
	bulk, err := e.srv.Replays.Start(ctx, replays.ReplayRequest{Filter: replays.DeadFilter{TenantID: &tn.ID,
		CreatedFrom: &since, CreatedTo: &to}, DryRun: true, Actor: "ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tn.bulkReplay = bulk.ID
	tok, err := e.srv.Tenants.CreateToken(ctx, tn.ID, "token "+mark, []string{"deliveries:read"})
	if err != nil {
		t.Fatal(err)
	}
	users, err := e.srv.Tenants.ListUsers(ctx, tn.ID)
	if err != nil || len(users) != 1 {
		t.Fatalf("the tenant's users: %v, %v", users, err)
	}
	tn.ids = map[string][]string{
		"user":         {users[0].ID.String()},
		"token":        {tok.ID.String()},
		"subscription": {tn.active.String(), tn.dead.String(), tn.paused.String()},
		"delivery":     {tn.delivered.String(), tn.deadDelivery.String()},
		"tenant":       {tn.ID.String()},
		"replay":       {tn.recoverReplay.String(), tn.bulkReplay.String()},
		"event":        {tn.events[0].String(), tn.events[1].String()},
	}
	tn.secrets = []string{tn.ID.String(), "Tenant " + mark, mark, tn.description, tn.Email,
		tn.active.String(), tn.dead.String(), tn.paused.String(), tn.delivered.String(), tn.deadDelivery.String(),
		tn.recoverReplay.String(), tn.bulkReplay.String(), tok.ID.String(), tok.Token, tn.events[0].String(), tn.events[1].String()}
	return tn
}

// snapshot is every row of the tenant's, in every table, as JSON.
func (w *webIsoWorld) snapshot(tenantID uuid.UUID) map[string]string {
	w.e.t.Helper()
	out := map[string]string{}
	for table, where := range map[string]string{
		"tenants":              "id = $1",
		"api_tokens":           "tenant_id = $1",
		"users":                "tenant_id = $1",
		"subscriptions":        "tenant_id = $1",
		"subscription_secrets": "subscription_id IN (SELECT id FROM subscriptions WHERE tenant_id = $1)",
		"events":               "tenant_id = $1",
		"replays":              "tenant_id = $1",
		"webhook_deliveries":   "tenant_id = $1",
		"webhook_attempts":     "tenant_id = $1",
	} {
		var s string
		q := fmt.Sprintf(`SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY to_jsonb(x)::text), '[]')::text FROM %s x WHERE %s`, table, where)
		if err := w.e.srv.Pool.QueryRow(context.Background(), q, tenantID).Scan(&s); err != nil {
			w.e.t.Fatalf("snapshot %s: %v", table, err)
		}
		out[table] = s
	}
	return out
}

// replayCount is how many replays exist (a customer must not start one of any tenant's).
func (w *webIsoWorld) replayCount() int {
	var n int
	if err := w.e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM replays`).Scan(&n); err != nil {
		w.e.t.Fatal(err)
	}
	return n
}

// webCombo is one assignment of ids to a route's parameters: owners is "A", "B" or "mixed"; first marks
// the first all-A one.
type webCombo struct {
	ids    map[string]string
	owners string
	first  bool
}

// webCombos are every assignment of A's and B's ids to the parameters.
func webCombos(params map[string]string, a, b *webIsoTenant) []webCombo {
	type partial struct {
		ids    map[string]string
		owners map[string]bool
	}
	out := []partial{{ids: map[string]string{}, owners: map[string]bool{}}}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		var next []partial
		for _, c := range out {
			for _, tn := range []*webIsoTenant{a, b} {
				for _, id := range tn.ids[params[name]] {
					n := partial{ids: maps.Clone(c.ids), owners: maps.Clone(c.owners)}
					n.ids[name] = id
					n.owners[map[bool]string{true: "A", false: "B"}[tn == a]] = true
					next = append(next, n)
				}
			}
		}
		out = next
	}
	var combos []webCombo
	firstA := true
	for _, c := range out {
		wc := webCombo{ids: c.ids, owners: "mixed"}
		switch {
		case !c.owners["B"]:
			wc.owners, wc.first, firstA = "A", firstA, false
		case !c.owners["A"]:
			wc.owners = "B"
		}
		combos = append(combos, wc)
	}
	return combos
}

// fillWeb puts ids into a route pattern.
func fillWeb(pattern string, ids map[string]string) string {
	return webParamRE.ReplaceAllStringFunc(pattern, func(m string) string { return ids[webParamRE.FindStringSubmatch(m)[1]] })
}

// noFollow is a client of the signed-in customer that does not follow redirects, so each answer is the
// route's own.
func (c *client) noFollow() *client {
	hc := *c.http
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{e: c.e, t: c.t, http: &hc}
}

// TestWebIsolationWalk: a customer of tenant A visits every dashboard route with B's ids (every assignment
// of A's and B's ids to a route's parameters but A's own), B's tenant in forms and queries, and every
// operator page; an operator visits every route whose parameters mix two tenants' ids (A's tenant with B's
// token). Each answer with an id of B's, or mixing tenants, is the 404 page; every operator page is the 404
// page for a customer; no page shows the customer B's names, ids, urls or payloads; and B's rows
// (subscription states, deliveries, replays, tokens, secrets) are unchanged afterwards, with no replay
// started and no request sent to B's endpoints.
func TestWebIsolationWalk(t *testing.T) {
	e := setup(t, withBackground, withAdmin)
	w := &webIsoWorld{e: e, since: time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04")}
	w.a = newWebIsoTenant(w, "a")
	w.b = newWebIsoTenant(w, "b")
	w.eventType = "iso" + uuid.NewString()[:8] + ".example"
	if _, err := e.srv.Catalogue.Create(context.Background(), catalogue.Input{Name: w.eventType, Example: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	before, replaysBefore := w.snapshot(w.b.ID), w.replayCount()
	hitsBefore := e.recv.count("/"+w.b.marker) + e.recv.count("/bad/"+w.b.marker)

	customer := e.client()
	customer.login(w.a.Email)
	operator := e.client()
	operator.login(adminEmail)
	clients := map[string]*client{"A's customer": customer.noFollow(), "an operator": operator.noFollow()}
	v := &isoWalker{t: t, w: w, clients: clients}

	routes := walkWeb(t, e)
	for _, rt := range routes {
		v.route(rt)
	}

	// Nothing of B's changed, no replay was started, nothing was sent to B's endpoints. Nothing is left to
	// wait for: a wrongly accepted resend, test event or replay changes B's deliveries, events or the
	// replays in its request's own transaction, before it answers, so the snapshot shows it now.
	after := w.snapshot(w.b.ID)
	for table, rows := range before {
		if after[table] != rows {
			t.Errorf("tenant B's %s changed during the walk:\nbefore %.2000s\nafter  %.2000s", table, rows, after[table])
		}
	}
	if got := w.replayCount(); got != replaysBefore {
		t.Errorf("%d replays were started during the walk", got-replaysBefore)
	}
	if h := e.recv.count("/"+w.b.marker) + e.recv.count("/bad/"+w.b.marker); h != hitsBefore {
		t.Errorf("B's endpoints got %d requests during the walk", h-hitsBefore)
	}
	if s, err := e.srv.Subscriptions.Get(context.Background(), w.b.ID, w.b.paused); err != nil || s.State != "paused" {
		t.Errorf("B's paused subscription: %v %+v", err, s)
	}
	t.Logf("%d dashboard routes walked, %d requests", len(routes), v.n)
}

// isoWalker makes the walk's requests as A's customer or an operator (clients), counting them (n): no page
// may show A's customer one of tenant B's secrets, and none may fail.
type isoWalker struct {
	t       *testing.T
	w       *webIsoWorld
	clients map[string]*client
	n       int
}

func (v *isoWalker) visit(who, method, path string, form url.Values) *page {
	v.t.Helper()
	w := v.w
	v.n++
	c := v.clients[who]
	var p *page
	if method == http.MethodGet {
		if len(form) > 0 {
			path += "?" + form.Encode()
		}
		p = c.get(path)
	} else {
		p = c.post(path, form)
	}
	sent := path + " " + form.Encode()
	for _, s := range w.b.secrets {
		if who == "A's customer" && !strings.Contains(sent, s) && !strings.Contains(sent, url.QueryEscape(s)) && strings.Contains(p.Body, s) {
			v.t.Errorf("%s %s as %s: the page holds tenant B's %q", method, path, who, s)
		}
	}
	if p.Status >= 500 {
		v.t.Errorf("%s %s as %s: %d", method, path, who, p.Status)
	}
	return p
}

func (v *isoWalker) want404(who, method, path string, form url.Values) {
	v.t.Helper()
	p := v.visit(who, method, path, form)
	if p.Status != http.StatusNotFound || !strings.Contains(p.text(), "Page not found") {
		v.t.Errorf("%s %s as %s: want the 404 page, got %d %.200q", method, path, who, p.Status, p.text())
	}
}

// route makes the requests of one route: with B's ids and mixed ids where it takes ids, as the
// route's access allows.
func (v *isoWalker) route(rt walkedWebRoute) {
	t, w, e := v.t, v.w, v.w.e
	spec, ok := webIsolationRoutes[rt.key]
	if !ok {
		return // TestWebIsolationWalkCoversEveryRoute reports it
	}
	var form url.Values
	if spec.form != nil {
		form = spec.form(w)
	}
	path := rt.pattern
	if onlyGlobalParams(spec.params) {
		ids := map[string]string{}
		for name := range spec.params {
			ids[name] = w.eventType
		}
		path = fillWeb(rt.pattern, ids)
	}
	switch {
	case spec.access == "portal":
		// Whoever asks, an unknown link is the 410 page and shows no tenant's data.
		if p := v.visit("A's customer", rt.method, "/portal/"+w.b.marker, nil); p.Status != http.StatusGone {
			t.Errorf("GET /portal/<unknown> as A's customer: %d, want 410", p.Status)
		}
	case len(spec.params) > 0 && !onlyGlobalParams(spec.params):
		for _, c := range webCombos(spec.params, w.a, w.b) {
			path := fillWeb(rt.pattern, c.ids)
			switch {
			case c.owners == "B":
				// B's objects: the 404 page for A's customer.
				v.want404("A's customer", rt.method, path, form)
			case c.owners == "mixed":
				// One tenant's object under another's: the 404 page, for an operator too.
				v.want404("A's customer", rt.method, path, form)
				v.want404("an operator", rt.method, path, form)
			case c.first && rt.method == http.MethodGet && spec.access == "customer":
				// A's own object answers (so the 404s are about B's ids, not a broken session).
				if p := v.visit("A's customer", rt.method, path, nil); p.Status != http.StatusOK {
					t.Errorf("GET %s, A's own: %d", path, p.Status)
				}
			}
		}
	case spec.access == "admin":
		v.want404("A's customer", rt.method, rt.pattern, form)
		v.want404("A's customer", rt.method, rt.pattern, nil)
	case spec.access == "customer":
		want := cmp.Or(spec.status, http.StatusOK)
		if p := v.visit("A's customer", rt.method, path, form); p.Status != want {
			t.Errorf("%s %s as A's customer: %d, want %d", rt.method, path, p.Status, want)
		}
	case rt.key == "POST /logout" || rt.key == "POST /login":
		// Signing in and out: on a client of its own, so the walk's session stays.
		other := e.client()
		other.login(w.a.Email)
		oc := &client{e: e, t: t, http: other.http}
		form := url.Values{"email": {w.a.Email}, "password": {password}, "next": {"/subscriptions/" + w.b.active.String()}}
		if p := oc.post(strings.TrimPrefix(rt.key, "POST "), form); p.Status >= 500 ||
			(rt.key == "POST /login" && (p.Status != http.StatusNotFound || strings.Contains(p.Body, w.b.marker))) {
			t.Errorf("%s (next=B's subscription): %d at %s", rt.key, p.Status, p.URL)
		}
		v.n++
	default:
		path := strings.Replace(rt.pattern, "*", "app.css", 1)
		v.visit("A's customer", rt.method, path, form)
	}
}
