package delivery_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// insertDeliveries adds n deliveries of one event to one subscription in a single INSERT … SELECT, due
// a millisecond apart up to due (the last row inserted is due first).
func insertDeliveries(t testing.TB, e *env, sub uuid.UUID, event string, state string, n int, due time.Time) {
	t.Helper()
	_, err := e.pool.Exec(e.ctx, `
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at, created_at, updated_at)
		SELECT $1, $2, $3, 'order.created', $4, $5::timestamptz - g * interval '1 millisecond', $5::timestamptz + interval '1 day', $5, $5
		FROM generate_series(1, $6::int) g`, e.tenant, event, sub, state, due, n)
	if err != nil {
		t.Fatalf("insert %d deliveries: %v", n, err)
	}
}

func TestClaimOnEmptyTable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.worker(delivery.WorkerOptions{}, nil)
	rows, _, err := w.Claim(e.ctx, 100)
	if err != nil || len(rows) != 0 {
		t.Fatalf("claim on an empty table: %d rows, %v", len(rows), err)
	}
	if n := e.runOnce(w); n != 0 {
		t.Errorf("RunOnce attempted %d", n)
	}
	if n, err := w.RescueExpired(e.ctx); n != 0 || err != nil {
		t.Errorf("RescueExpired: %d, %v", n, err)
	}
}

func TestClaimOnLargeTableUsesSubscriptionPendingIndex(t *testing.T) {
	t.Parallel()
	const pending, done = 50_000, 20_000
	e := setup(t)
	if _, err := e.pool.Exec(e.ctx, "ANALYZE webhook_deliveries, subscriptions, events"); err != nil {
		t.Fatal(err)
	}
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	paused, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	if _, err := e.subs.Pause(e.ctx, e.tenant, paused.ID); err != nil {
		t.Fatal(err)
	}
	event := e.publish("order.created", `{}`).ID
	now := e.clock.Now()
	insertDeliveries(t, e, sub.ID, event, "pending", pending, now)
	insertDeliveries(t, e, sub.ID, event, "delivered", done, now)
	insertDeliveries(t, e, paused.ID, event, "pending", 100, now.Add(-time.Hour)) // due first, but held
	// Statistics taken while the tables were empty (made at the top of the test) are the hardest case for
	// the planner; a small subscriptions table is never auto-analyzed at all. The claim must still find each
	// subscription's due rows through the per-subscription pending index, in order, and never read the
	// paused subscription's backlog.

	// The engine pool's settings, plus a tracer to capture the claim as sent.
	tr := testdb.RecordStatements("ClaimDeliveries")
	cfg := e.pool.Config()
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	var want []uuid.UUID
	r, _ := e.pool.Query(e.ctx, `SELECT d.id FROM webhook_deliveries d WHERE d.state = 'pending' AND d.subscription_id = $1
		ORDER BY d.next_attempt_at, d.id LIMIT 100`, sub.ID)
	for r.Next() {
		var id uuid.UUID
		_ = r.Scan(&id)
		want = append(want, id)
	}
	w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), e.policy,
		delivery.WorkerOptions{Now: e.clock.Now, Logger: quietLog, EndpointConcurrency: 100})
	t0 := time.Now()
	rows, lease, err := w.Claim(e.ctx, 100)
	took := time.Since(t0)
	if err != nil || len(rows) != 100 {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}
	for i, row := range rows {
		if row.SubscriptionID != sub.ID {
			t.Fatal("claimed a paused subscription's delivery")
		}
		if i < len(want) && !containsID(want, row.ID) {
			t.Fatalf("claimed %s, not among the 100 due first", row.ID)
		}
	}
	if err := w.RecordStatus(e.ctx, rows, lease, 200); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND subscription_id = $1", sub.ID); n != pending+1-100 { // +1: the published event's own delivery
		t.Errorf("%d pending after claiming and recording 100, want %d", n, pending+1-100)
	}
	t.Logf("claimed 100 of %d pending rows in %s", pending, took)

	checkClaimPlans(t, e, pool, tr)
}

// checkClaimPlans explains the claim as it was last sent on pool, planned for its arguments and as the
// generic plan the engine's pool would cache: both read the per-subscription pending index.
func checkClaimPlans(t *testing.T, e *env, pool *pgxpool.Pool, tr *testdb.Statements) {
	sql, args := tr.Last(t, "ClaimDeliveries")
	conn, err := pool.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	text := testdb.Explain(t, conn.Conn(), sql, args...)
	if !usesQueuePendingIndex(text) {
		t.Errorf("the claim does not use the per-subscription pending index:\n%s", text)
	}

	// The engine's pool caches plans (server.PlanCached), so the generic plan must be as good: the one
	// PostgreSQL would cache, made with statistics that say the table is empty.
	if _, err := conn.Exec(e.ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(e.ctx, "PREPARE hl_claim AS "+sql); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "DEALLOCATE hl_claim; RESET plan_cache_mode")
	literals := make([]string, len(args)) // EXECUTE takes values, not bind parameters
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			literals[i] = "'" + v.UTC().Format(time.RFC3339Nano) + "'"
		case uuid.UUID:
			literals[i] = "'" + v.String() + "'"
		default:
			literals[i] = fmt.Sprint(v)
		}
	}
	generic := testdb.Explain(t, conn.Conn(), "EXECUTE hl_claim("+strings.Join(literals, ", ")+")")
	if !usesQueuePendingIndex(generic) {
		t.Errorf("the claim's generic plan does not use the per-subscription pending index:\n%s", generic)
	}
}

// usesQueuePendingIndex says whether a claim's plan finds the due rows through the queue partition's
// per-subscription pending index and reads no partition of the table whole (but those PostgreSQL knows
// empty: the legacy partition of a database made after partitioning, partitions made ahead).
func usesQueuePendingIndex(plan string) bool {
	return strings.Contains(plan, "webhook_deliveries_queue_sub_pending_idx") && len(testdb.WholeScans(plan, "webhook_deliveries_")) == 0
}

func containsID(ids []uuid.UUID, id uuid.UUID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
