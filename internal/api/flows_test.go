package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestPublishIdempotency: the same Idempotency-Key returns the first answer and creates nothing.
func TestPublishIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tid := e.newTenant("idem")
	other := e.newTenant("idem-other")
	e.newSubscription(tid, map[string]any{"url": "http://127.0.0.1:9/a"})
	e.newSubscription(other, map[string]any{"url": "http://127.0.0.1:9/b"})
	must[subscription](e, 200, "POST", "/tenants/"+tid+"/subscriptions/"+
		must[struct{ Items []subscription }](e, 200, "GET", "/tenants/"+tid+"/subscriptions", adminToken, nil).Items[0].ID+"/pause", adminToken, nil)

	first := e.publish(tid, "order.created", map[string]any{"n": 1, "s": "héllo"}, "Idempotency-Key", "key-1")
	// The same request again, with other JSON formatting: the first answer, byte for byte the same ids.
	again := must[published](e, 202, "POST", "/tenants/"+tid+"/events", adminToken,
		`{ "payload" : {"n":1,"s":"héllo"}, "event_type": "order.created" }`, "Idempotency-Key", "key-1")
	if again.ID != first.ID || len(again.Deliveries) != 1 || again.Deliveries[0].ID != first.Deliveries[0].ID {
		t.Errorf("replayed publish: %+v, first %+v", again, first)
	}
	total := func(tenant string) int {
		return *must[page](e, 200, "GET", "/tenants/"+tenant+"/deliveries?include_totals=true", adminToken, nil).Total
	}
	if n := total(tid); n != 1 {
		t.Errorf("%d deliveries after a replayed publish, want 1", n)
	}
	// The same key with a different request is refused.
	r := e.call("POST", "/tenants/"+tid+"/events", adminToken, map[string]any{"event_type": "order.created", "payload": map[string]any{"n": 2}}, "Idempotency-Key", "key-1")
	wantError(t, "key reused for another payload", r, "INVALID_REQUEST")
	r = e.call("POST", "/tenants/"+tid+"/events", adminToken, map[string]any{"event_type": "order.updated", "payload": map[string]any{"n": 1, "s": "héllo"}}, "Idempotency-Key", "key-1")
	wantError(t, "key reused for another event type", r, "INVALID_REQUEST")
	// Keys are per tenant; another key is another event; no key is always a new event.
	if p := e.publish(other, "order.created", map[string]any{"n": 1, "s": "héllo"}, "Idempotency-Key", "key-1"); p.ID == first.ID {
		t.Error("another tenant's publish with the same key returned the first tenant's event")
	}
	if p := e.publish(tid, "order.created", map[string]any{"n": 1, "s": "héllo"}, "Idempotency-Key", "key-2"); p.ID == first.ID {
		t.Error("another key returned the first event")
	}
	e.publish(tid, "order.created", map[string]any{"n": 1})
	e.publish(tid, "order.created", map[string]any{"n": 1})
	if n := total(tid); n != 4 {
		t.Errorf("%d deliveries, want 4", n)
	}
	wantError(t, "key too long", e.call("POST", "/tenants/"+tid+"/events", adminToken,
		map[string]any{"event_type": "a", "payload": map[string]any{}}, "Idempotency-Key", strings.Repeat("k", 256)), "INVALID_REQUEST")
}

// verifySignatures returns how many of the webhook-signature's v1 signatures verify under each secret.
func verifySignatures(t *testing.T, h received, secrets ...string) []int {
	t.Helper()
	sigs := strings.Fields(h.header.Get("webhook-signature"))
	signed := h.header.Get("webhook-id") + "." + h.header.Get("webhook-timestamp") + "." + string(h.body)
	out := make([]int, len(secrets))
	for i, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			t.Fatalf("secret %q: %v", s, err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(signed))
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		for _, sig := range sigs {
			if hmac.Equal([]byte(sig), []byte(want)) {
				out[i]++
			}
		}
	}
	return out
}

