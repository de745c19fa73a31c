package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

// newPollingSubscription makes a polling subscription through the service, as the API does.
func (e *env) newPollingSubscription(tn tenant, description string, eventTypes ...string) subscriptions.Subscription {
	e.t.Helper()
	if eventTypes == nil {
		eventTypes = []string{}
	}
	typ := subscriptions.Polling
	s, _, err := e.srv.Subscriptions.Create(setupCtx(), tn.ID, subscriptions.Input{Type: &typ, Description: &description, EventTypes: &eventTypes})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// pollAndCommit pulls want deliveries as the consumer (polling again while fewer are ready: a transaction
// still open anywhere on the shared database holds polls back) and commits the cursor answered; it
// returns the ids pulled.
func (e *env) pollAndCommit(tn tenant, subID uuid.UUID, consumer string, want int, commit bool) []uuid.UUID {
	e.t.Helper()
	var page polling.Page
	eventually(e.t, 30*time.Second, 20*time.Millisecond, func() bool {
		var err error
		if page, err = e.srv.Polling.Poll(context.Background(), tn.ID, subID, consumer, want); err != nil {
			e.t.Fatal(err)
		}
		return len(page.Data) == want
	}, func() string { return fmt.Sprintf("%s pulled %d of %d deliveries", consumer, len(page.Data), want) })
	var ids []uuid.UUID
	for _, it := range page.Data {
		ids = append(ids, it.DeliveryID)
	}
	if commit {
		if err := e.srv.Polling.Commit(context.Background(), tn.ID, subID, consumer, page.Cursor); err != nil {
			e.t.Fatal(err)
		}
	}
	return ids
}

// The form creates a polling subscription without a URL, posted as a browser without script posts the
// whole form (every section's defaults); a push-only field filled in for polling is refused beside it,
// nothing saved; editing shows the type without offering to change it.
func TestPollingEndpointForm(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("polling form")
	c := e.client()
	c.login(tn.Email)

	form := c.get("/subscriptions/new")
	choice := one(t, form.Doc, "type-choice")
	if !hasAttr(one(t, choice, "type-webhook"), "checked") || hasAttr(one(t, choice, "type-polling"), "checked") {
		t.Errorf("a new form does not start on 'Hookline sends to my URL'")
	}
	for _, id := range []string{"push-only-url", "push-only-sending", "push-only-schedule"} {
		one(t, form.Doc, id) // without script every part shows (with its note); app.js hides them for polling
	}

	// What a browser without script posts: every section's defaults, the URL left empty.
	posted := func(typ string, change func(url.Values)) url.Values {
		v := url.Values{"type": {typ}, "url": {""}, "description": {"Laptop"}, "event_types": {"invoice.*"},
			"header_name": {"", ""}, "header_value": {"", ""}, "rate_limit_per_second": {""}, "auth_type": {""},
			"auth_client_auth": {"basic"}, "filter": {""}, "retry_schedule_kind": {"standard"}, "retry_schedule": {""}}
		if change != nil {
			change(v)
		}
		return v
	}
	nc := noRedirects(c)
	before := e.subscriptionCount(tn)
	refusals := []struct {
		name, field, want string
		change            func(url.Values)
	}{
		{"url", "endpoint-url-error", "does not apply", func(v url.Values) { v.Set("url", e.recv.URL+"/x") }},
		{"rate limit", "endpoint-rate-error", "does not apply", func(v url.Values) { v.Set("rate_limit_per_second", "10") }},
		{"header", "headers-error", "does not apply", func(v url.Values) { v["header_name"] = []string{"X-Key", ""}; v["header_value"] = []string{"k", ""} }},
		{"authentication", "auth-error", "does not apply", func(v url.Values) {
			v.Set("auth_type", "basic")
			v.Set("auth_username", "u")
			v.Set("auth_password", "p")
		}},
		{"retry schedule", "schedule-delays-error", "does not apply", func(v url.Values) {
			v.Set("retry_schedule_kind", "custom")
			v.Set("retry_schedule", "1m")
		}},
		{"unknown type", "type-error", "webhook or polling", func(v url.Values) { v.Set("type", "carrier-pigeon") }},
	}
	for _, tc := range refusals {
		r := nc.post("/subscriptions", posted(subscriptions.Polling, tc.change))
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", tc.name, r.Status)
			continue
		}
		msg := byTestID(r.Doc, tc.field)
		if len(msg) != 1 || !strings.Contains(text(msg[0]), tc.want) {
			t.Errorf("%s: %s says %q, want %q beside the field; page: %s", tc.name, tc.field, texts(msg), tc.want, r.text())
		}
		if tc.name != "unknown type" && !hasAttr(one(t, r.Doc, "type-polling"), "checked") {
			t.Errorf("%s: the form shown again lost the polling choice", tc.name)
		}
	}
	if n := e.subscriptionCount(tn); n != before {
		t.Fatalf("refused forms saved %d subscriptions", n-before)
	}
	// A webhook one still needs its URL.
	if r := nc.post("/subscriptions", posted(subscriptions.Webhook, nil)); r.Status != http.StatusBadRequest || len(byTestID(r.Doc, "endpoint-url-error")) != 1 {
		t.Errorf("a webhook endpoint without a URL: %d", r.Status)
	}

	r := nc.post("/subscriptions", posted(subscriptions.Polling, nil))
	if r.Status != http.StatusSeeOther {
		t.Fatalf("create polling: %d %s", r.Status, r.text())
	}
	id := uuid.MustParse(strings.TrimPrefix(r.Header.Get("Location"), "/subscriptions/"))
	s, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != subscriptions.Polling || s.URL != "" || s.Description != "Laptop" || len(s.EventTypes) != 1 || s.EventTypes[0] != "invoice.*" {
		t.Errorf("stored %+v", s)
	}
	if flash := text(one(t, c.get(r.Header.Get("Location")).Doc, "flash")); !strings.HasPrefix(flash, "Polling subscription added.") {
		t.Errorf("flash %q", flash)
	}

	// Editing: the type is told, not offered; no URL or sending section; a change saves and keeps the type.
	edit := c.get("/subscriptions/" + id.String() + "/edit")
	if fixed := one(t, edit.Doc, "type-fixed"); attr(fixed, "data-type") != subscriptions.Polling || !strings.Contains(text(fixed), "cannot be changed") {
		t.Errorf("edit form's type: %q", text(fixed))
	}
	for _, id := range []string{"type-choice", "type-polling", "endpoint-url", "push-only-url", "push-only-sending", "push-only-schedule", "auth-section"} {
		if n := len(byTestID(edit.Doc, id)); n != 0 {
			t.Errorf("the edit form of a polling subscription has %s", id)
		}
	}
	if len(findAll(edit.Doc, func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "name") == "url" })) != 0 {
		t.Errorf("the edit form of a polling subscription has a url field")
	}
	r = nc.post("/subscriptions/"+id.String(), url.Values{"description": {"Laptop 2"}, "event_types": {"invoice.paid"}, "filter": {""},
		"type": {subscriptions.Webhook}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", r.Status, r.text())
	}
	if s, _ = e.srv.Subscriptions.Get(context.Background(), tn.ID, id); s.Type != subscriptions.Polling || s.Description != "Laptop 2" {
		t.Errorf("after edit: type %s, description %q", s.Type, s.Description)
	}
	// A URL posted to a polling subscription's edit (no form offers one) is refused beside the form.
	r = nc.post("/subscriptions/"+id.String(), url.Values{"description": {"Laptop 3"}, "url": {e.recv.URL + "/y"}})
	if r.Status != http.StatusBadRequest || !strings.Contains(r.text(), "does not apply") {
		t.Errorf("a URL on a polling subscription's edit: %d", r.Status)
	}
}

