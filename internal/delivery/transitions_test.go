package delivery_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// TestEveryGuardedStatementFromEveryState runs each statement that moves a delivery from each of the five
// states, and checks that it moves exactly the states its guard names, and that each of those moves is one
// the state diagram (delivery.CanTransition) allows. A statement whose SQL guard drifts from the diagram
// fails here.
func TestEveryGuardedStatementFromEveryState(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sub, _ := e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	for _, st := range guardedStatements(e, sub.ID) {
		for _, from := range st.from {
			if !delivery.CanTransition(from, st.to) {
				t.Errorf("%s moves %s → %s, which the state diagram does not allow", st.name, from, st.to)
			}
		}
		for _, from := range delivery.States {
			t.Run(st.name+"/from_"+string(from), func(t *testing.T) { runFromState(t, e, st, from) })
		}
	}
}

// guardedStatement is a statement that moves a delivery, with the states its guard takes it from.
type guardedStatement struct {
	name string
	to   delivery.State
	from []delivery.State
	// run applies the statement to the one seeded delivery, whose lease id is lease.
	run func(ctx context.Context, id, lease uuid.UUID, now time.Time) error
}

// guardedStatements are every statement that moves a delivery, each applied to the one seeded delivery of
// subscription sub.
func guardedStatements(e *env, sub uuid.UUID) []guardedStatement {
	q := e.q
	complete := func(to delivery.State) func(context.Context, uuid.UUID, uuid.UUID, time.Time) error {
		return func(ctx context.Context, id, lease uuid.UUID, now time.Time) error {
			reason := ""
			if to.Dead() {
				reason = delivery.ReasonPermanentStatus
			}
			_, err := q.CompleteAttempts(ctx, db.CompleteAttemptsParams{
				DeliveryIDs: []uuid.UUID{id}, LeaseIDs: []uuid.UUID{lease}, StartedAt: []time.Time{now},
				DurationMs: []int32{1}, Status: []int32{200}, Snippet: []string{""}, Error: []string{""},
				Outcome: []string{"delivered"}, NewState: []string{string(to)}, NextAttemptAt: []time.Time{now},
				DeadReason: []string{reason}, RequestURL: []string{"http://x"}, RequestHeaders: [][]byte{[]byte("{}")}, Now: now,
			})
			return err
		}
	}
	return []guardedStatement{
		{"ClaimDeliveries", delivery.InFlight, []delivery.State{delivery.Pending}, func(ctx context.Context, _, _ uuid.UUID, now time.Time) error {
			_, err := q.ClaimDeliveries(ctx, db.ClaimDeliveriesParams{Now: now, Max: 10, Cap: 10, LeaseExpiresAt: now.Add(time.Minute), LeaseID: uuid.New()})
			return err
		}},
		{"CompleteAttempts→delivered", delivery.Delivered, []delivery.State{delivery.InFlight}, complete(delivery.Delivered)},
		{"CompleteAttempts→pending", delivery.Pending, []delivery.State{delivery.InFlight}, complete(delivery.Pending)},
		{"CompleteAttempts→failed", delivery.Failed, []delivery.State{delivery.InFlight}, complete(delivery.Failed)},
		{"CompleteAttempts→expired", delivery.Expired, []delivery.State{delivery.InFlight}, complete(delivery.Expired)},
		{"ReleaseDeliveries", delivery.Pending, []delivery.State{delivery.InFlight}, func(ctx context.Context, id, lease uuid.UUID, now time.Time) error {
			return q.ReleaseDeliveries(ctx, db.ReleaseDeliveriesParams{DeliveryIDs: []uuid.UUID{id}, LeaseIDs: []uuid.UUID{lease},
				NextAttemptAt: []time.Time{now}, Now: now})
		}},
		{"RescueExpiredLeases", delivery.Pending, []delivery.State{delivery.InFlight}, func(ctx context.Context, _, _ uuid.UUID, now time.Time) error {
			_, err := q.RescueExpiredLeases(ctx, now.Add(2*time.Hour)) // every lease has run out by then
			return err
		}},
		{"RetryDelivery", delivery.Pending, []delivery.State{delivery.Delivered, delivery.Failed, delivery.Expired}, func(ctx context.Context, id, _ uuid.UUID, now time.Time) error {
			seen := e.delivery(id) // the version the caller read
			_, err := q.RetryDelivery(ctx, db.RetryDeliveryParams{ID: id, TenantID: e.tenant, Now: now, GiveUpAt: now.Add(time.Hour), MaxManual: -1,
				SeenTotalAttempts: seen.TotalAttempts, SeenUpdatedAt: seen.UpdatedAt})
			return ignoreNoRows(err)
		}},
		{"RetryNowDelivery", delivery.Pending, []delivery.State{delivery.Pending}, func(ctx context.Context, id, _ uuid.UUID, now time.Time) error {
			seen := e.delivery(id)
			_, err := q.RetryNowDelivery(ctx, db.RetryNowDeliveryParams{ID: id, TenantID: e.tenant, Now: now, MaxManual: -1,
				SeenTotalAttempts: seen.TotalAttempts, SeenUpdatedAt: seen.UpdatedAt})
			return ignoreNoRows(err)
		}},
		{"DeadLetterQueuedOfSubscription", delivery.Failed, []delivery.State{delivery.Pending}, func(ctx context.Context, _, _ uuid.UUID, now time.Time) error {
			_, err := q.DeadLetterQueuedOfSubscription(ctx, db.DeadLetterQueuedOfSubscriptionParams{SubscriptionID: sub, TenantID: e.tenant, Now: now})
			return err
		}},
		{"DeadLetterQueuedOfDeletedSubscriptions", delivery.Failed, []delivery.State{delivery.Pending}, func(ctx context.Context, _, _ uuid.UUID, now time.Time) error {
			// It takes only a deleted subscription's rows: the subscription is deleted for the call.
			if _, err := e.pool.Exec(ctx, `UPDATE subscriptions SET deleted_at = now() WHERE id = $1`, sub); err != nil {
				return err
			}
			_, err := q.DeadLetterQueuedOfDeletedSubscriptions(ctx, db.DeadLetterQueuedOfDeletedSubscriptionsParams{Now: now, MaxRows: 10})
			if _, rerr := e.pool.Exec(ctx, `UPDATE subscriptions SET deleted_at = NULL WHERE id = $1`, sub); rerr != nil && err == nil {
				err = rerr
			}
			return err
		}},
		{"ReplayChunk", delivery.Pending, []delivery.State{delivery.Failed, delivery.Expired}, func(ctx context.Context, _, _ uuid.UUID, now time.Time) error {
			from, to := now.Add(-time.Hour), now.Add(time.Hour)
			var replayID uuid.UUID
			if err := e.pool.QueryRow(ctx, `INSERT INTO replays (actor, criteria, state) VALUES ('test', '{}', 'running') RETURNING id`).Scan(&replayID); err != nil {
				return err
			}
			_, err := q.ReplayChunk(ctx, db.ReplayChunkParams{States: []string{}, CreatedFrom: from, CreatedTo: to,
				DeadBefore: now.Add(time.Hour), Chunk: 10, Now: now, GiveUpAt: now.Add(time.Hour), ReplayID: replayID})
			return err
		}},
	}

}

