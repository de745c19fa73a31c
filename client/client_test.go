package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/client"
)

// Me: a tenant token learns its tenant, scopes and id; the admin token has no tenant and no token id.
func TestMe(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant(ctx, "sdk-me")
	tok := e.newToken(ctx, tenant, client.ScopeEventsWrite, client.ScopeDeliveriesRead)

	me, err := e.client(tok.Token).Me(ctx)
	if err != nil {
		t.Fatalf("Me with a tenant token: %v", err)
	}
	if me.TenantID == nil || *me.TenantID != tenant || me.TokenID == nil || *me.TokenID != tok.ID {
		t.Errorf("Me with a tenant token: tenant %v, token %v; want %s, %s", deref(me.TenantID), deref(me.TokenID), tenant, tok.ID)
	}
	if !slices.Equal(me.Scopes, []string{"events:write", "deliveries:read"}) {
		t.Errorf("Me with a tenant token: scopes %q", me.Scopes)
	}

	me, err = e.admin.Me(ctx)
	if err != nil {
		t.Fatalf("Me with the admin token: %v", err)
	}
	if me.TenantID != nil || me.TokenID != nil || !slices.Contains(me.Scopes, "admin") || !slices.Contains(me.Scopes, "events:write") {
		t.Errorf("Me with the admin token: tenant %v, token %v, scopes %q; want none, none, admin and every scope",
			deref(me.TenantID), deref(me.TokenID), me.Scopes)
	}

	_, err = e.client("hl_not-a-token").Me(ctx)
	if ae := asAPIError(t, "Me with an unknown token", err); ae.Status != 401 || ae.Code != client.CodeUnauthenticated {
		t.Errorf("Me with an unknown token: %d %s, want 401 UNAUTHENTICATED", ae.Status, ae.Code)
	}
}

// Publish with an idempotency key twice: one event, the same answer; the key with another payload is
// refused with the API's code and message.
func TestPublishIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant(ctx, "sdk-publish")
	subs := e.pausedSubscriptions(ctx, tenant, 2)
	c := e.client(e.newToken(ctx, tenant, client.ScopeEventsWrite, client.ScopeDeliveriesRead).Token)

	// A payload whose big integer and key order a map[string]any round trip would not keep.
	payload := json.RawMessage(`{"z": 1, "amount": 12345678901234567890, "a": "x"}`)
	opts := client.PublishOptions{IdempotencyKey: "sdk-test-" + tenant}
	first, err := c.Publish(ctx, tenant, "invoice.paid", payload, opts)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	if first.ID == "" || first.EventType != "invoice.paid" || len(first.Deliveries) != len(subs) {
		t.Fatalf("publish answered %+v, want an event with %d deliveries", first, len(subs))
	}
	again, err := c.Publish(ctx, tenant, "invoice.paid", payload, opts)
	if err != nil {
		t.Fatalf("publish again with the same key: %v", err)
	}
	if again.ID != first.ID || !again.CreatedAt.Equal(first.CreatedAt) || !slices.Equal(deliveryIDs(again), deliveryIDs(first)) {
		t.Errorf("the same key answered %+v, then %+v: want the first answer again", first, again)
	}
	// One event only: its deliveries, one per subscription, are all the tenant has.
	n := 0
	for d, err := range c.Deliveries(ctx, tenant, nil) {
		if err != nil {
			t.Fatalf("deliveries: %v", err)
		}
		if d.EventID != first.ID {
			t.Errorf("delivery %s is of event %s, want only %s", d.ID, d.EventID, first.ID)
		}
		n++
	}
	if n != len(subs) {
		t.Errorf("%d deliveries after two publishes with one key, want %d", n, len(subs))
	}

	_, err = c.Publish(ctx, tenant, "invoice.paid", map[string]any{"other": true}, opts)
	ae := asAPIError(t, "the key with another payload", err)
	if ae.Status != 400 || ae.Code != client.CodeInvalidRequest || !strings.Contains(ae.Message, "Idempotency-Key") ||
		ae.Error() != ae.Message || ae.CorrelationID == "" {
		t.Errorf("the key with another payload: %+v, want 400 INVALID_REQUEST naming the Idempotency-Key, with a correlation id", ae)
	}

	// The ordering key travels with the event: its deliveries carry it; a bad one is the API's refusal.
	ordered, err := c.Publish(ctx, tenant, "invoice.paid", payload, client.PublishOptions{OrderingKey: "customer-1"})
	if err != nil {
		t.Fatalf("publish with an ordering key: %v", err)
	}
	found := 0
	for d, err := range c.Deliveries(ctx, tenant, nil) {
		if err != nil {
			t.Fatalf("deliveries: %v", err)
		}
		if d.EventID == ordered.ID {
			found++
			if d.OrderingKey == nil || *d.OrderingKey != "customer-1" {
				t.Errorf("delivery %s has ordering key %v, want customer-1", d.ID, d.OrderingKey)
			}
		}
	}
	if found != len(subs) {
		t.Errorf("%d deliveries of the ordered event, want %d", found, len(subs))
	}
	_, err = c.Publish(ctx, tenant, "invoice.paid", payload, client.PublishOptions{OrderingKey: "tab\there"})
	if ae := asAPIError(t, "a bad ordering key", err); ae.Status != 400 || !strings.Contains(ae.Message, "ordering_key") {
		t.Errorf("a bad ordering key: %+v, want 400 naming ordering_key", ae)
	}
}

