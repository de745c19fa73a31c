package api_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/internal/tenants"
)

// replayAnswer is a replay as the API returns it.
type replayAnswer struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Actor    string `json:"actor"`
	Criteria struct {
		TenantID       string   `json:"tenant_id"`
		SubscriptionID string   `json:"subscription_id"`
		States         []string `json:"states"`
		CreatedFrom    string   `json:"created_from"`
		CreatedTo      string   `json:"created_to"`
	} `json:"criteria"`
	DryRun         bool       `json:"dry_run"`
	State          string     `json:"state"`
	Matched        int        `json:"matched"`
	Scheduled      int        `json:"scheduled"`
	Skipped        int        `json:"skipped"`
	Progress       *float64   `json:"progress"`
	SpreadSeconds  int        `json:"spread_seconds"`
	TenantID       *string    `json:"tenant_id"`
	SubscriptionID *string    `json:"subscription_id"`
	StartedAt      time.Time  `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	Sample         *[]string  `json:"sample"`
	// The outcome of what it scheduled; pointers, to tell a missing field from 0.
	Delivered *int `json:"delivered"`
	Failed    *int `json:"failed"`
	Pending   *int `json:"pending"`
	TakenOver *int `json:"taken_over"`
}

// outcome is the replay's delivered/failed/pending/taken_over, "missing" when a field is absent.
func (r replayAnswer) outcome() string {
	if r.Delivered == nil || r.Failed == nil || r.Pending == nil || r.TakenOver == nil {
		return "missing"
	}
	return fmt.Sprintf("%d/%d/%d/%d", *r.Delivered, *r.Failed, *r.Pending, *r.TakenOver)
}

type replayPage struct {
	Items      []replayAnswer `json:"items"`
	NextCursor *string        `json:"next_cursor"`
}

// replayedDelivery is the part of a delivery the replay tests read.
type replayedDelivery struct {
	ID            string     `json:"id"`
	State         string     `json:"state"`
	AttemptCount  int        `json:"attempt_count"`
	TotalAttempts int        `json:"total_attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	DeadReason    *string    `json:"dead_reason"`
	DeadAt        *time.Time `json:"dead_at"`
	ReplayID      *string    `json:"replay_id"`
}

func (e *env) replayedDelivery(tenantID, id string) replayedDelivery {
	e.t.Helper()
	return must[replayedDelivery](e, 200, "GET", "/tenants/"+tenantID+"/deliveries/"+id, adminToken, nil)
}

// switchable is a receiver answering 400 (a permanent failure: one attempt kills the delivery) until fixed.
type switchable struct {
	*receiver
	fixed atomic.Bool
}

func newSwitchable(t *testing.T) *switchable {
	s := &switchable{}
	s.receiver = newReceiver(t, func(string, int) int {
		if s.fixed.Load() {
			return 200
		}
		return 400
	})
	return s
}

// deadDeliveries publishes n events of type typ and waits until each of their deliveries is failed; it
// returns the delivery ids in publishing order.
func (e *env) deadDeliveries(tenantID, typ string, n int) []string {
	e.t.Helper()
	var ids []string
	for i := range n {
		p := e.publish(tenantID, typ, map[string]any{"n": i})
		for _, d := range p.Deliveries {
			ids = append(ids, d.ID)
		}
	}
	for _, id := range ids {
		e.waitState(tenantID, id, "failed")
	}
	return ids
}

// window is a created_from / created_to pair around now.
func window() (string, string) {
	now := time.Now().UTC()
	return now.Add(-time.Hour).Format(time.RFC3339Nano), now.Add(time.Hour).Format(time.RFC3339Nano)
}

// waitReplay polls GET path until the replay is no longer running, checking its progress on the way.
func (e *env) waitReplay(path, token string) replayAnswer {
	e.t.Helper()
	last := -1.0
	var r replayAnswer
	if !eventually(20*time.Second, 20*time.Millisecond, func() bool {
		r = must[replayAnswer](e, 200, "GET", path, token, nil)
		if r.Progress == nil || *r.Progress < 0 || *r.Progress > 1 || *r.Progress < last {
			e.t.Fatalf("%s: progress %v after %v", path, r.Progress, last)
		}
		last = *r.Progress
		if r.Scheduled > r.Matched {
			e.t.Fatalf("%s: scheduled %d of %d matched", path, r.Scheduled, r.Matched)
		}
		return r.State != "running"
	}) {
		e.t.Fatalf("%s still running after 20 s: %+v", path, r)
	}
	if *r.Progress != 1 || r.FinishedAt == nil {
		e.t.Fatalf("%s: ended without progress 1 and finished_at: %+v", path, r)
	}
	return r
}