// TestSubscriptionLifecycle: create, read, list, update, pause/resume, rotate (both secrets sign), health,
// delete.
func TestSubscriptionLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newReceiver(t, func(path string, n int) int {
		if path == "/flaky" && n%2 == 1 {
			return 500
		}
		return 200
	})
	tid := e.newTenant("lifecycle")
	l := &lifecycle{e: e, rc: rc, tid: tid, tp: "/tenants/" + tid,
		tok: e.newToken(tid, "subscriptions:read", "subscriptions:write", "events:write", "deliveries:read")}
	l.createAndChange(t)
	l.pauseAndResume(t)
	l.rotate(t)
	l.health(t)
	l.delete(t)
}

// lifecycle is TestSubscriptionLifecycle's world: a tenant, its token tok and its subscription s.
type lifecycle struct {
	e            *env
	rc           *receiver
	tid, tp, tok string
	s, fresh     subscription
}

// createAndChange creates s, reads and lists it (never its secret) and changes it.
func (l *lifecycle) createAndChange(t *testing.T) {
	e, rc, tp, tok := l.e, l.rc, l.tp, l.tok
	s := must[subscription](e, 201, "POST", tp+"/subscriptions", tok, map[string]any{
		"url": rc.URL + "/hook", "event_types": []string{"a.b", "a.b", "c"}, "description": "mine",
		"rate_limit_per_second": 50,
	})
	if s.State != "active" || !strings.HasPrefix(s.Secret, "whsec_") || s.TenantID != l.tid || s.Description != "mine" ||
		!slices.Equal(s.EventTypes, []string{"a.b", "c"}) || s.RateLimitPerSecond == nil || *s.RateLimitPerSecond != 50 {
		t.Fatalf("created: %+v", s)
	}
	got := must[map[string]any](e, 200, "GET", tp+"/subscriptions/"+s.ID, tok, nil)
	if _, ok := got["secret"]; ok {
		t.Error("GET shows the secret")
	}
	list := must[struct{ Items []subscription }](e, 200, "GET", tp+"/subscriptions", tok, nil)
	if len(list.Items) != 1 || list.Items[0].ID != s.ID || list.Items[0].Secret != "" {
		t.Errorf("list: %+v", list)
	}

	// PATCH changes only what is sent; rate_limit_per_second: null removes the limit.
	u := must[subscription](e, 200, "PATCH", tp+"/subscriptions/"+s.ID, tok, `{"description":"changed","rate_limit_per_second":null}`)
	if u.Description != "changed" || u.RateLimitPerSecond != nil || u.URL != s.URL || !slices.Equal(u.EventTypes, s.EventTypes) {
		t.Errorf("patched: %+v", u)
	}
	u = must[subscription](e, 200, "PATCH", tp+"/subscriptions/"+s.ID, tok, `{"event_types":[]}`)
	if len(u.EventTypes) != 0 || u.Description != "changed" {
		t.Errorf("patched event types: %+v", u)
	}
	l.s = s
}

// pauseAndResume: published events wait while s is paused; resume drains them.
func (l *lifecycle) pauseAndResume(t *testing.T) {
	e, tp, tok, tid, s := l.e, l.tp, l.tok, l.tid, l.s
	// Pause: published events wait; resume drains them.
	if p := must[subscription](e, 200, "POST", tp+"/subscriptions/"+s.ID+"/pause", tok, nil); p.State != "paused" {
		t.Errorf("pause: %+v", p)
	}
	must[subscription](e, 200, "POST", tp+"/subscriptions/"+s.ID+"/pause", tok, nil) // no-op
	waiting := must[published](e, 202, "POST", tp+"/events", tok, map[string]any{"event_type": "x.y", "payload": map[string]any{"k": 1}})
	if len(waiting.Deliveries) != 1 || waiting.Deliveries[0].State != "pending" {
		t.Fatalf("publish while paused: %+v", waiting)
	}
	// Nothing is sent while it is paused: told afterwards, not by waiting for nothing to happen, by the
	// delivery's one attempt starting after the resume and being the endpoint's one request.
	resumed := time.Now()
	if p := must[subscription](e, 200, "POST", tp+"/subscriptions/"+s.ID+"/resume", tok, nil); p.State != "active" {
		t.Errorf("resume: %+v", p)
	}
	d := e.waitState(tid, waiting.Deliveries[0].ID, "delivered")
	if len(d.Attempts) != 1 || d.TotalAttempts != 1 || !d.Attempts[0].StartedAt.After(resumed) {
		t.Fatalf("the delivery published while paused: %d attempts (%+v), want one, after the resume at %s", len(d.Attempts), d.Attempts, resumed)
	}
	if n := len(l.rc.requests("/hook")); n != 1 {
		t.Fatalf("the endpoint received %d requests, want only the one after the resume", n)
	}
}