// runFromState seeds the one delivery in state from, runs the statement on it and checks where it went.
func runFromState(t *testing.T, e *env, st guardedStatement, from delivery.State) {
	if _, err := e.pool.Exec(e.ctx, "TRUNCATE events, webhook_deliveries, webhook_attempts, event_idempotency"); err != nil {
		t.Fatal(err)
	}
	id := e.publishOne(`{}`)
	lease := uuid.New()
	now := e.clock.Now()
	// Force the seeded row into `from`, with the columns each state requires.
	_, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = $2,
		lease_id = CASE WHEN $2 = 'in_flight' THEN $3::uuid END,
		lease_expires_at = CASE WHEN $2 = 'in_flight' THEN $4::timestamptz END,
		dead_at = CASE WHEN $2 IN ('failed', 'expired') THEN $4::timestamptz END,
		dead_reason = CASE WHEN $2 IN ('failed', 'expired') THEN 'max_attempts' END,
		next_attempt_at = $4::timestamptz - interval '1 second'
		WHERE id = $1`, id, string(from), lease, now)
	if err != nil {
		t.Fatalf("seed %s: %v", from, err)
	}
	if st.name == "ReplayChunk" {
		// A replay takes only rows that were dead when it started: make this one old enough.
		if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET dead_at = dead_at - interval '1 minute' WHERE id = $1 AND dead_at IS NOT NULL`, id); err != nil {
			t.Fatal(err)
		}
	}
	if st.name == "RetryNowDelivery" {
		// Retry now takes a delivery that was tried before and waits for its backoff.
		if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET total_attempts = 1, attempt_count = 1,
			next_attempt_at = $2::timestamptz + interval '1 hour' WHERE id = $1`, id, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.run(e.ctx, id, lease, now.Add(time.Second)); err != nil {
		t.Fatalf("%s from %s: %v", st.name, from, err)
	}
	got := delivery.State(e.delivery(id).State)
	moved := got != from || (from == st.to && slices.Contains(st.from, from))
	want := slices.Contains(st.from, from)
	switch {
	case want && got != st.to:
		t.Errorf("%s from %s: delivery is %s, want %s", st.name, from, got, st.to)
	case !want && moved:
		t.Errorf("%s from %s: moved the delivery to %s; its guard should leave %s alone", st.name, from, got, from)
	}
	d := e.delivery(id)
	if st.name == "RetryNowDelivery" && from == delivery.Pending && d.NextAttemptAt.After(now.Add(time.Second)) {
		t.Errorf("RetryNowDelivery from pending: next attempt still at %s, want now (%s)", d.NextAttemptAt, now.Add(time.Second))
	}
	if delivery.State(d.State).Dead() != (d.DeadAt != nil) {
		t.Errorf("%s from %s: state %s with dead_at %v", st.name, from, d.State, d.DeadAt)
	}
}

func ignoreNoRows(err error) error {
	if err != nil && err.Error() == "no rows in result set" {
		return nil
	}
	return err
}
