package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/bounded"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
)

// RescueInterval is how often the maintenance leader calls RescueExpired. With the default lease
// (timeout + 15 s) and leader election every 5 s, a delivery left in_flight by a dead process is back in
// the queue within about timeout + 25 s while the leader lives, and timeout + 35 s when the leader died
// too (its session is ended within 15 s, a follower takes over within 5 s and rescues at once): inside the
// contract's 2 × timeout + 30 s for any timeout of at least 5 s.
const RescueInterval = 10 * time.Second

// RescueExpired puts deliveries whose lease ran out back in the queue and says how many. Rescued rows
// are due now, so it wakes this worker and notifies every other process's worker as well.
// Its statements, as every background statement, run through bounded.Do: a deadline per try, 3 counted
// tries.
// Its statements, as every background statement, run through bounded.Do: a deadline per try, 3 counted
// tries.
func (w *Worker) RescueExpired(ctx context.Context) (int, error) {
	var rows []db.RescueExpiredLeasesRow
	err := bounded.Do(ctx, bounded.Policy{}, func(ctx context.Context) (err error) {
		rows, err = w.q.RescueExpiredLeases(ctx, w.o.Now())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rescue expired leases: %w", err)
	}
	for _, r := range rows {
		w.log.Warn("delivery lease ran out; back in the queue", "delivery_id", r.ID, "subscription_id", r.SubscriptionID)
	}
	if len(rows) > 0 {
		w.Wake()
		if err := bounded.Do(ctx, bounded.Policy{}, func(ctx context.Context) error {
			return w.q.NotifyDeliveriesReady(ctx, "")
		}); err != nil {
			// The rows are queued either way; other workers find them at their next poll.
			w.log.Warn("notify rescued deliveries", "err", err)
		}
	}
	return len(rows), nil
}

// deletedSweepBatch is how many waiting deliveries of deleted subscriptions one statement ends.
const deletedSweepBatch = 1000

// DeadLetterDeleted ends the waiting deliveries of deleted subscriptions that the delete itself did not
// see: queued meanwhile by a publish, a resend or a replay that read the subscription before the delete
// committed, or back in the queue from an attempt that was in flight (a transient failure, a lease that ran
// out). No worker claims a deleted subscription's deliveries, so they would otherwise wait for good,
// counted as pending and retrying. They are dead-lettered as the delete's own are (failed, reason
// subscription_deleted). The maintenance leader runs it with RescueExpired, after it, so that a rescued
// delivery of a deleted subscription ends in the same run. It returns how many it ended.
func (w *Worker) DeadLetterDeleted(ctx context.Context) (int, error) {
	total := 0
	for {
		var rows []db.DeadLetterQueuedOfDeletedSubscriptionsRow
		err := bounded.Do(ctx, bounded.Policy{}, func(ctx context.Context) (err error) {
			rows, err = w.q.DeadLetterQueuedOfDeletedSubscriptions(ctx, db.DeadLetterQueuedOfDeletedSubscriptionsParams{
				Now: w.o.Now(), MaxRows: deletedSweepBatch,
			})
			return err
		})
		if err != nil {
			return total, fmt.Errorf("dead-letter deliveries of deleted subscriptions: %w", err)
		}
		total += len(rows)
		if len(rows) > 0 {
			w.o.Metrics.DeadLettered(Failed, int64(len(rows)))
			w.log.Warn("waiting deliveries of deleted subscriptions dead-lettered", "deliveries", len(rows),
				"reason", ReasonSubscriptionDeleted)
		}
		if len(rows) < deletedSweepBatch || ctx.Err() != nil {
			return total, nil
		}
	}
}

// DeadLetterQueued dead-letters a deleted subscription's queued deliveries (reason subscription_deleted), in
// the caller's transaction, and says how many. In-flight ones finish their attempt; its outcome decides.
func DeadLetterQueued(ctx context.Context, tx pgx.Tx, tenantID, subscriptionID uuid.UUID, now time.Time) (int64, error) {
	n, err := db.New(tx).DeadLetterQueuedOfSubscription(ctx, db.DeadLetterQueuedOfSubscriptionParams{
		SubscriptionID: subscriptionID, TenantID: tenantID, Now: now,
	})
	if err != nil {
		return 0, fmt.Errorf("dead-letter queued deliveries: %w", err)
	}
	return n, nil
}