// TestReplayAuth: no token is 401; tenant tokens are 403 on the admin routes; unknown and malformed ids,
// other tenants' subscriptions and replays are 404.
func TestReplayAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	from, to := window()
	body := map[string]any{"tenant_id": f.tenant, "created_from": from, "created_to": to, "dry_run": true}
	recoverPath := "/tenants/" + f.tenant + "/subscriptions/" + f.sub + "/recover"
	since := map[string]any{"since": from, "dry_run": true}

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/replays", body}, {"GET", "/replays", nil}, {"GET", "/replays/" + uuid.NewString(), nil},
		{"POST", recoverPath, since}, {"GET", "/tenants/" + f.tenant + "/replays", nil},
		{"GET", "/tenants/" + f.tenant + "/replays/" + uuid.NewString(), nil},
	} {
		wantError(t, "no token "+c.method+" "+c.path, e.call(c.method, c.path, "", c.body), "UNAUTHENTICATED")
		wantError(t, "wrong token "+c.method+" "+c.path, e.call(c.method, c.path, "hl_nope", c.body), "UNAUTHENTICATED")
	}

	bulk := must[replayAnswer](e, 201, "POST", "/replays", adminToken, body)
	for _, c := range []struct {
		method, path string
		body         any
	}{{"POST", "/replays", body}, {"GET", "/replays", nil}, {"GET", "/replays/" + bulk.ID, nil}} {
		for _, tok := range []string{f.fullToken, f.otherFull} {
			wantError(t, "tenant token on "+c.method+" "+c.path, e.call(c.method, c.path, tok, c.body), "FORBIDDEN")
		}
	}

	// Scopes: recover needs deliveries:write, the tenant's replay reads deliveries:read.
	readOnly := e.newToken(f.tenant, tenants.ScopeDeliveriesRead, tenants.ScopeSubscriptionsRead, tenants.ScopeSubscriptionsWrite)
	wantError(t, "recover without deliveries:write", e.call("POST", recoverPath, readOnly, since), "FORBIDDEN")
	writeOnly := e.newToken(f.tenant, tenants.ScopeDeliveriesWrite)
	wantError(t, "list recovers without deliveries:read", e.call("GET", "/tenants/"+f.tenant+"/replays", writeOnly, nil), "FORBIDDEN")
	rec := must[replayAnswer](e, 201, "POST", recoverPath, writeOnly, since)
	wantError(t, "read recover without deliveries:read", e.call("GET", "/tenants/"+f.tenant+"/replays/"+rec.ID, writeOnly, nil), "FORBIDDEN")
	must[replayAnswer](e, 200, "GET", "/tenants/"+f.tenant+"/replays/"+rec.ID, readOnly, nil)

	unknown := uuid.NewString()
	for _, c := range []struct {
		what, token, method, path string
		body                      any
	}{
		{"unknown replay", adminToken, "GET", "/replays/" + unknown, nil},
		{"malformed replay id", adminToken, "GET", "/replays/not-a-uuid", nil},
		{"malformed replay id (long)", adminToken, "GET", "/replays/" + strings.Repeat("9", 300), nil},
		{"unknown tenant replay", f.fullToken, "GET", "/tenants/" + f.tenant + "/replays/" + unknown, nil},
		{"malformed tenant replay", f.fullToken, "GET", "/tenants/" + f.tenant + "/replays/%00", nil},
		{"bulk replay on a tenant path", adminToken, "GET", "/tenants/" + f.tenant + "/replays/" + bulk.ID, nil},
		{"recover via another tenant's path (admin)", adminToken, "GET", "/tenants/" + f.other + "/replays/" + rec.ID, nil},
		{"recover of another tenant", f.otherFull, "GET", "/tenants/" + f.other + "/replays/" + rec.ID, nil},
		{"another tenant's recovers", f.otherFull, "GET", "/tenants/" + f.tenant + "/replays", nil},
		{"another tenant's recover", f.otherFull, "GET", "/tenants/" + f.tenant + "/replays/" + rec.ID, nil},
		{"unknown tenant's recovers (admin)", adminToken, "GET", "/tenants/" + unknown + "/replays", nil},
		{"recover another tenant's subscription via own path", f.fullToken, "POST",
			"/tenants/" + f.tenant + "/subscriptions/" + f.otherSub + "/recover", since},
		{"recover another tenant's subscription (admin, wrong tenant)", adminToken, "POST",
			"/tenants/" + f.tenant + "/subscriptions/" + f.otherSub + "/recover", since},
		{"recover on another tenant's path", f.fullToken, "POST",
			"/tenants/" + f.other + "/subscriptions/" + f.otherSub + "/recover", since},
		{"recover an unknown subscription", f.fullToken, "POST", "/tenants/" + f.tenant + "/subscriptions/" + unknown + "/recover", since},
		{"recover a malformed subscription id", f.fullToken, "POST", "/tenants/" + f.tenant + "/subscriptions/x/recover", since},
	} {
		wantError(t, c.what, e.call(c.method, c.path, c.token, c.body), "NOT_FOUND")
	}
}

