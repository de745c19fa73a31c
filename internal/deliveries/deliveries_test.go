package deliveries_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
)

func (e *env) retry(id uuid.UUID, actor deliveries.Actor) deliveries.Delivery {
	e.t.Helper()
	d, err := e.svc.Retry(e.ctx, e.tenant, id, actor)
	if err != nil {
		e.t.Fatalf("Retry: %v", err)
	}
	return d
}

func TestManualRetryStartsAFreshScheduleAndKeepsCounting(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var succeed atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if succeed.Load() {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	e.runOnce(w)
	first := e.wantState(id, delivery.Failed, 1)

	// failed → pending
	e.clock.Advance(2 * time.Hour)
	d := e.retry(id, deliveries.Actor{})
	now := e.clock.Now()
	if d.State != delivery.Pending || d.AttemptCount != 0 || d.TotalAttempts != 1 || d.ManualRetries != 1 ||
		d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(now) || !d.GiveUpAt.Equal(now.Add(e.policy.Window)) || d.DeadReason != nil {
		t.Fatalf("after retry from failed: %+v", d)
	}
	if !d.GiveUpAt.After(first.GiveUpAt) {
		t.Error("give_up_at was not renewed")
	}
	e.runOnce(w)
	e.wantState(id, delivery.Failed, 1)

	// failed → pending → delivered, then a resend of a delivered one
	succeed.Store(true)
	e.retry(id, deliveries.Actor{})
	e.runOnce(w)
	e.wantState(id, delivery.Delivered, 1)
	d = e.retry(id, deliveries.Actor{})
	if d.State != delivery.Pending || d.ManualRetries != 3 || d.TotalAttempts != 3 {
		t.Fatalf("after resend: %+v", d)
	}
	e.runOnce(w)
	e.wantState(id, delivery.Delivered, 1)

	// The tenant's cap is 3; an admin is not capped and does not count.
	_, err := e.svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{})
	wantFault(t, err, fault.MaxRetries)
	if d := e.retry(id, deliveries.Actor{Admin: true}); d.ManualRetries != 3 {
		t.Errorf("an admin retry counted: manual_retries %d", d.ManualRetries)
	}
	e.runOnce(w)
	row := e.wantState(id, delivery.Delivered, 1)
	if row.TotalAttempts != 5 {
		t.Errorf("total_attempts %d, want 5", row.TotalAttempts)
	}
	var numbers []int32
	for _, a := range e.attempts(id) {
		numbers = append(numbers, a.Attempt)
	}
	if !slices.Equal(numbers, []int32{1, 2, 3, 4, 5}) {
		t.Errorf("attempt numbers %v, want 1…5 across replays", numbers)
	}
	for _, r := range rc.requests() {
		if r.Header.Get("webhook-id") != rc.requests()[0].Header.Get("webhook-id") {
			t.Error("webhook-id changed across replays")
		}
	}
}

func TestManualRetryOfExpiredGetsAFullSchedule(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setPolicy(delivery.RetryPolicy{Base: time.Second, MaxDelay: time.Minute, MaxAttempts: 2, Window: time.Hour})
	rc := newReceiver(t, statuses(500))
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	e.runOnce(w)
	e.clock.Advance(time.Minute)
	e.runOnce(w)
	e.wantState(id, delivery.Expired, 2)

	e.retry(id, deliveries.Actor{})
	e.runOnce(w)
	if d := e.wantState(id, delivery.Pending, 1); d.TotalAttempts != 3 {
		t.Fatalf("total_attempts %d, want 3", d.TotalAttempts)
	}
	e.clock.Advance(time.Minute)
	e.runOnce(w)
	if d := e.wantState(id, delivery.Expired, 2); d.TotalAttempts != 4 {
		t.Fatalf("total_attempts %d, want 4", d.TotalAttempts)
	}
}

func TestManualRetryRefusedStates(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(400))
	e.subscribe(rc.URL(), subscriptions.Input{})
	pending := e.publishOne(`{}`)
	_, err := e.svc.Retry(e.ctx, e.tenant, pending, deliveries.Actor{})
	wantFault(t, err, fault.InvalidState)
	_, err = e.svc.Retry(e.ctx, e.tenant, pending, deliveries.Actor{Admin: true})
	wantFault(t, err, fault.InvalidState)

	e.claim(10)
	e.wantState(pending, delivery.InFlight, 0)
	_, err = e.svc.Retry(e.ctx, e.tenant, pending, deliveries.Actor{})
	wantFault(t, err, fault.InvalidState)

	_, err = e.svc.Retry(e.ctx, e.tenant, uuid.New(), deliveries.Actor{})
	wantFault(t, err, fault.NotFound)
	other := setupOtherTenant(t, e)
	_, err = e.svc.Retry(e.ctx, other.tenant, pending, deliveries.Actor{Admin: true})
	wantFault(t, err, fault.NotFound)
}

