package delivery

import (
	"context"
	"fmt"
	"time"
)

// RescueInterval is how often the maintenance leader calls RescueExpired. With the default lease
// (timeout + 15 s) and leader election every 5 s, a delivery left in_flight by a dead process is back in
// the queue within about timeout + 25 s while the leader lives, and timeout + 35 s when the leader died
// too (its session is ended within 15 s, a follower takes over within 5 s and rescues at once): inside the
// contract's 2 × timeout + 30 s for any timeout of at least 5 s.
const RescueInterval = 10 * time.Second

// RescueExpired puts deliveries whose lease ran out back in the queue and says how many. Rescued rows
// are due now, so it wakes this worker and notifies every other process's worker as well.
func (w *Worker) RescueExpired(ctx context.Context) (int, error) {
	rows, err := w.q.RescueExpiredLeases(ctx, w.o.Now())
	if err != nil {
		return 0, fmt.Errorf("rescue expired leases: %w", err)
	}
	for _, r := range rows {
		w.log.Warn("delivery lease ran out; back in the queue", "delivery_id", r.ID, "subscription_id", r.SubscriptionID)
	}
	if len(rows) > 0 {
		w.Wake()
		if err := w.q.NotifyDeliveriesReady(ctx, ""); err != nil {
			// The rows are queued either way; other workers find them at their next poll.
			w.log.Warn("notify rescued deliveries", "err", err)
		}
	}
	return len(rows), nil
}