// TestReplayInvalidRequest: every malformed or missing field is 400 INVALID_REQUEST, and changes nothing.
func TestReplayInvalidRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	f := newFixture(e)
	from, to := window()
	for _, c := range invalidReplays(f.tenant, from, to) {
		wantError(t, "POST /replays "+c.what, e.call("POST", "/replays", adminToken, c.body), "INVALID_REQUEST")
	}

	recoverPath := "/tenants/" + f.tenant + "/subscriptions/" + f.sub + "/recover"
	for _, c := range []struct {
		what string
		body any
	}{
		{"no since", map[string]any{"dry_run": true}},
		{"empty since", map[string]any{"since": ""}},
		{"since null", map[string]any{"since": nil}},
		{"since not RFC 3339", map[string]any{"since": "last tuesday"}},
		{"since a number", map[string]any{"since": 5}},
		{"since over 14 days ago", map[string]any{"since": time.Now().Add(-15 * 24 * time.Hour).Format(time.RFC3339)}},
		{"since in the future", map[string]any{"since": time.Now().Add(time.Hour).Format(time.RFC3339)}},
		{"dry_run a number", map[string]any{"since": from, "dry_run": 1}},
		{"unknown field", map[string]any{"since": from, "until": to}},
		{"empty body", ``},
	} {
		wantError(t, "recover "+c.what, e.call("POST", recoverPath, f.fullToken, c.body), "INVALID_REQUEST")
	}

	for _, q := range []string{"limit=0", "limit=101", "limit=x", "cursor=garbage", "cursor=" + strings.Repeat("A", 50), "tenant_id=" + f.tenant} {
		wantError(t, "GET /replays?"+q, e.call("GET", "/replays?"+q, adminToken, nil), "INVALID_REQUEST")
		wantError(t, "GET tenant replays?"+q, e.call("GET", "/tenants/"+f.tenant+"/replays?"+q, f.fullToken, nil), "INVALID_REQUEST")
	}

	// Nothing was recorded, nothing moved.
	if got := must[replayPage](e, 200, "GET", "/tenants/"+f.tenant+"/replays", f.fullToken, nil); len(got.Items) != 0 {
		t.Errorf("invalid requests recorded recovers: %+v", got.Items)
	}
	if d := e.replayedDelivery(f.tenant, f.dead); d.State != "failed" || d.ReplayID != nil || d.DeadAt == nil {
		t.Errorf("dead delivery changed: %+v", d)
	}
}