// A polling subscription's page: pulled, not sent (no URL, Send test event, push-only settings); how to
// pull; its consumers with their cursor in words, last commit and poll, and lag; the empty state before.
func TestPollingEndpointPage(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("polling page")
	s := e.newPollingSubscription(tn, "Batch importer", "invoice.paid")
	var ids []uuid.UUID
	for i := range 3 {
		ids = append(ids, e.publish(tn, "invoice.paid", map[string]any{"n": i})...)
	}
	c := e.client()
	c.login(tn.Email)
	page := c.get("/subscriptions/" + s.ID.String())
	if page.Status != http.StatusOK {
		t.Fatalf("page: %d", page.Status)
	}
	if got := text(one(t, page.Doc, "pulled")); !strings.Contains(got, "Pulled by consumers") {
		t.Errorf("pulled line %q", got)
	}
	for _, id := range []string{"url", "send-test", "delivery-settings", "custom-headers", "rate-limit", "auth-line", "schedule-line", "circuit"} {
		if len(byTestID(page.Doc, id)) != 0 {
			t.Errorf("a polling subscription's page shows %s", id)
		}
	}
	one(t, page.Doc, "polling-settings")
	one(t, page.Doc, "expiry-line")
	wantPoll := "/api/v1/tenants/" + tn.ID.String() + "/subscriptions/" + s.ID.String() + "/poll"
	if got := text(one(t, page.Doc, "poll-path")); !strings.Contains(got, "GET "+wantPoll+"?consumer=") {
		t.Errorf("poll path %q, want GET %s", got, wantPoll)
	}
	if got := text(one(t, page.Doc, "commit-path")); !strings.Contains(got, "/consumers/{name}/commit") {
		t.Errorf("commit path %q", got)
	}
	if got := text(one(t, page.Doc, "pull-example")); !strings.Contains(got, "curl") || !strings.Contains(got, wantPoll) {
		t.Errorf("pull example %q", got)
	}
	one(t, page.Doc, "listen-hint")
	if got := text(one(t, page.Doc, "no-consumers")); !strings.HasPrefix(got, "No consumer has polled yet") {
		t.Errorf("empty state %q", got)
	}
	if got := text(one(t, page.Doc, "contract")); !strings.Contains(got, "How pulling works") || strings.Contains(got, "We POST") {
		t.Errorf("contract %q", got)
	}
	for _, row := range byTestID(page.Doc, "delivery-row") {
		if !strings.Contains(text(row), "waits to be pulled") {
			t.Errorf("a pending polling delivery's row: %q", text(row))
		}
	}

	// worker-1 pulls two and commits them; idle only polls.
	pulled := e.pollAndCommit(tn, s.ID, "worker-1", 2, true)
	if len(pulled) != 2 || pulled[0] != ids[0] || pulled[1] != ids[1] {
		t.Fatalf("pulled %v, want the first two of %v", pulled, ids)
	}
	// A new consumer starts at the oldest delivery not yet delivered: the third.
	e.pollAndCommit(tn, s.ID, "idle", 1, false)
	page = c.get("/subscriptions/" + s.ID.String())
	if len(byTestID(page.Doc, "no-consumers")) != 0 {
		t.Errorf("the empty state shows beside consumers")
	}
	rows := map[string]string{}
	lags := map[string]string{}
	for _, row := range byTestID(page.Doc, "consumer") {
		name := attr(row, "data-name")
		rows[name] = text(row)
		lags[name] = attr(one(t, row, "consumer-lag"), "data-lag")
	}
	if w := rows["worker-1"]; !strings.Contains(w, "after the delivery of invoice.paid created") || !strings.Contains(w, "UTC") {
		t.Errorf("worker-1's cursor: %q", w)
	}
	if w := rows["worker-1"]; strings.Contains(w, "never") {
		t.Errorf("worker-1 committed and polled, its row says never: %q", w)
	}
	if lags["worker-1"] != "1" || !strings.Contains(rows["worker-1"], "1 delivery after its cursor") {
		t.Errorf("worker-1's lag %s: %q", lags["worker-1"], rows["worker-1"])
	}
	if i := rows["idle"]; !strings.Contains(i, "not committed yet") || lags["idle"] != "1" {
		t.Errorf("idle's row (lag %s): %q", lags["idle"], i)
	}
	// The health card counts commits as delivered and shows no latency.
	if got := text(one(t, page.Doc, "health-card")); !strings.Contains(got, "committed") {
		t.Errorf("health card %q", got)
	}

	// Home: named by description, pulled line instead of a URL.
	home := c.get("/")
	for _, card := range byTestID(home.Doc, "subscription") {
		if attr(card, "data-id") != s.ID.String() {
			continue
		}
		if len(byTestID(card, "url")) != 0 || !strings.Contains(text(one(t, card, "pulled")), "Pulled by consumers") {
			t.Errorf("home card: %q", text(card))
		}
	}
}

