package delivery_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestClaimAndPublishReadNoMoreAfterABacklog: a process that has just drained a backlog of 30,000
// deliveries claims and publishes reading no more of the database than it did fresh, with autovacuum off.
// The queue partition it works on holds only what waits, and the maintenance leader's queue vacuum
// (history.VacuumQueue) clears what the drained deliveries left in it. Measured in buffers read (EXPLAIN
// BUFFERS of the very statements the worker and the publisher ran), which, unlike time, the rest of a shared
// machine does not change.
func TestClaimAndPublishReadNoMoreAfterABacklog(t *testing.T) {
	e := setup(t)
	e.withoutAutovacuum()
	tr := e.recordStatements("ClaimDeliveries", "PublishEvents")
	const subs = 20
	for range subs {
		e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	}
	w := e.worker(delivery.WorkerOptions{BatchSize: 200}, nil)
	drain := func() {
		for {
			n, err := w.ClaimAndRecord(e.ctx, 200)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
	}
	e.publish("order.created", `{}`)
	drain() // the claim's statement recorded
	fresh := e.readsOfClaimAndPublish(tr)

	// The backlog: 1,500 events to every subscription, stored at once, then drained.
	e.exec(`WITH ev AS (
			INSERT INTO events (tenant_id, event_type, body) SELECT $1, 'order.created', '{}' FROM generate_series(1, 1500) RETURNING id)
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at)
		SELECT $1, ev.id, s.id, 'order.created', $2, $2::timestamptz + interval '1 day' FROM ev, subscriptions s WHERE s.tenant_id = $1`,
		e.tenant, e.clock.Now())
	drain()
	aged := e.readsOfClaimAndPublish(tr)
	// The leader looks every few seconds; the statistics it reads reach PostgreSQL's shared counters within
	// a second or so of each transaction.
	eventually(t, 30*time.Second, "the leader's queue vacuum never found the queue churned after 30,000 deliveries", func() bool {
		vacuumed, err := history.VacuumQueue(e.ctx, e.pool)
		if err != nil {
			t.Fatal(err)
		}
		return vacuumed
	})
	after := e.readsOfClaimAndPublish(tr)
	t.Logf("buffers read: fresh claim %d, publish %d; after the backlog claim %d, publish %d; after the queue's vacuum claim %d, publish %d",
		fresh[0], fresh[1], aged[0], aged[1], after[0], after[1])
	for i, what := range []string{"claim", "publish"} {
		if after[i] > fresh[i]*3/2+20 {
			t.Errorf("the %s reads %d buffers after the backlog and the queue's vacuum, %d fresh", what, after[i], fresh[i])
		}
	}
}

// readsOfClaimAndPublish publishes an event to every subscription, then measures the buffers read by the
// worker's claim of them and by a publish like the last one, each run again under EXPLAIN (ANALYZE,
// BUFFERS) in a transaction rolled back; it drains what it published.
func (e *env) readsOfClaimAndPublish(tr *testdb.Statements) [2]int {
	e.t.Helper()
	e.publish("order.created", `{}`)
	var reads [2]int
	for i, name := range []string{"ClaimDeliveries", "PublishEvents"} {
		sql, args := tr.Last(e.t, name)
		if name == "PublishEvents" {
			args = append([]any(nil), args...)
			args[0] = []uuid.UUID{uuid.Must(uuid.NewV7())} // a new event id: the recorded one is stored
		}
		tx, err := e.pool.Begin(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		reads[i] = testdb.ExplainAnalyze(e.t, tx, sql, args...).Buffers()
		if err := tx.Rollback(e.ctx); err != nil && err != pgx.ErrTxClosed {
			e.t.Fatal(err)
		}
	}
	w := e.worker(delivery.WorkerOptions{BatchSize: 200}, nil)
	if _, err := w.ClaimAndRecord(e.ctx, 200); err != nil {
		e.t.Fatal(err)
	}
	return reads
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// recordStatements puts the env's pool and publisher on a pool that records the named statements (SQL
// and arguments of each one's last run) for the test to EXPLAIN.
func (e *env) recordStatements(names ...string) *testdb.Statements {
	e.t.Helper()
	tr := testdb.RecordStatements(names...)
	cfg, err := pgxpool.ParseConfig(urlOf(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tr
	traced, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(traced.Close)
	e.pool, e.pub = traced, publish.NewPublisher(traced, e.policy, e.clock.Now)
	return tr
}