// invalidReplays are POST /replays bodies refused with INVALID_REQUEST: a valid replay of tenant over
// from–to, each with one field missing or wrong.
func invalidReplays(tenant, from, to string) []struct {
	what string
	body any
} {
	valid := func(change map[string]any) map[string]any {
		b := map[string]any{"tenant_id": tenant, "created_from": from, "created_to": to}
		for k, v := range change {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	return []struct {
		what string
		body any
	}{
		{"no created_from", valid(map[string]any{"created_from": nil})},
		{"no created_to", valid(map[string]any{"created_to": nil})},
		{"neither time", map[string]any{"tenant_id": tenant}},
		{"empty created_from", valid(map[string]any{"created_from": ""})},
		{"created_from not RFC 3339", valid(map[string]any{"created_from": "2026-01-02 15:04:05"})},
		{"created_to not RFC 3339", valid(map[string]any{"created_to": "yesterday"})},
		{"created_to impossible date", valid(map[string]any{"created_to": "2026-02-30T00:00:00Z"})},
		{"created_from a number", valid(map[string]any{"created_from": 1767225600})},
		{"created_to before created_from", valid(map[string]any{"created_from": to, "created_to": from})},
		{"created_to equal to created_from", valid(map[string]any{"created_to": from})},
		{"tenant_id not a uuid", valid(map[string]any{"tenant_id": "acme"})},
		{"tenant_id empty", valid(map[string]any{"tenant_id": ""})},
		{"tenant_id a number", valid(map[string]any{"tenant_id": 7})},
		{"tenant_id unknown", valid(map[string]any{"tenant_id": uuid.NewString()})},
		{"subscription_id not a uuid", valid(map[string]any{"subscription_id": "sub_1"})},
		{"states pending", valid(map[string]any{"states": []string{"pending"}})},
		{"states delivered", valid(map[string]any{"states": []string{"failed", "delivered"}})},
		{"states dead alias", valid(map[string]any{"states": []string{"dead"}})},
		{"states a string", valid(map[string]any{"states": "failed"})},
		{"states with null", valid(map[string]any{"states": []any{nil}})},
		{"event_type malformed", valid(map[string]any{"event_type": "has space"})},
		{"dead_reason unknown", valid(map[string]any{"dead_reason": "bored"})},
		{"spread_seconds 0", valid(map[string]any{"spread_seconds": 0})},
		{"spread_seconds negative", valid(map[string]any{"spread_seconds": -5})},
		{"spread_seconds over a day", valid(map[string]any{"spread_seconds": 86401})},
		{"spread_seconds fractional", valid(map[string]any{"spread_seconds": 1.5})},
		{"spread_seconds a string", valid(map[string]any{"spread_seconds": "300"})},
		{"spread_seconds huge", `{"created_from":"` + from + `","created_to":"` + to + `","spread_seconds":1e30}`},
		{"dry_run a string", valid(map[string]any{"dry_run": "yes"})},
		{"unknown field", valid(map[string]any{"tenant": tenant})},
		{"not an object", `[]`},
		{"empty body", ``},
	}
}

// TestReplayDryRun: a dry run (bulk or recover) shows what matches and changes nothing.
func TestReplayDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newSwitchable(t)
	tid := e.newTenant("replay-dry")
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL + "/dry"}).ID
	ids := e.deadDeliveries(tid, "dry.run", 3)
	from, to := window()

	bulk := must[replayAnswer](e, 201, "POST", "/replays", adminToken,
		map[string]any{"tenant_id": tid, "created_from": from, "created_to": to, "dry_run": true, "states": []string{"failed"}})
	tok := e.newToken(tid, tenants.ScopeDeliveriesWrite)
	rec := must[replayAnswer](e, 201, "POST", "/tenants/"+tid+"/subscriptions/"+sub+"/recover", tok,
		map[string]any{"since": from, "dry_run": true})
	for _, r := range []replayAnswer{bulk, rec} {
		if !r.DryRun || r.State != "finished" || r.Matched != 3 || r.Scheduled != 0 || r.Progress == nil || *r.Progress != 1 ||
			r.FinishedAt == nil || r.Sample == nil {
			t.Fatalf("dry run answer: %+v", r)
		}
		if got := slices.Clone(*r.Sample); !sameSet(got, ids) {
			t.Errorf("dry run sample %v, want %v", got, ids)
		}
	}
	if bulk.Kind != "bulk" || bulk.Actor != "admin-token" || bulk.TenantID != nil || bulk.Criteria.TenantID != tid ||
		bulk.SpreadSeconds != 300 || !slices.Equal(bulk.Criteria.States, []string{"failed"}) {
		t.Errorf("bulk dry run: %+v", bulk)
	}
	if rec.Kind != "recover" || rec.Actor != "token:test" || rec.TenantID == nil || *rec.TenantID != tid ||
		rec.SubscriptionID == nil || *rec.SubscriptionID != sub {
		t.Errorf("recover dry run: %+v", rec)
	}
	// The audit log keeps dry runs, without the sample.
	got := must[replayAnswer](e, 200, "GET", "/replays/"+bulk.ID, adminToken, nil)
	if got.ID != bulk.ID || !got.DryRun || got.Matched != 3 || got.Sample != nil {
		t.Errorf("GET dry run: %+v", got)
	}

	// Nothing changed, and nothing is left to wait for: the dry runs answered finished (above), and only a
	// running replay is taken on by a runner after its answer.
	for _, id := range ids {
		if d := e.replayedDelivery(tid, id); d.State != "failed" || d.ReplayID != nil || d.DeadAt == nil || d.TotalAttempts != 1 {
			t.Errorf("dry run changed delivery %s: %+v", id, d)
		}
	}
	if n := len(rc.requests("/dry")); n != 3 {
		t.Errorf("receiver got %d requests, want the 3 original attempts", n)
	}

	// Nothing matching: an empty sample, not a missing one.
	empty := must[replayAnswer](e, 201, "POST", "/replays", adminToken,
		map[string]any{"tenant_id": tid, "created_from": from, "created_to": to, "dry_run": true, "event_type": "no.such"})
	if empty.Matched != 0 || empty.Sample == nil || len(*empty.Sample) != 0 {
		t.Errorf("empty dry run: %+v", empty)
	}
}