// A polling delivery's page: a pending one waits to be pulled (no next attempt, no Retry now); a
// committed one names its consumer; neither pretends a request was sent. A polling subscription without a
// description is named, never by an empty URL.
func TestPollingDeliveryPage(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("polling delivery")
	s := e.newPollingSubscription(tn, "", "order.created")
	first := e.publishTo(tn, s.ID, "order.created", map[string]any{"n": 1})
	second := e.publishTo(tn, s.ID, "order.created", map[string]any{"n": 2})
	e.pollAndCommit(tn, s.ID, "laptop", 1, true)
	if d := e.waitState(tn, first, delivery.Delivered); len(d.Attempts) != 1 || d.Attempts[0].Consumer != "laptop" {
		t.Fatalf("first delivery's attempts %+v", d.Attempts)
	}
	c := e.client()
	c.login(tn.Email)

	done := c.get("/deliveries/" + first.String())
	if got := text(one(t, done.Doc, "summary-headline")); got != "Committed by consumer laptop" {
		t.Errorf("committed headline %q", got)
	}
	if got := text(one(t, done.Doc, "committed-by")); !strings.Contains(got, "laptop") {
		t.Errorf("committed by %q", got)
	}
	if got := text(one(t, done.Doc, "state-text")); !strings.Contains(got, "consumer laptop pulled it and committed") {
		t.Errorf("state text %q", got)
	}
	if got := text(one(t, done.Doc, "attempt")); !strings.Contains(got, "committed by consumer laptop") || strings.Contains(got, "no response") {
		t.Errorf("attempt %q", got)
	}
	if got := text(one(t, done.Doc, "subscription-link")); got != "Polling subscription" {
		t.Errorf("the subscription is named %q", got)
	}

	waiting := c.get("/deliveries/" + second.String())
	if got := text(one(t, waiting.Doc, "summary-headline")); got != "Waiting to be pulled" {
		t.Errorf("pending headline %q", got)
	}
	if got := text(one(t, waiting.Doc, "state-text")); !strings.Contains(got, "waiting for a consumer") {
		t.Errorf("pending state %q", got)
	}
	if got := text(one(t, waiting.Doc, "timeline-end")); !strings.Contains(got, "waits for a consumer to pull and commit it") {
		t.Errorf("timeline end %q", got)
	}
	if got := text(one(t, waiting.Doc, "committed-by")); !strings.Contains(got, "no consumer yet") {
		t.Errorf("pending committed by %q", got)
	}
	for _, p := range []*page{done, waiting} {
		for _, id := range []string{"next-attempt", "retry-now", "request-url", "headers", "schedule-note"} {
			if len(byTestID(p.Doc, id)) != 0 {
				t.Errorf("%s: a polling delivery's page shows %s", p.URL.Path, id)
			}
		}
		if got := text(one(t, p.Doc, "request-heading")); got != "Pulled, not sent" {
			t.Errorf("%s: request heading %q", p.URL.Path, got)
		}
		if strings.Contains(p.text(), "POST") && !strings.Contains(p.text(), "commits it") {
			t.Errorf("%s: the page speaks of a POST", p.URL.Path)
		}
	}

	// The deliveries list names the subscription, never by an empty URL.
	list := c.get("/deliveries")
	for _, row := range byTestID(list.Doc, "delivery-row") {
		if got := text(row); !strings.Contains(got, "Polling subscription") {
			t.Errorf("list row %q", got)
		}
	}
}

func texts(ns []*html.Node) string {
	var out []string
	for _, n := range ns {
		out = append(out, text(n))
	}
	return strings.Join(out, " | ")
}