// The API's error answers come back as *APIError with its status, code, message and correlation id, from
// the hand-written helpers and the generated calls alike.
func TestAPIError(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant(ctx, "sdk-errors")
	reader := e.client(e.newToken(ctx, tenant, client.ScopeDeliveriesRead).Token)

	_, err := e.admin.Publish(ctx, tenant, "not a type!", map[string]any{}, client.PublishOptions{})
	ae := asAPIError(t, "a malformed event type", err)
	if ae.Status != 400 || ae.Code != client.CodeInvalidRequest || !strings.Contains(ae.Message, "event_type") {
		t.Errorf("a malformed event type: %+v, want 400 INVALID_REQUEST about event_type", ae)
	}
	if err.Error() != ae.Message {
		t.Errorf("Error() is %q, want the API's message %q", err.Error(), ae.Message)
	}

	// A correlation id sent is the one the error names.
	cid := "sdk-test-correlation"
	_, err = reader.GetDeliveryWithResponse(ctx, tenant, "00000000-0000-0000-0000-000000000000", &client.GetDeliveryParams{XCorrelationID: &cid})
	if ae := asAPIError(t, "an unknown delivery", err); ae.Status != 404 || ae.Code != client.CodeNotFound || ae.CorrelationID != cid {
		t.Errorf("an unknown delivery: %+v, want 404 NOT_FOUND with correlation id %s", ae, cid)
	}

	_, err = reader.PublishEventWithResponse(ctx, tenant, nil, client.PublishEventJSONRequestBody{EventType: "a.b", Payload: map[string]any{}})
	if ae := asAPIError(t, "a token lacking events:write", err); ae.Status != 403 || ae.Code != client.CodeForbidden || !strings.Contains(ae.Message, "events:write") {
		t.Errorf("a token lacking events:write: %+v, want 403 FORBIDDEN naming the scope", ae)
	}
}

// Deliveries across several pages: every delivery exactly once, newest first, in pages of the size asked.
func TestDeliveriesAcrossPages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant(ctx, "sdk-pages")
	subs := e.pausedSubscriptions(ctx, tenant, 3)
	other := e.newTenant(ctx, "sdk-pages-other")
	e.pausedSubscriptions(ctx, other, 1)
	if _, err := e.admin.Publish(ctx, other, "order.created", map[string]any{"n": 0}, client.PublishOptions{}); err != nil {
		t.Fatalf("publish to the other tenant: %v", err)
	}

	const events = 5
	want := map[string]bool{}
	for i := range events {
		p, err := e.admin.Publish(ctx, tenant, "order.created", map[string]any{"n": i}, client.PublishOptions{})
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		for _, id := range deliveryIDs(p) {
			want[id] = true
		}
	}
	if len(want) != events*len(subs) {
		t.Fatalf("%d deliveries published, want %d", len(want), events*len(subs))
	}

	// Count the pages the iterator fetches through a transport that sees every request.
	pages := 0
	limit := 4
	c := e.clientCounting(adminToken, "/deliveries", &pages)
	var order []time.Time
	seen := map[string]bool{}
	for d, err := range c.Deliveries(ctx, tenant, &client.ListDeliveriesParams{Limit: &limit}) {
		if err != nil {
			t.Fatalf("deliveries: %v", err)
		}
		if seen[d.ID] || !want[d.ID] {
			t.Errorf("delivery %s: listed twice, or not one of the tenant's", d.ID)
		}
		seen[d.ID] = true
		order = append(order, d.CreatedAt)
	}
	if len(seen) != len(want) {
		t.Errorf("the iterator gave %d deliveries, want %d", len(seen), len(want))
	}
	if wantPages := (len(want) + limit - 1) / limit; pages != wantPages {
		t.Errorf("the iterator fetched %d pages of %d, want %d", pages, limit, wantPages)
	}
	if !slices.IsSortedFunc(order, func(a, b time.Time) int { return b.Compare(a) }) {
		t.Errorf("deliveries are not newest first: %v", order)
	}

	// A filter applies to every page; breaking out of the loop fetches no further page.
	pages = 0
	n := 0
	sub0 := uuid.MustParse(subs[0])
	for d, err := range c.Deliveries(ctx, tenant, &client.ListDeliveriesParams{Limit: &limit, SubscriptionID: &sub0}) {
		if err != nil {
			t.Fatalf("deliveries of one subscription: %v", err)
		}
		if d.SubscriptionID != subs[0] {
			t.Errorf("delivery %s is of subscription %s, want %s", d.ID, d.SubscriptionID, subs[0])
		}
		n++
	}
	if n != events || pages != 2 {
		t.Errorf("one subscription's deliveries: %d in %d pages, want %d in 2", n, pages, events)
	}
	pages = 0
	for range c.Deliveries(ctx, tenant, &client.ListDeliveriesParams{Limit: &limit}) {
		break
	}
	if pages != 1 {
		t.Errorf("breaking after the first delivery fetched %d pages, want 1", pages)
	}

	// An error ends the iteration with the API's error.
	bad := "6xx"
	var got error
	for _, err := range c.Deliveries(ctx, tenant, &client.ListDeliveriesParams{Status: &bad}) {
		got = err
	}
	if ae := asAPIError(t, "a malformed status filter", got); ae.Code != client.CodeInvalidRequest {
		t.Errorf("a malformed status filter: %+v, want INVALID_REQUEST", ae)
	}
}