// TestReplayRedelivers: dead deliveries go back to pending with a fresh schedule and the replay's id, GET
// shows the replay until it is finished, and they are delivered once the endpoint works.
func TestReplayRedelivers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newSwitchable(t)
	tid := e.newTenant("replay-real")
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL + "/hook"}).ID
	ids := e.deadDeliveries(tid, "order.created", 4)
	other := e.newTenant("replay-bystander")
	e.newSubscription(other, map[string]any{"url": rc.URL + "/bystander"})
	bystander := e.deadDeliveries(other, "order.created", 1)[0]

	// Paused, the replayed deliveries wait as pending, so what the replay did can be seen.
	must[subscription](e, 200, "POST", "/tenants/"+tid+"/subscriptions/"+sub+"/pause", adminToken, nil)
	from, to := window()
	start := time.Now()
	r := must[replayAnswer](e, 201, "POST", "/replays", adminToken,
		map[string]any{"tenant_id": tid, "created_from": from, "created_to": to, "spread_seconds": 2,
			"event_type": "order.created", "dead_reason": "permanent_status", "states": []string{"failed", "expired"}})
	if r.State != "running" || r.DryRun || r.Matched != 4 || r.Sample != nil || r.SpreadSeconds != 2 || r.Progress == nil {
		t.Fatalf("replay answer: %+v", r)
	}
	done := e.waitReplay("/replays/"+r.ID, adminToken)
	if done.State != "finished" || done.Scheduled != 4 || done.Skipped != 0 {
		t.Fatalf("finished replay: %+v", done)
	}
	for _, id := range ids {
		d := e.replayedDelivery(tid, id)
		if d.State != "pending" || d.AttemptCount != 0 || d.DeadAt != nil || d.DeadReason != nil ||
			d.ReplayID == nil || *d.ReplayID != r.ID || d.NextAttemptAt == nil ||
			d.NextAttemptAt.Before(start.Add(-time.Second)) || d.NextAttemptAt.After(time.Now().Add(3*time.Second)) {
			t.Errorf("replayed delivery %s: %+v", id, d)
		}
	}
	if d := e.replayedDelivery(other, bystander); d.State != "failed" || d.ReplayID != nil {
		t.Errorf("another tenant's dead delivery was touched: %+v", d)
	}

	// A second replay of the same window finds nothing dead any more.
	again := must[replayAnswer](e, 201, "POST", "/replays", adminToken,
		map[string]any{"tenant_id": tid, "created_from": from, "created_to": to})
	if again.Matched != 0 || again.State != "finished" {
		t.Errorf("second replay: %+v", again)
	}

	// The endpoint fixed and the subscription resumed, they are delivered.
	rc.fixed.Store(true)
	must[subscription](e, 200, "POST", "/tenants/"+tid+"/subscriptions/"+sub+"/resume", adminToken, nil)
	for _, id := range ids {
		e.waitState(tid, id, "delivered")
		if d := e.replayedDelivery(tid, id); d.ReplayID == nil || *d.ReplayID != r.ID || d.TotalAttempts != 2 || d.DeadAt != nil {
			t.Errorf("delivered replayed delivery %s: %+v", id, d)
		}
	}
	if n := len(rc.requests("/hook")); n != 8 {
		t.Errorf("receiver got %d requests, want 4 failed and 4 delivered", n)
	}
}