// rotate: the old secret keeps signing next to the new one.
func (l *lifecycle) rotate(t *testing.T) {
	e, rc, tp, tok, tid, s := l.e, l.rc, l.tp, l.tok, l.tid, l.s
	// Rotation: the old secret keeps signing next to the new one.
	type rotated struct {
		ID      string `json:"id"`
		Secret  string `json:"secret"`
		Expires int    `json:"previous_secrets_expire_in_seconds"`
	}
	rot := must[rotated](e, 200, "POST", tp+"/subscriptions/"+s.ID+"/rotate-secret", tok, nil)
	if rot.ID != s.ID || !strings.HasPrefix(rot.Secret, "whsec_") || rot.Secret == s.Secret || rot.Expires != 86400 {
		t.Fatalf("rotate: %+v", rot)
	}
	after := must[published](e, 202, "POST", tp+"/events", tok, map[string]any{"event_type": "x.y", "payload": map[string]any{"k": 2}})
	e.waitState(tid, after.Deliveries[0].ID, "delivered")
	reqs := rc.requests("/hook")
	last := reqs[len(reqs)-1]
	if n := len(strings.Fields(last.header.Get("webhook-signature"))); n != 2 {
		t.Errorf("after rotation: %d signatures, want 2: %q", n, last.header.Get("webhook-signature"))
	}
	if v := verifySignatures(t, last, s.Secret, rot.Secret); v[0] != 1 || v[1] != 1 {
		t.Errorf("after rotation the old and new secrets verify %v signatures, want one each", v)
	}
	if last.header.Get("webhook-id") != after.ID {
		t.Errorf("webhook-id %q, want the event id %s", last.header.Get("webhook-id"), after.ID)
	}
	if v := verifySignatures(t, reqs[0], s.Secret, rot.Secret); v[0] != 1 || v[1] != 0 {
		t.Errorf("before rotation: %v", v)
	}
}

// health counts attempts: a flaky endpoint (500, 200, 500, 200...), and a subscription without any.
func (l *lifecycle) health(t *testing.T) {
	e, rc, tp, tok, tid := l.e, l.rc, l.tp, l.tok, l.tid
	// Health counts attempts: a flaky endpoint (500, 200, 500, 200...).
	fl := must[subscription](e, 201, "POST", tp+"/subscriptions", tok, map[string]any{"url": rc.URL + "/flaky", "event_types": []string{"f"}})
	for i := range 2 {
		p := must[published](e, 202, "POST", tp+"/events", tok, map[string]any{"event_type": "f", "payload": map[string]any{"i": i}})
		e.waitState(tid, deliveryFor(t, p, fl.ID), "delivered")
	}
	type health struct {
		State               string     `json:"state"`
		SuccessRate         *float64   `json:"success_rate"`
		Attempts            int        `json:"attempts"`
		Successes           int        `json:"successes"`
		P50                 *float64   `json:"latency_ms_p50"`
		P95                 *float64   `json:"latency_ms_p95"`
		ConsecutiveFailures *int       `json:"consecutive_failures"`
		LastSuccessAt       *time.Time `json:"last_success_at"`
		LastFailureAt       *time.Time `json:"last_failure_at"`
	}
	h := must[health](e, 200, "GET", tp+"/subscriptions/"+fl.ID+"/health", tok, nil)
	if h.State != "active" || h.Attempts != 4 || h.Successes != 2 || h.SuccessRate == nil || *h.SuccessRate != 0.5 ||
		h.ConsecutiveFailures == nil || *h.ConsecutiveFailures != 0 || h.LastSuccessAt == nil || h.LastFailureAt == nil ||
		h.P50 == nil || h.P95 == nil || *h.P95 < *h.P50 {
		t.Errorf("health of 500,200,500,200: %+v", h)
	}
	l.fresh = must[subscription](e, 201, "POST", tp+"/subscriptions", tok, map[string]any{"url": rc.URL + "/never", "event_types": []string{"never"}})
	h = must[health](e, 200, "GET", tp+"/subscriptions/"+l.fresh.ID+"/health", tok, nil)
	if h.Attempts != 0 || h.SuccessRate != nil || h.LastSuccessAt != nil || h.LastFailureAt != nil {
		t.Errorf("health without attempts: %+v", h)
	}
}