// Subscriptions and the event catalogue: one page each, through the same iterator shape.
func TestSubscriptionsAndEventTypes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant(ctx, "sdk-lists")
	subs := e.pausedSubscriptions(ctx, tenant, 3)
	c := e.client(e.newToken(ctx, tenant, client.ScopeSubscriptionsRead).Token)
	var got []string
	for s, err := range c.Subscriptions(ctx, tenant) {
		if err != nil {
			t.Fatalf("subscriptions: %v", err)
		}
		got = append(got, s.ID)
	}
	if !slices.Equal(got, subs) {
		t.Errorf("subscriptions %q, want %q (oldest first)", got, subs)
	}

	name := "sdk." + strings.ReplaceAll(tenant, "-", "")
	desc := "made by the SDK's test"
	if _, err := e.admin.CreateEventTypeWithResponse(ctx, nil, client.CreateEventTypeJSONRequestBody{Name: &name, Description: &desc}); err != nil {
		t.Fatalf("create an event type: %v", err)
	}
	found := false
	for et, err := range c.EventTypes(ctx, nil) {
		if err != nil {
			t.Fatalf("event types: %v", err)
		}
		if et.Name == name {
			found = et.Description == desc
		}
	}
	if !found {
		t.Errorf("the catalogue lacks %s as created", name)
	}
}

// The client's requests carry the token and the SDK's User-Agent; answers that are not the API's JSON
// still become an *APIError. A real HTTP server on loopback stands in for a proxy in front of Hookline.
func TestRequestsAndForeignErrors(t *testing.T) {
	t.Parallel()
	var auth, agent string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, agent = r.Header.Get("Authorization"), r.Header.Get("User-Agent")
		switch r.URL.Path {
		case "/hookline/api/v1/me":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"tenant_id": null, "scopes": ["admin"], "token_id": null}`)
		case "/hookline/api/v1/event-types":
			w.Header().Set("Retry-After", "7")
			w.Header().Set("X-Correlation-ID", "from-the-header")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error": {"code": "RATE_LIMITED", "message": "slow down", "timestamp": "2026-01-02T15:04:05Z"}}`)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html>\n<body>upstream\n  gone</body></html>")
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL+"/hookline", " hl_secret ", client.WithUserAgent("hookline-cli/9.9"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Me(t.Context()); err != nil {
		t.Fatalf("Me: %v", err)
	}
	if auth != "Bearer hl_secret" || !strings.HasPrefix(agent, "hookline-cli/9.9 hookline-go/") || agent == "hookline-cli/9.9 hookline-go/" {
		t.Errorf("Authorization %q, User-Agent %q; want the token and hookline-cli/9.9 hookline-go/<version>", auth, agent)
	}

	_, err = c.ListEventTypesWithResponse(t.Context(), nil)
	if ae := asAPIError(t, "429", err); ae.Code != client.CodeRateLimited || ae.Message != "slow down" || ae.RetryAfter != 7*time.Second || ae.CorrelationID != "from-the-header" {
		t.Errorf("429: %+v", ae)
	}
	_, err = c.ListTenantsWithResponse(t.Context(), nil)
	if ae := asAPIError(t, "a proxy's 502", err); ae.Status != 502 || ae.Code != "" || ae.Message != "the server answered 502 Bad Gateway: <html> <body>upstream gone</body></html>" {
		t.Errorf("a proxy's 502: %+v", ae)
	}

	for _, bad := range []struct{ url, token string }{{"hooks.example.com", "t"}, {"ftp://x", "t"}, {"https://x?q=1", "t"}, {"https://x", " "}} {
		if _, err := client.New(bad.url, bad.token); err == nil {
			t.Errorf("New(%q, %q) accepted", bad.url, bad.token)
		}
	}
}