// TestRecover: a customer's recover replays only that subscription's dead deliveries; a second recover
// while one runs is 409; the tenant reads its recovers.
func TestRecover(t *testing.T) {
	t.Parallel()
	// A database of its own: the test holds its server's replay runner, and another server's would run
	// the held recover.
	e := newEnv(t, withBackground, ownDatabase(t))
	rc := newSwitchable(t)
	tid := e.newTenant("recover")
	subA := e.newSubscription(tid, map[string]any{"url": rc.URL + "/a"}).ID
	subB := e.newSubscription(tid, map[string]any{"url": rc.URL + "/b"}).ID
	p := e.publish(tid, "invoice.paid", map[string]any{"n": 1})
	deadA, deadB := deliveryFor(t, p, subA), deliveryFor(t, p, subB)
	e.waitState(tid, deadA, "failed")
	e.waitState(tid, deadB, "failed")
	tok := e.newToken(tid, tenants.ScopeDeliveriesWrite, tenants.ScopeDeliveriesRead)
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	recoverA := "/tenants/" + tid + "/subscriptions/" + subA + "/recover"

	// Hold the runner so the first recover is still running when the second comes. (No other server's
	// runner works on it either: no other server works on this test's database.)
	if err := e.srv.ReplayRunner.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := must[replayAnswer](e, 201, "POST", recoverA, tok, map[string]any{"since": since})
	if first.State != "running" || first.Kind != "recover" || first.Matched != 1 || first.Criteria.SubscriptionID != subA {
		t.Fatalf("recover answer: %+v", first)
	}
	wantError(t, "second recover while one runs", e.call("POST", recoverA, tok, map[string]any{"since": since}), "INVALID_STATE")
	wantError(t, "second recover while one runs (admin)", e.call("POST", recoverA, adminToken, map[string]any{"since": since}), "INVALID_STATE")
	// A dry run does not conflict, nor does another subscription's recover.
	must[replayAnswer](e, 201, "POST", recoverA, tok, map[string]any{"since": since, "dry_run": true})
	mid := must[replayAnswer](e, 200, "GET", "/tenants/"+tid+"/replays/"+first.ID, tok, nil)
	if mid.State != "running" || mid.Progress == nil || *mid.Progress != 0 {
		t.Errorf("held recover: %+v", mid)
	}
	rc.fixed.Store(true)
	if err := e.srv.ReplayRunner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	done := e.waitReplay("/tenants/"+tid+"/replays/"+first.ID, tok)
	if done.State != "finished" || done.Scheduled != 1 {
		t.Fatalf("recover finished: %+v", done)
	}
	d := e.waitState(tid, deadA, "delivered")
	if d.TotalAttempts != 2 {
		t.Errorf("recovered delivery: %+v", d)
	}
	if b := e.replayedDelivery(tid, deadB); b.State != "failed" || b.ReplayID != nil {
		t.Errorf("recover of A touched B's delivery: %+v", b)
	}
	if n := len(rc.requests("/b")); n != 1 {
		t.Errorf("B's endpoint got %d requests, want 1", n)
	}
	// Once finished, a new recover may start (nothing left to do for A).
	if r := must[replayAnswer](e, 201, "POST", recoverA, tok, map[string]any{"since": since}); r.Matched != 0 || r.State != "finished" {
		t.Errorf("recover after the first finished: %+v", r)
	}

	// The tenant's list: its recovers only, newest first.
	mine := must[replayPage](e, 200, "GET", "/tenants/"+tid+"/replays", tok, nil)
	if len(mine.Items) != 3 || mine.Items[2].ID != first.ID || mine.NextCursor == nil || *mine.NextCursor != "" {
		t.Fatalf("tenant recovers: %+v", mine)
	}
	for _, r := range mine.Items {
		if r.Kind != "recover" || r.TenantID == nil || *r.TenantID != tid {
			t.Errorf("listed as the tenant's: %+v", r)
		}
	}
}