func TestManualRetryRateLimitedPerSubscription(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 100, 2) // 2 resends a minute
	rc := newReceiver(t, statuses(400))
	a, _ := e.subscribe(rc.srv.URL+"/a", subscriptions.Input{})
	for range 3 {
		e.publish("order.created", `{}`)
	}
	e.subscribe(rc.srv.URL+"/b", subscriptions.Input{})
	p := e.publish("order.created", `{}`)
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	var onA, onB []uuid.UUID
	rows, err := e.pool.Query(e.ctx, "SELECT id, subscription_id FROM webhook_deliveries WHERE state = 'failed' ORDER BY created_at, id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, sub uuid.UUID
		if err := rows.Scan(&id, &sub); err != nil {
			t.Fatal(err)
		}
		if sub == a.ID {
			onA = append(onA, id)
		} else {
			onB = append(onB, id)
		}
	}
	if rows.Err() != nil || len(onA) != 4 || len(onB) != 1 || len(p.Deliveries) != 2 {
		t.Fatalf("fixture: %d dead on a, %d on b (%v)", len(onA), len(onB), rows.Err())
	}

	for _, id := range onA[:2] {
		if _, err := svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = svc.Retry(e.ctx, e.tenant, onA[2], deliveries.Actor{})
	fe := wantFault(t, err, fault.RateLimited)
	if fe.RetryAfter <= 0 || fe.RetryAfter > 30*time.Second {
		t.Errorf("RetryAfter %s, want within the 30 s a token takes", fe.RetryAfter)
	}
	if d := e.delivery(onA[2]); d.State != "failed" || d.ManualRetries != 0 {
		t.Errorf("a limited retry changed the delivery: %s, %d", d.State, d.ManualRetries)
	}
	// Another subscription has its own budget.
	if _, err := svc.Retry(e.ctx, e.tenant, onB[0], deliveries.Actor{}); err != nil {
		t.Errorf("another subscription was limited: %v", err)
	}
	e.clock.Advance(fe.RetryAfter)
	if _, err := svc.Retry(e.ctx, e.tenant, onA[2], deliveries.Actor{}); err != nil {
		t.Errorf("after Retry-After: %v", err)
	}
	_, err = svc.Retry(e.ctx, e.tenant, onA[3], deliveries.Actor{})
	wantFault(t, err, fault.RateLimited)
}

func TestConcurrentManualRetriesQueueOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 100, 1000)
	rc := newReceiver(t, statuses(400))
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	for round := 1; round <= 5; round++ {
		e.runOnce(w)
		e.wantState(id, delivery.Failed, 1)
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{})
				if err == nil {
					ok.Add(1)
				} else if !fault.Is(err, fault.InvalidState) {
					t.Errorf("round %d: %v, want success or INVALID_STATE", round, err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 1 {
			t.Fatalf("round %d: %d of 8 concurrent retries succeeded, want 1", round, ok.Load())
		}
		if d := e.wantState(id, delivery.Pending, 0); d.ManualRetries != int32(round) {
			t.Fatalf("round %d: manual_retries %d", round, d.ManualRetries)
		}
	}
}