// delete: gone from reads, its waiting deliveries dead-lettered, its history still listed.
func (l *lifecycle) delete(t *testing.T) {
	e, tp, tok, tid, s, fresh := l.e, l.tp, l.tok, l.tid, l.s, l.fresh
	// Delete: gone from reads, its waiting deliveries dead-lettered, its history still listed.
	must[subscription](e, 200, "POST", tp+"/subscriptions/"+fresh.ID+"/pause", tok, nil)
	queued := must[published](e, 202, "POST", tp+"/events", tok, map[string]any{"event_type": "never", "payload": map[string]any{}})
	if r := e.call("DELETE", tp+"/subscriptions/"+fresh.ID, tok, nil); r.status != 204 {
		t.Fatalf("delete: %s", r)
	}
	wantError(t, "get deleted", e.call("GET", tp+"/subscriptions/"+fresh.ID, tok, nil), "NOT_FOUND")
	wantError(t, "delete twice", e.call("DELETE", tp+"/subscriptions/"+fresh.ID, tok, nil), "NOT_FOUND")
	if d := e.delivery(tid, deliveryFor(t, queued, fresh.ID)); d.State != "failed" {
		t.Errorf("queued delivery of a deleted subscription: %s", d.State)
	}
	list := must[struct{ Items []subscription }](e, 200, "GET", tp+"/subscriptions", tok, nil)
	if len(list.Items) != 2 {
		t.Errorf("%d subscriptions listed after a delete, want 2", len(list.Items))
	}
	// s takes every event type since its PATCH; the deleted subscription gets nothing.
	if p := must[published](e, 202, "POST", tp+"/events", tok, map[string]any{"event_type": "never", "payload": map[string]any{}}); len(p.Deliveries) != 1 || p.Deliveries[0].SubscriptionID != s.ID {
		t.Errorf("a deleted subscription still gets deliveries: %+v", p)
	}
}