// TestReplayAuditLog: GET /replays lists every replay newest first, page by page.
func TestReplayAuditLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tid := e.newTenant("audit")
	from, to := window()
	var mine []string
	for i := range 5 {
		r := must[replayAnswer](e, 201, "POST", "/replays", adminToken, map[string]any{"tenant_id": tid,
			"created_from": from, "created_to": to, "dry_run": true, "event_type": fmt.Sprintf("audit.%d", i)})
		mine = append(mine, r.ID)
	}
	slices.Reverse(mine) // newest first

	var seen []replayAnswer
	cursor, pages := "", 0
	for {
		path := "/replays?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		pg := must[replayPage](e, 200, "GET", path, adminToken, nil)
		pages++
		if len(pg.Items) > 2 || pg.NextCursor == nil {
			t.Fatalf("page %d: %+v", pages, pg)
		}
		seen = append(seen, pg.Items...)
		if *pg.NextCursor == "" || pages > 1000 {
			break
		}
		cursor = *pg.NextCursor
	}
	if pages < 3 {
		t.Errorf("5 replays in %d pages of 2", pages)
	}
	var order []string
	ids := map[string]bool{}
	for i, r := range seen {
		if ids[r.ID] {
			t.Errorf("replay %s listed twice", r.ID)
		}
		ids[r.ID] = true
		if i > 0 && r.StartedAt.After(seen[i-1].StartedAt) {
			t.Errorf("not newest first at %d: %s after %s", i, r.StartedAt, seen[i-1].StartedAt)
		}
		if slices.Contains(mine, r.ID) {
			order = append(order, r.ID)
		}
	}
	if !slices.Equal(order, mine) {
		t.Errorf("this test's replays listed as %v, want %v", order, mine)
	}
	// A bulk replay is not one of the tenant's recovers.
	if pg := must[replayPage](e, 200, "GET", "/tenants/"+tid+"/replays", adminToken, nil); len(pg.Items) != 0 {
		t.Errorf("tenant list shows bulk replays: %+v", pg.Items)
	}
}