// The hand-written codes are the document's.
func TestErrorCodes(t *testing.T) {
	codes := []string{client.CodeUnauthenticated, client.CodeForbidden, client.CodeNotFound, client.CodeInvalidRequest,
		client.CodeInvalidState, client.CodeMaxRetriesExceeded, client.CodePayloadTooLarge, client.CodeRateLimited, client.CodeInternal}
	for _, c := range codes {
		if !client.ErrorErrorCode(c).Valid() {
			t.Errorf("%s is not an error code of api/openapi.yaml", c)
		}
	}
}

// All's contract with any page function: pages in order until an empty cursor, an error once and last,
// a cursor that does not move is an error rather than a loop.
func TestAll(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pages := map[string]struct {
		items []int
		next  string
	}{"": {[]int{1, 2}, "b"}, "b": {nil, "c"}, "c": {[]int{3}, ""}}
	var got []int
	for v, err := range client.All(ctx, func(_ context.Context, cursor string) ([]int, string, error) {
		p := pages[cursor]
		return p.items, p.next, nil
	}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("All gave %v, want 1 2 3 (an empty page in between)", got)
	}

	boom := errors.New("boom")
	var errs []error
	got = nil
	for v, err := range client.All(ctx, func(_ context.Context, cursor string) ([]int, string, error) {
		if cursor == "" {
			return []int{1}, "next", nil
		}
		return nil, "", boom
	}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{1}) || len(errs) != 1 || !errors.Is(errs[0], boom) {
		t.Errorf("All with a failing second page: %v then %v, want 1 then boom once", got, errs)
	}

	calls := 0
	errs = nil
	for _, err := range client.All(ctx, func(_ context.Context, cursor string) ([]int, string, error) {
		calls++
		return []int{calls}, "same", nil
	}) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if calls != 2 || len(errs) != 1 {
		t.Errorf("a cursor that does not move: %d calls, errors %v; want 2 calls and one error", calls, errs)
	}
}

// pausedSubscriptions creates n paused subscriptions of tenantID, receiving every type, and returns their
// ids oldest first. Paused, their deliveries wait as pending: no test here waits on them, and a worker
// of another test's server on the same database leaves them alone.
func (e *env) pausedSubscriptions(ctx context.Context, tenantID string, n int) []string {
	e.t.Helper()
	var ids []string
	for i := range n {
		res, err := e.admin.CreateSubscriptionWithResponse(ctx, tenantID, nil, client.CreateSubscriptionJSONRequestBody{
			URL: new(fmt.Sprintf("http://127.0.0.1:9/sdk/%d", i))})
		if err != nil {
			e.t.Fatalf("create subscription: %v", err)
		}
		if _, err := e.admin.PauseSubscriptionWithResponse(ctx, tenantID, res.JSON201.ID, nil); err != nil {
			e.t.Fatalf("pause subscription: %v", err)
		}
		ids = append(ids, res.JSON201.ID)
	}
	return ids
}

// clientCounting is a client holding token that counts in *n its requests whose path ends in suffix.
func (e *env) clientCounting(token, suffix string, n *int) *client.Client {
	e.t.Helper()
	tr := &http.Transport{}
	e.t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Timeout: 20 * time.Second, Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, suffix) {
			*n++
		}
		return tr.RoundTrip(r)
	})}
	c, err := client.New(e.base, token, client.WithHTTP(hc))
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func deliveryIDs(p *client.Published) []string {
	var ids []string
	for _, d := range p.Deliveries {
		ids = append(ids, d.ID)
	}
	return ids
}

func asAPIError(t *testing.T, what string, err error) *client.APIError {
	t.Helper()
	var ae *client.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: %v, want an *APIError", what, err)
	}
	return ae
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