// TestCustomHeaders: custom headers reach the receiver but never appear in an API answer or a stored
// request copy.
func TestCustomHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newReceiver(t, nil)
	tid := e.newTenant("headers")
	tp := "/tenants/" + tid
	const secretValue = "s3cr3t-header-value-0451"
	var answers []string
	record := func(r reply) reply { answers = append(answers, string(r.body)); return r }

	r := record(e.call("POST", tp+"/subscriptions", adminToken, map[string]any{
		"url": rc.URL + "/h", "headers": map[string]string{"x-api-key": secretValue, "Authorization": "Bearer " + secretValue},
	}))
	var s subscription
	_ = json.Unmarshal(r.body, &s)
	if r.status != 201 || !slices.Equal(s.HeaderNames, []string{"Authorization", "X-Api-Key"}) {
		t.Fatalf("create: %s", r)
	}
	record(e.call("GET", tp+"/subscriptions/"+s.ID, adminToken, nil))
	record(e.call("GET", tp+"/subscriptions", adminToken, nil))
	record(e.call("PATCH", tp+"/subscriptions/"+s.ID, adminToken, map[string]any{"description": "x"}))
	p := e.publish(tid, "h.event", map[string]any{"v": 1})
	e.waitState(tid, p.Deliveries[0].ID, "delivered")
	record(e.call("GET", tp+"/deliveries/"+p.Deliveries[0].ID, adminToken, nil))
	record(e.call("GET", tp+"/deliveries", adminToken, nil))
	record(e.call("POST", tp+"/deliveries/"+p.Deliveries[0].ID+"/retry", adminToken, nil))
	e.waitState(tid, p.Deliveries[0].ID, "delivered")
	record(e.call("GET", tp+"/deliveries/"+p.Deliveries[0].ID, adminToken, nil))
	for _, a := range answers {
		if strings.Contains(a, secretValue) {
			t.Errorf("an API answer shows a custom header value: %s", a)
		}
	}
	got := rc.requests("/h")
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(got))
	}
	for _, g := range got {
		if g.header.Get("X-Api-Key") != secretValue || g.header.Get("Authorization") != "Bearer "+secretValue {
			t.Errorf("receiver did not get the custom headers: %v", g.header)
		}
		if g.header.Get("Content-Type") != "application/json" || !strings.Contains(g.header.Get("User-Agent"), "Hookline") {
			t.Errorf("receiver headers: %v", g.header)
		}
	}
	// The stored copies (the database) hold no header value either.
	var n int
	err := e.srv.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM webhook_attempts WHERE request_headers::text LIKE '%' || $1 || '%'`, secretValue).Scan(&n)
	if err != nil {
		t.Fatalf("query attempts: %v", err)
	}
	if n != 0 {
		t.Errorf("%d stored attempt request copies hold a custom header value", n)
	}
}

// TestDeliveryDetail: request {url, headers, body} and the attempts with their fields.
func TestDeliveryDetail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newReceiver(t, func(_ string, n int) int {
		if n == 1 {
			return 503
		}
		return 201
	})
	tid := e.newTenant("detail")
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL + "/d"})
	p := must[published](e, 202, "POST", "/tenants/"+tid+"/events", adminToken,
		`{"event_type":"detail.event","payload":{ "nested": {"a": [1, 2]}, "s": "<&>" }}`)
	d := e.waitState(tid, p.Deliveries[0].ID, "delivered")
	if d.EventID != p.ID || d.SubscriptionID != sub.ID || d.EventType != "detail.event" || d.TotalAttempts != 2 ||
		d.AttemptCount != 2 || d.ManualRetries != 0 || d.LastStatus == nil || *d.LastStatus != 201 || d.NextAttemptAt != nil {
		t.Errorf("delivery: %+v", d)
	}
	if d.Request == nil || d.Request.URL != rc.URL+"/d" || d.Request.Headers["webhook-id"] != p.ID ||
		d.Request.Headers["content-type"] != "application/json" || d.Request.Headers["webhook-signature"] == "" {
		t.Fatalf("request: %+v", d.Request)
	}
	var body struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(d.Request.Body, &body); err != nil || body.Type != "detail.event" || body.Timestamp.IsZero() ||
		string(body.Data) != `{"nested":{"a":[1,2]},"s":"<&>"}` {
		t.Errorf("request body: %s (%v)", d.Request.Body, err)
	}
	got := rc.requests("/d")
	if len(got) != 2 || string(got[1].body) != string(d.Request.Body) {
		t.Errorf("the receiver got another body than the detail shows")
	}
	if len(d.Attempts) != 2 {
		t.Fatalf("attempts: %+v", d.Attempts)
	}
	for i, a := range d.Attempts {
		if a.Attempt != i+1 || a.StartedAt.IsZero() || a.DurationMs == nil || a.Status == nil || a.ResponseSnippet == nil || a.Error == nil {
			t.Errorf("attempt %d: %+v", i, a)
		}
	}
	if *d.Attempts[0].Status != 503 || *d.Attempts[1].Status != 201 || *d.Attempts[1].ResponseSnippet != "receiver says hi" {
		t.Errorf("attempt statuses: %d, %d", *d.Attempts[0].Status, *d.Attempts[1].Status)
	}
	// Before any attempt the request shows what will be sent.
	must[subscription](e, 200, "POST", "/tenants/"+tid+"/subscriptions/"+sub.ID+"/pause", adminToken, nil)
	q := e.publish(tid, "detail.event", map[string]any{})
	w := e.delivery(tid, q.Deliveries[0].ID)
	if w.State != "pending" || w.NextAttemptAt == nil || len(w.Attempts) != 0 || w.Request == nil || w.Request.URL != rc.URL+"/d" ||
		w.Request.Headers["webhook-id"] != q.ID {
		t.Errorf("pending delivery detail: %+v %+v", w, w.Request)
	}
	// The list items do not carry request or attempts.
	raw := e.call("GET", "/tenants/"+tid+"/deliveries", adminToken, nil)
	if strings.Contains(string(raw.body), `"request"`) || strings.Contains(string(raw.body), `"attempts"`) {
		t.Errorf("list items carry request or attempts: %s", raw)
	}
}

// TestListDeliveries: filters, newest-first keyset pages, include_totals.
func TestListDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newReceiver(t, func(p string, _ int) int {
		if p == "/bad" {
			return 422
		}
		return 200
	})
	l := &listWorld{e: e, tid: e.newTenant("list")}
	l.ok = e.newSubscription(l.tid, map[string]any{"url": rc.URL + "/ok", "event_types": []string{"a", "b"}})
	l.bad = e.newSubscription(l.tid, map[string]any{"url": rc.URL + "/bad", "event_types": []string{"a"}})
	for i := range 7 {
		typ := "a"
		if i%3 == 2 {
			typ = "b"
		}
		pub := e.publish(l.tid, typ, map[string]any{"i": i})
		l.events = append(l.events, pub.ID)
		for _, d := range pub.Deliveries {
			l.all = append(l.all, d.ID)
			e.waitState(l.tid, d.ID, "delivered", "failed")
		}
	}
	// 7 events: 5 of type a (2 deliveries each), 2 of type b (1 each): 12 deliveries, 5 dead.
	l.filters(t)
	l.pages(t)
	l.eventsAndTenants(t)
}

// listWorld is TestListDeliveries' tenant: subscriptions ok (types a and b) and bad (a, answering 422),
// and the ids of its deliveries and events, oldest first.
type listWorld struct {
	e           *env
	tid         string
	ok, bad     subscription
	all, events []string
}

func (l *listWorld) list(q string) page {
	return must[page](l.e, 200, "GET", "/tenants/"+l.tid+"/deliveries?"+q, adminToken, nil)
}

// filters: each filter's total and items.
func (l *listWorld) filters(t *testing.T) {
	ok, bad, events, list := l.ok, l.bad, l.events, l.list
	count := func(q string) int {
		p := list(q + "&include_totals=true")
		if p.Total == nil {
			t.Fatalf("?%s: no total", q)
		}
		return *p.Total
	}
	for q, want := range map[string]int{
		"":                                    12,
		"state=dead":                          5,
		"state=failed":                        5,
		"state=expired":                       0,
		"state=delivered":                     7,
		"state=delivered,failed":              12,
		"state=pending":                       0,
		"state=retrying":                      0,
		"event_type=a":                        10,
		"event_type=b":                        2,
		"event_type=c":                        0,
		"status=422":                          5,
		"status=4xx":                          5,
		"status=4XX":                          5,
		"status=2xx":                          7,
		"status=200":                          7,
		"status=5xx":                          0,
		"status=404":                          0,
		"status=4xx&subscription_id=" + ok.ID: 0,
		"status=4xx&event_type=b":             0,
		"status=2xx&event_type=b":             2,
		"subscription_id=" + ok.ID:            7,
		"subscription_id=" + bad.ID:           5,
		"subscription_id=" + bad.ID + "&state=delivered":                               0,
		"event_id=" + events[0]:                                                        2,
		"event_id=" + events[2]:                                                        1,
		"event_id=" + events[0] + "&subscription_id=" + bad.ID:                         1,
		"event_id=" + events[0] + "&state=delivered":                                   1,
		"event_id=" + uuid.NewString():                                                 0,
		"since=2000-01-01T00:00:00Z":                                                   12,
		"until=2000-01-01T00:00:00Z":                                                   0,
		"since=" + url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339Nano)): 0,
	} {
		if got := count(q); got != want {
			t.Errorf("?%s: total %d, want %d", q, got, want)
		}
		if p := list(q + "&limit=100"); len(p.Items) != want || p.NextCursor != "" {
			t.Errorf("?%s: %d items (cursor %q), want %d", q, len(p.Items), p.NextCursor, want)
		}
	}
	if p := list(""); p.Total != nil {
		t.Error("total without include_totals")
	}
	if p := list("include_totals=false"); p.Total != nil {
		t.Error("total with include_totals=false")
	}
}

// pages walks pages of 5: newest first, no repeats, every delivery once, total on each page.
func (l *listWorld) pages(t *testing.T) {
	e, tid, list := l.e, l.tid, l.list
	// Walk pages of 5: newest first, no repeats, every delivery once, total on each page.
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		q := "limit=5&include_totals=true"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		p := list(q)
		if *p.Total != 12 {
			t.Errorf("page %d: total %d", pages, *p.Total)
		}
		for _, it := range p.Items {
			seen = append(seen, it.ID)
		}
		if p.NextCursor == "" {
			if pages != 2 || len(p.Items) != 2 {
				t.Errorf("last page %d has %d items", pages, len(p.Items))
			}
			break
		}
		if len(p.Items) != 5 || pages > 3 {
			t.Fatalf("page %d: %d items", pages, len(p.Items))
		}
		cursor = p.NextCursor
	}
	want := slices.Clone(l.all)
	slices.Reverse(want)
	// Deliveries of one event share created_at and are ordered by id descending within it.
	if len(seen) != 12 || !sameSet(seen, want) {
		t.Errorf("paged ids %v, want %v", seen, want)
	}
	for i := 1; i < len(seen); i++ {
		a, b := e.delivery(tid, seen[i-1]), e.delivery(tid, seen[i])
		if a.CreatedAt.Before(b.CreatedAt) {
			t.Errorf("not newest first at %d", i)
		}
	}
}

// eventsAndTenants: an event's deliveries, filters across pages, and another tenant's list.
func (l *listWorld) eventsAndTenants(t *testing.T) {
	e, bad, events, list := l.e, l.bad, l.events, l.list
	// An event's deliveries are that event's, one per subscription it went to.
	for _, it := range list("event_id=" + events[0]).Items {
		if it.EventID != events[0] || it.EventType != "a" {
			t.Errorf("event_id=%s lists %+v", events[0], it)
		}
	}
	// Filters hold across pages too.
	p := list("state=dead&limit=2")
	p2 := list("state=dead&limit=2&cursor=" + url.QueryEscape(p.NextCursor))
	for _, it := range append(p.Items, p2.Items...) {
		if it.State != "failed" || it.SubscriptionID != bad.ID {
			t.Errorf("dead page holds %+v", it)
		}
	}
	if len(p2.Items) != 2 || p2.Items[0].ID == p.Items[0].ID {
		t.Errorf("second dead page: %+v", p2.Items)
	}
	// A tenant never sees another tenant's deliveries.
	other := e.newTenant("list-other")
	if p := must[page](e, 200, "GET", "/tenants/"+other+"/deliveries?include_totals=true", adminToken, nil); *p.Total != 0 {
		t.Errorf("another tenant lists %d deliveries", *p.Total)
	}
}

// deliveryFor returns the id of p's delivery to subscription sub.
func deliveryFor(t *testing.T, p published, sub string) string {
	t.Helper()
	for _, d := range p.Deliveries {
		if d.SubscriptionID == sub {
			return d.ID
		}
	}
	t.Fatalf("event %s has no delivery to %s: %+v", p.ID, sub, p.Deliveries)
	return ""
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// include_totals counts up to 1,000, as the dashboard's counts do, and says so: any deliveries:read token
// may ask, and an uncapped count of a large tenant is a scan of all its rows. Below the cap the total is
// exact and total_at_least false.
func TestDeliveriesTotalIsCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tid := e.newTenant("many")
	sub := e.newSubscription(tid, map[string]any{"url": "http://127.0.0.1:1/hook"})
	// 1,001 delivered deliveries, written straight to the tables (nothing for the worker to send).
	if _, err := e.srv.Pool.Exec(t.Context(), `
		WITH ev AS (
			INSERT INTO events (tenant_id, event_type, body)
			SELECT $1, 'a', '{}' FROM generate_series(1, 1001)
			RETURNING id)
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, give_up_at)
		SELECT $1, ev.id, $2, 'a', 'delivered', now() + interval '1 day' FROM ev`, tid, sub.ID); err != nil {
		t.Fatal(err)
	}
	token := e.newToken(tid, "deliveries:read")
	for q, want := range map[string]struct {
		total   int
		atLeast bool
	}{
		"include_totals=true":                 {1000, true},
		"include_totals=true&state=delivered": {1000, true},
		"include_totals=true&state=failed":    {0, false},
	} {
		p := must[page](e, 200, "GET", "/tenants/"+tid+"/deliveries?"+q, token, nil)
		if p.Total == nil || p.TotalAtLeast == nil || *p.Total != want.total || *p.TotalAtLeast != want.atLeast {
			t.Errorf("?%s: total %v, total_at_least %v; want %d, %v", q, deref(p.Total), deref(p.TotalAtLeast), want.total, want.atLeast)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
