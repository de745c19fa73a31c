package retention_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/retention"
)

// historyRow is a delivery stored in the time partitions with its event (with an Idempotency-Key) and
// one attempt, all made at made.
func (e *env) historyRow(made time.Time, state string, lastAttempt time.Time) (delivery, event uuid.UUID) {
	e.t.Helper()
	event, delivery = idAt(made), idAt(made)
	e.exec(`INSERT INTO events (id, tenant_id, event_type, body, idempotency_key, created_at) VALUES ($1, $2, 'order.created', '{}', $3, $4)`,
		event, e.tenant, "key-"+event.String(), made)
	e.exec(`INSERT INTO event_idempotency (tenant_id, idempotency_key, event_id) VALUES ($1, $2, $3)`, e.tenant, "key-"+event.String(), event)
	e.exec(`INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at,
			last_attempt_at, dead_at, total_attempts, created_at, updated_at)
		VALUES ($1, $2, $3, $4, 'order.created', $5, $6, $6::timestamptz + interval '72 hours', $7,
			CASE WHEN $5 IN ('failed', 'expired') THEN $7::timestamptz END, 1, $6, $7)`,
		delivery, e.tenant, event, e.sub, state, made, lastAttempt)
	e.exec(`INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome, request_url, request_headers)
		VALUES ($1, $2, $3, 1, $4, 10, 200, 'delivered', 'http://127.0.0.1:1/', '{}')`, delivery, e.tenant, e.sub, lastAttempt)
	return delivery, event
}

// TestTimePartitionsPastRetentionGoWhole: with the clock 40 days on, a day whose deliveries were all
// delivered then is dropped whole, in all three tables; a day that still holds a dead delivery, one
// delivered again much later and one waiting again in the queue is replaced by a copy of just those, their
// attempts and events (and Idempotency-Keys), every other row of it gone, and its rows are still found by
// id; a day not yet past the retention and half an interval is left alone, even its rows past retention.
func TestTimePartitionsPastRetentionGoWhole(t *testing.T) {
	t.Parallel()
	e := setup(t)
	day := func(n float64) time.Time { return e.now.Add(time.Duration(n * float64(24*time.Hour))) }
	parts := history.New(e.pool, history.Options{Now: func() time.Time { return day(37) }})
	if _, err := parts.Make(e.ctx); err != nil {
		t.Fatal(err)
	}
	// day 0: only delivered, at once
	var gone []uuid.UUID
	for range 5 {
		d, _ := e.historyRow(day(0), "delivered", day(0))
		gone = append(gone, d)
	}
	// day 1: delivered ones, and three kept: a dead one, one delivered again on day 25, one waiting
	for range 5 {
		d, _ := e.historyRow(day(1), "delivered", day(1))
		gone = append(gone, d)
	}
	dead, deadEvent := e.historyRow(day(1), "failed", day(1))
	late, lateEvent := e.historyRow(day(1), "delivered", day(25))
	waiting, waitingEvent := e.historyRow(day(1), "delivered", day(1))
	e.exec(`UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $2 WHERE id = $1`, waiting, day(40))
	// day 5: delivered on day 5 (past a 34-day retention on day 40) but its day is too recent to go yet
	recent, _ := e.historyRow(day(5), "delivered", day(5))

	s := e.sweeper(retention.Options{Delivered: 34 * 24 * time.Hour, Now: func() time.Time { return day(40) }})
	res := e.sweep(s)
	if res.PartitionsDropped < 1 || res.PartitionsCompacted != 1 {
		t.Errorf("sweep: %+v, want day 0's partitions (and the empty days before day 5) dropped, day 1's compacted", res)
	}
	for _, id := range gone {
		if e.exists("webhook_deliveries", id) || e.count("SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1", id) != 0 {
			t.Errorf("delivery %s past retention is still there (or its attempts)", id)
		}
	}
	for _, id := range []uuid.UUID{dead, late, waiting, recent} {
		if !e.exists("webhook_deliveries", id) || e.count("SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1", id) != 1 {
			t.Errorf("kept delivery %s or its attempt is gone", id)
		}
	}
	for _, id := range []uuid.UUID{deadEvent, lateEvent, waitingEvent} {
		if !e.exists("events", id) || e.count("SELECT count(*) FROM event_idempotency WHERE event_id = $1", id) != 1 {
			t.Errorf("kept event %s or its Idempotency-Key is gone", id)
		}
	}
	if n := e.count("SELECT count(*) FROM event_idempotency"); n != 4 {
		t.Errorf("%d Idempotency-Keys left, want the four of the kept events", n)
	}
	day0 := "_p" + day(0).UTC().Format("20060102") + "_0000"
	if n := e.count("SELECT count(*) FROM pg_class WHERE relname LIKE '%' || $1", day0); n != 0 {
		t.Errorf("day 0's partitions (%s) are still there: %d", day0, n)
	}
	day1 := "webhook_deliveries_p" + day(1).UTC().Format("20060102") + "_0000"
	if n := e.count("SELECT count(*) FROM " + day1); n != 2 {
		t.Errorf("%s holds %d rows after compaction, want the dead and the late one", day1, n)
	}
	if n := e.count("SELECT count(*) FROM pg_class WHERE relname LIKE 'history\\_detached\\_%'"); n != 0 {
		t.Errorf("%d detached partitions' tables and indexes are left after the sweep", n)
	}
	if again := e.sweep(s); again.PartitionsCompacted != 0 || again.PartitionsDropped != 0 {
		t.Errorf("a second sweep: %+v, want nothing more to do", again)
	}
}