func TestDiscard(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setPolicy(delivery.RetryPolicy{Base: time.Second, MaxDelay: time.Minute, MaxAttempts: 1, Window: time.Hour})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(map[string]int{"/failed": 400, "/expired": 500, "/delivered": 200}[r.URL.Path])
	})
	for _, p := range []string{"/failed", "/expired", "/delivered"} {
		e.subscribe(rc.srv.URL+p, subscriptions.Input{})
	}
	e.publish("order.created", `{}`)
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	e.subscribe(rc.srv.URL+"/pending", subscriptions.Input{})
	e.publish("order.paid", `{}`) // 4 more, all pending
	byState := map[string][]uuid.UUID{}
	rows, _ := e.pool.Query(e.ctx, "SELECT id, state FROM webhook_deliveries")
	for rows.Next() {
		var id uuid.UUID
		var s string
		_ = rows.Scan(&id, &s)
		byState[s] = append(byState[s], id)
	}
	if len(byState["failed"]) != 1 || len(byState["expired"]) != 1 || len(byState["delivered"]) != 1 {
		t.Fatalf("fixture: %v", byState)
	}

	list := func(states ...string) []uuid.UUID {
		p, err := e.svc.List(e.ctx, e.tenant, deliveries.Filter{States: states, Limit: 100, WithTotal: true})
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for _, d := range p.Items {
			ids = append(ids, d.ID)
		}
		if int(*p.Total) != len(ids) {
			t.Errorf("total %d for %d items", *p.Total, len(ids))
		}
		return ids
	}
	if n := len(list()); n != 7 {
		t.Fatalf("listed %d, want 7", n)
	}
	for _, s := range []string{"failed", "expired"} {
		id := byState[s][0]
		if err := e.svc.Discard(e.ctx, e.tenant, id); err != nil {
			t.Fatalf("discard %s: %v", s, err)
		}
		if slices.Contains(list(), id) || slices.Contains(list("dead"), id) {
			t.Errorf("a discarded %s delivery is still listed", s)
		}
		d, err := e.svc.Get(e.ctx, e.tenant, id) // kept for audit
		if err != nil || !d.Discarded {
			t.Errorf("discarded delivery: %+v, %v", d.Delivery, err)
		}
		wantFault(t, e.svc.Discard(e.ctx, e.tenant, id), fault.InvalidState)
		_, err = e.svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{Admin: true})
		wantFault(t, err, fault.InvalidState)
	}
	if n := len(list()); n != 5 {
		t.Errorf("listed %d after two discards, want 5", n)
	}
	for _, s := range []string{"delivered", "pending"} {
		wantFault(t, e.svc.Discard(e.ctx, e.tenant, byState[s][0]), fault.InvalidState)
	}
	wantFault(t, e.svc.Discard(e.ctx, e.tenant, uuid.New()), fault.NotFound)
	other := setupOtherTenant(t, e)
	wantFault(t, e.svc.Discard(e.ctx, other.tenant, byState["failed"][0]), fault.NotFound)
}

// listFixture publishes 10 events a minute apart to two subscriptions (sub1 takes every type, sub2 only
// b.type) and moves some deliveries to other states; it returns the model the lists are checked against.
type listRow struct {
	id, sub   uuid.UUID
	eventType string
	state     string
	total     int
	created   time.Time
}

