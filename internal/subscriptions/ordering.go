package subscriptions

import (
	"context"
	"fmt"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/jackc/pgx/v5"
)

// What a dead delivery of an ordered subscription does to its key.
const (
	// OnDeadSkip lets the key's next delivery go (the default).
	OnDeadSkip = "skip"
	// OnDeadBlock holds the key's later deliveries until the dead one is delivered (resent, replayed) or
	// discarded.
	OnDeadBlock = "block"
)

// orderingChanged carries out a change of ordered or on_dead, in the update's transaction (after the row
// was updated, so a publish reading the subscription from now on sees the change):
//   - no longer ordered: every parked delivery goes now, and the keys are forgotten. The keys' rows are
//     deleted first: a publish that parked a delivery under one of them meanwhile held that row, so the
//     delete waits for it and the release, a later statement, sees its delivery.
//   - on_dead from block to skip: keys held by a dead head go on.
func (s *Service) orderingChanged(ctx context.Context, tx pgx.Tx, q *db.Queries, old, row db.Subscription) error {
	now := s.now()
	released := int64(0)
	switch {
	case old.Ordered && !row.Ordered:
		if _, err := q.DeleteOrderingKeysOfSubscription(ctx, db.DeleteOrderingKeysOfSubscriptionParams{SubscriptionID: row.ID, TenantID: row.TenantID}); err != nil {
			return fmt.Errorf("forget ordering keys: %w", err)
		}
		n, err := q.ReleaseParkedOfSubscription(ctx, db.ReleaseParkedOfSubscriptionParams{SubscriptionID: row.ID, TenantID: row.TenantID, Now: now})
		if err != nil {
			return fmt.Errorf("release parked deliveries: %w", err)
		}
		released = n
	case row.Ordered && old.OnDead == OnDeadBlock && row.OnDead == OnDeadSkip:
		held, err := q.HeldOrderingKeysOfSubscription(ctx, db.HeldOrderingKeysOfSubscriptionParams{TenantID: row.TenantID, SubscriptionID: row.ID})
		if err != nil {
			return fmt.Errorf("held ordering keys: %w", err)
		}
		keys := make([]delivery.OrderingKey, len(held))
		for i, h := range held {
			keys[i] = delivery.OrderingKey{SubscriptionID: h.SubscriptionID, Key: h.OrderingKey}
		}
		n, err := delivery.AdvanceKeys(ctx, tx, now, keys)
		if err != nil {
			return err
		}
		released = int64(n)
	}
	if released > 0 {
		return q.NotifyDeliveriesReady(ctx, "")
	}
	return nil
}