// TestReplayOutcomeInTheAPI: GET /replays/{id}, GET /replays and the tenant's recovers say what became of
// what a replay scheduled (delivered, failed again, pending), not only that it was scheduled; dry runs can
// be listed apart.
func TestReplayOutcomeInTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newSwitchable(t)
	tid := e.newTenant("replay-outcome")
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL + "/hook"}).ID
	e.deadDeliveries(tid, "order.created", 3)
	// Paused, the replayed deliveries wait as pending: the replay is finished, its deliveries are not.
	must[subscription](e, 200, "POST", "/tenants/"+tid+"/subscriptions/"+sub+"/pause", adminToken, nil)
	from, to := window()
	r := must[replayAnswer](e, 201, "POST", "/replays", adminToken,
		map[string]any{"tenant_id": tid, "created_from": from, "created_to": to, "spread_seconds": 1})
	done := e.waitReplay("/replays/"+r.ID, adminToken)
	if done.State != "finished" || done.Scheduled != 3 || done.outcome() != "0/0/3/0" {
		t.Fatalf("finished scheduling: %+v, outcome %s", done, done.outcome())
	}
	// Resumed against an endpoint that still fails: dead again, every one final.
	must[subscription](e, 200, "POST", "/tenants/"+tid+"/subscriptions/"+sub+"/resume", adminToken, nil)
	var got replayAnswer
	if !eventually(20*time.Second, 20*time.Millisecond, func() bool {
		got = must[replayAnswer](e, 200, "GET", "/replays/"+r.ID, adminToken, nil)
		return got.outcome() == "0/3/0/0"
	}) {
		t.Fatalf("outcome %s, want 0/3/0/0", got.outcome())
	}
	if it, found := e.listedReplay(r.ID); !found {
		t.Error("replay not in GET /replays")
	} else if it.outcome() != "0/3/0/0" {
		t.Errorf("GET /replays outcome %s", it.outcome())
	}

	// A customer's recover of them, delivered this time: the tenant's routes carry the same counts.
	rc.fixed.Store(true)
	tok := e.newToken(tid, tenants.ScopeDeliveriesWrite, tenants.ScopeDeliveriesRead)
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	rec := must[replayAnswer](e, 201, "POST", "/tenants/"+tid+"/subscriptions/"+sub+"/recover", tok, map[string]any{"since": since})
	if !eventually(20*time.Second, 20*time.Millisecond, func() bool {
		got = must[replayAnswer](e, 200, "GET", "/tenants/"+tid+"/replays/"+rec.ID, tok, nil)
		return got.State == "finished" && got.outcome() == "3/0/0/0"
	}) {
		t.Fatalf("recover %s, outcome %s, want 3/0/0/0", got.State, got.outcome())
	}
	// The bulk replay's deliveries were taken over by the recover: they count there only.
	if got := must[replayAnswer](e, 200, "GET", "/replays/"+r.ID, adminToken, nil); got.outcome() != "0/0/0/3" {
		t.Errorf("bulk replay after the recover took its deliveries over: %s", got.outcome())
	}
	mine := must[replayPage](e, 200, "GET", "/tenants/"+tid+"/replays", tok, nil)
	if len(mine.Items) != 1 || mine.Items[0].outcome() != "3/0/0/0" {
		t.Errorf("tenant's recovers: %+v", mine.Items)
	}

	// dry_run=true lists dry runs only, dry_run=false real ones only; without it, both.
	dry := must[replayAnswer](e, 201, "POST", "/tenants/"+tid+"/subscriptions/"+sub+"/recover", tok, map[string]any{"since": since, "dry_run": true})
	if dry.outcome() != "0/0/0/0" {
		t.Errorf("dry run outcome %s", dry.outcome())
	}
	for q, want := range map[string][]string{"": {dry.ID, rec.ID}, "?dry_run=true": {dry.ID}, "?dry_run=false": {rec.ID}} {
		var got []string
		for _, it := range must[replayPage](e, 200, "GET", "/tenants/"+tid+"/replays"+q, tok, nil).Items {
			got = append(got, it.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("GET /tenants/{t}/replays%s: %v, want %v", q, got, want)
		}
	}
	wantError(t, "dry_run=maybe", e.call("GET", "/replays?dry_run=maybe", adminToken, nil), "INVALID_REQUEST")
}

// listedReplay finds a replay in GET /replays, page by page: the other tests (in parallel) add theirs to the
// audit log too.
func (e *env) listedReplay(id string) (replayAnswer, bool) {
	e.t.Helper()
	path := "/replays"
	for range 1000 {
		pg := must[replayPage](e, 200, "GET", path, adminToken, nil)
		for _, it := range pg.Items {
			if it.ID == id {
				return it, true
			}
		}
		if pg.NextCursor == nil || *pg.NextCursor == "" {
			break
		}
		path = "/replays?cursor=" + *pg.NextCursor
	}
	return replayAnswer{}, false
}

// TestRecoverPreviewRateLimited: recover dry runs are limited per subscription (429 with Retry-After);
// the real recover is not.
func TestRecoverPreviewRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tid := e.newTenant("recover-limit")
	sub := e.newSubscription(tid, map[string]any{"url": "https://example.com/hook"}).ID
	tok := e.newToken(tid, tenants.ScopeDeliveriesWrite, tenants.ScopeDeliveriesRead)
	path := "/tenants/" + tid + "/subscriptions/" + sub + "/recover"
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for range 5 {
		must[replayAnswer](e, 201, "POST", path, tok, map[string]any{"since": since, "dry_run": true})
	}
	r := e.call("POST", path, tok, map[string]any{"since": since, "dry_run": true})
	wantError(t, "sixth preview in a row", r, "RATE_LIMITED")
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Errorf("limited preview: %s, Retry-After %q", r, r.header.Get("Retry-After"))
	}
	if got := must[replayPage](e, 200, "GET", "/tenants/"+tid+"/replays?dry_run=true", tok, nil); len(got.Items) != 5 {
		t.Errorf("%d previews recorded, want 5", len(got.Items))
	}
	must[replayAnswer](e, 201, "POST", path, tok, map[string]any{"since": since})
}