func listFixture(t *testing.T, e *env) (rows []listRow, sub1, sub2 uuid.UUID, t0 time.Time) {
	s1, _ := e.subscribe("http://127.0.0.1:1/one", subscriptions.Input{})
	types := []string{"b.type"}
	s2, _ := e.subscribe("http://127.0.0.1:1/two", subscriptions.Input{EventTypes: &types})
	t0 = e.clock.Now()
	set := map[[2]any][2]any{ // (subscription, event index) → (state, total_attempts)
		{s1.ID, 0}: {"delivered", 1}, {s1.ID, 1}: {"failed", 1}, {s1.ID, 2}: {"expired", 3},
		{s1.ID, 3}: {"pending", 2}, {s1.ID, 4}: {"in_flight", 0}, {s1.ID, 7}: {"failed", 2},
		{s2.ID, 5}: {"expired", 4}, {s2.ID, 9}: {"pending", 1},
	}
	for i := range 10 {
		typ := "a.type"
		if i%2 == 1 {
			typ = "b.type"
		}
		p := e.publish(typ, `{}`)
		for _, pd := range p.Deliveries {
			r := listRow{id: uuid.MustParse(pd.ID), sub: uuid.MustParse(pd.SubscriptionID), eventType: typ, state: "pending", created: p.CreatedAt}
			if s, ok := set[[2]any{r.sub, i}]; ok {
				r.state, r.total = s[0].(string), s[1].(int)
				if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = $2, total_attempts = $3, attempt_count = $3,
					lease_expires_at = CASE WHEN $2 = 'in_flight' THEN now() + interval '1 minute' END,
					dead_at = CASE WHEN $2 IN ('failed', 'expired') THEN now() END WHERE id = $1`, r.id, r.state, r.total); err != nil {
					t.Fatal(err)
				}
			}
			rows = append(rows, r)
		}
		e.clock.Advance(time.Minute)
	}
	slices.SortFunc(rows, func(a, b listRow) int { // newest first, then id descending
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return bytes.Compare(b.id[:], a.id[:])
	})
	return rows, s1.ID, s2.ID, t0
}

// listAll follows cursors to the end and checks each page.
func listAll(t *testing.T, e *env, f deliveries.Filter) (ids []uuid.UUID, pages int) {
	t.Helper()
	seen := map[uuid.UUID]bool{}
	for {
		p, err := e.svc.List(e.ctx, e.tenant, f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		pages++
		if len(p.Items) == 0 && pages > 1 {
			t.Errorf("page %d is empty: the previous page's cursor pointed past the end", pages)
		}
		if len(p.Items) > f.Limit && f.Limit > 0 {
			t.Errorf("page of %d items with limit %d", len(p.Items), f.Limit)
		}
		for _, d := range p.Items {
			if seen[d.ID] {
				t.Errorf("delivery %s on two pages", d.ID)
			}
			seen[d.ID] = true
			ids = append(ids, d.ID)
		}
		if f.WithTotal && (p.Total == nil || int(*p.Total) < len(ids)) {
			t.Errorf("page %d: total %v with %d items so far", pages, p.Total, len(ids))
		}
		if p.NextCursor == "" {
			return ids, pages
		}
		if pages > 100 {
			t.Fatal("cursor loop")
		}
		f.Cursor = p.NextCursor
	}
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rows, sub1, sub2, t0 := listFixture(t, e)
	ptr := func(x time.Time) *time.Time { return &x }
	cases := []struct {
		name string
		f    deliveries.Filter
		keep func(listRow) bool
	}{
		{"all", deliveries.Filter{}, func(listRow) bool { return true }},
		{"subscription", deliveries.Filter{SubscriptionID: &sub2}, func(r listRow) bool { return r.sub == sub2 }},
		{"dead", deliveries.Filter{States: []string{"dead"}}, func(r listRow) bool { return r.state == "failed" || r.state == "expired" }},
		{"retrying", deliveries.Filter{States: []string{"retrying"}}, func(r listRow) bool { return r.state == "pending" && r.total > 0 }},
		{"pending", deliveries.Filter{States: []string{"pending"}}, func(r listRow) bool { return r.state == "pending" }},
		{"delivered,in_flight", deliveries.Filter{States: []string{"delivered", "in_flight"}}, func(r listRow) bool { return r.state == "delivered" || r.state == "in_flight" }},
		{"expired", deliveries.Filter{States: []string{"expired"}}, func(r listRow) bool { return r.state == "expired" }},
		{"event type", deliveries.Filter{EventType: "b.type"}, func(r listRow) bool { return r.eventType == "b.type" }},
		{"since until", deliveries.Filter{Since: ptr(t0.Add(3 * time.Minute)), Until: ptr(t0.Add(6 * time.Minute))},
			func(r listRow) bool {
				return !r.created.Before(t0.Add(3*time.Minute)) && r.created.Before(t0.Add(6*time.Minute))
			}},
		{"sub1 dead since", deliveries.Filter{SubscriptionID: &sub1, States: []string{"dead"}, Since: ptr(t0.Add(2 * time.Minute))},
			func(r listRow) bool {
				return r.sub == sub1 && (r.state == "failed" || r.state == "expired") && !r.created.Before(t0.Add(2*time.Minute))
			}},
		{"no match", deliveries.Filter{EventType: "c.type"}, func(listRow) bool { return false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []uuid.UUID
			for _, r := range rows {
				if c.keep(r) {
					want = append(want, r.id)
				}
			}
			f := c.f
			f.Limit, f.WithTotal = 100, true
			p, err := e.svc.List(e.ctx, e.tenant, f)
			if err != nil {
				t.Fatal(err)
			}
			var got []uuid.UUID
			for _, d := range p.Items {
				got = append(got, d.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %d deliveries, want %d (in order, newest first)\n got %v\nwant %v", len(got), len(want), got, want)
			}
			if p.Total == nil || int(*p.Total) != len(want) || p.NextCursor != "" {
				t.Errorf("total %v, next cursor %q; want %d and none", p.Total, p.NextCursor, len(want))
			}
		})
	}
	if len(rows) != 15 {
		t.Fatalf("fixture has %d deliveries, want 15", len(rows))
	}
	for _, f := range []deliveries.Filter{{States: []string{"bogus"}}, {States: []string{"pending,nope"}}, {Limit: deliveries.MaxPageSize + 1}} {
		_, err := e.svc.List(e.ctx, e.tenant, f)
		wantFault(t, err, fault.InvalidRequest)
	}
	// Another tenant sees none of them.
	other := setupOtherTenant(t, e)
	if p, err := e.svc.List(e.ctx, other.tenant, deliveries.Filter{}); err != nil || len(p.Items) != 0 {
		t.Errorf("another tenant listed %d deliveries (%v)", len(p.Items), err)
	}
}

func TestListKeysetPagination(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rows, _, _, _ := listFixture(t, e)
	var all []uuid.UUID
	for _, r := range rows {
		all = append(all, r.id)
	}
	for _, limit := range []int{1, 4, 5, 14, 15, 100} {
		got, pages := listAll(t, e, deliveries.Filter{Limit: limit, WithTotal: true})
		if !slices.Equal(got, all) {
			t.Errorf("limit %d: pages are not disjoint and complete in order: got %d ids", limit, len(got))
		}
		if want := (len(all) + limit - 1) / limit; pages != want {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
		}
	}
	var typeB []uuid.UUID
	for _, r := range rows {
		if r.eventType == "b.type" {
			typeB = append(typeB, r.id)
		}
	}
	if got, _ := listAll(t, e, deliveries.Filter{Limit: 3, EventType: "b.type"}); !slices.Equal(got, typeB) {
		t.Errorf("filtered pagination: %v, want %v", got, typeB)
	}
	// A page's cursor stays valid while new deliveries arrive: they are newer, so never on later pages.
	p, err := e.svc.List(e.ctx, e.tenant, deliveries.Filter{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	e.publish("b.type", `{}`)
	rest, _ := listAll(t, e, deliveries.Filter{Limit: 5, Cursor: p.NextCursor})
	if !slices.Equal(rest, all[5:]) {
		t.Errorf("after new arrivals the cursor's next pages changed")
	}
}

func TestListRejectsBadCursor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	enc := base64.RawURLEncoding.EncodeToString
	for _, c := range []string{"garbage!", "%%%", enc([]byte("{}")), enc([]byte(`{"t":"x","i":"y"}`)), enc([]byte("not json")),
		enc([]byte(`{"t":"2026-01-01T00:00:00Z","i":"00000000-0000-0000-0000-000000000000"}`))} {
		_, err := e.svc.List(e.ctx, e.tenant, deliveries.Filter{Cursor: c})
		if fe := fault.As(err); fe == nil || fe.Code != fault.InvalidRequest {
			t.Errorf("cursor %q: %v, want INVALID_REQUEST", c, err)
		}
	}
}

// A capped count stops at the cap and says so; an uncapped one is exact.
func TestListTotalCountUpTo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	for range 5 {
		e.publish("order.created", `{}`)
	}
	for _, c := range []struct {
		upTo    int
		total   int64
		atLeast bool
	}{{0, 5, false}, {3, 3, true}, {5, 5, true}, {6, 5, false}} {
		page, err := e.svc.List(e.ctx, e.tenant, deliveries.Filter{SubscriptionID: &sub.ID, WithTotal: true, CountUpTo: c.upTo, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total == nil || page.TotalAtLeast == nil || *page.Total != c.total || *page.TotalAtLeast != c.atLeast || len(page.Items) != 2 {
			t.Errorf("CountUpTo %d: total %v at least %v items %d, want %d %v 2", c.upTo, deref(page.Total), deref(page.TotalAtLeast), len(page.Items), c.total, c.atLeast)
		}
	}
}

// claim takes up to n due deliveries in flight under a lease of a minute, with the worker's statement.
func (e *env) claim(n int) {
	e.t.Helper()
	now := e.clock.Now()
	if _, err := e.q.ClaimDeliveries(e.ctx, db.ClaimDeliveriesParams{
		Now: now, Max: int32(n), LeaseExpiresAt: now.Add(time.Minute), LeaseID: uuid.New(), Cap: 10,
	}); err != nil {
		e.t.Fatal(err)
	}
}

// setupOtherTenant returns an env sharing e's database and clock, for a second tenant.
func setupOtherTenant(t *testing.T, e *env) *env {
	o := *e
	var id string
	if err := e.pool.QueryRow(e.ctx, "INSERT INTO tenants (name) VALUES ('other') RETURNING id::text").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := o.tenant.UnmarshalText([]byte(id)); err != nil {
		t.Fatal(err)
	}
	return &o
}
