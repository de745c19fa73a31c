package delivery_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// TestDeletedSubscriptionsWaitingDeliveriesEnd: a deleted subscription's deliveries that came back to the
// queue after the delete (an attempt in flight that failed transiently, a lease that ran out, a publish or
// resend that read the subscription before the delete committed) end as dead with reason
// subscription_deleted at the next maintenance run, instead of waiting for good as "retrying".
func TestDeletedSubscriptionsWaitingDeliveriesEnd(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(503))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{EventTypes: &[]string{"order.created"}})
	e.subscribe(rc.URL()+"/other", subscriptions.Input{EventTypes: &[]string{"order.other"}})
	failing, lost, late := e.publishOne(`{}`), e.publishOne(`{}`), e.publishOne(`{}`)
	kept := e.publish("order.other", `{}`).Deliveries[0].ID
	w := e.worker(delivery.WorkerOptions{}, nil)
	rows, lease, err := w.Claim(e.ctx, 10)
	if err != nil || len(rows) != 4 {
		t.Fatalf("claimed %d, want 4: %v", len(rows), err)
	}
	if err := e.subs.Delete(e.ctx, e.tenant, sub.ID); err != nil {
		t.Fatal(err)
	}
	// Two attempts in flight fail transiently after the delete (one of them to another subscription); the
	// worker of a third dies with its lease.
	var finished []db.ClaimDeliveriesRow
	for _, r := range rows {
		if r.ID != lost {
			finished = append(finished, r)
		}
	}
	if err := w.RecordStatus(e.ctx, finished, lease, 503); err != nil {
		t.Fatal(err)
	}
	e.wantState(failing, delivery.Pending, 1)
	// A resend or publish that read the subscription before the delete committed left one more waiting.
	e.forceRetrying(late, e.clock.Now())

	e.clock.Advance(time.Hour) // every lease has run out
	if n, err := w.RescueExpired(e.ctx); err != nil || n != 1 {
		t.Fatalf("rescued %d, want 1: %v", n, err)
	}
	n, err := w.DeadLetterDeleted(e.ctx)
	if err != nil || n != 3 {
		t.Fatalf("dead-lettered %d, want 3 (failing, lost, late): %v", n, err)
	}
	for _, id := range []uuid.UUID{failing, lost, late} {
		d := e.delivery(id)
		if d.State != string(delivery.Failed) || d.DeadReason == nil || *d.DeadReason != delivery.ReasonSubscriptionDeleted || d.DeadAt == nil {
			t.Errorf("delivery %s of the deleted subscription: %s (%v, dead at %v), want failed: subscription_deleted", id, d.State, deref(d.DeadReason), d.DeadAt)
		}
	}
	e.wantState(uuid.MustParse(kept), delivery.Pending, 1) // another subscription's retrying delivery is left alone
	if n := e.count(`SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND subscription_id = $1`, sub.ID); n != 0 {
		t.Errorf("%d deliveries of the deleted subscription still wait", n)
	}
	if n, err := w.DeadLetterDeleted(e.ctx); err != nil || n != 0 {
		t.Errorf("a second run dead-lettered %d more: %v", n, err)
	}
}

// forceRetrying puts a delivery back in the queue as retrying, due at next, the way a race with a delete
// leaves one (a resend, a replay or an attempt's outcome that committed around it).
func (e *env) forceRetrying(id uuid.UUID, next time.Time) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = 'pending', total_attempts = greatest(total_attempts, 1),
		attempt_count = greatest(attempt_count, 1), dead_reason = NULL, dead_at = NULL, next_attempt_at = $2 WHERE id = $1`, id, next); err != nil {
		e.t.Fatal(err)
	}
}
