package deliveries

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/jackc/pgx/v5"
)

// BlockedKey is an ordering key held by a dead delivery (on_dead = block): nothing later of the key is
// sent until the head is delivered by a resend or a replay, or discarded (the dashboard's Skip).
type BlockedKey struct {
	OrderingKey    string    `json:"ordering_key"`
	HeadDeliveryID uuid.UUID `json:"head_delivery_id"`
	DeadAt         time.Time `json:"dead_at"`
	// Waiting counts the key's deliveries behind the head.
	Waiting int64 `json:"waiting"`
	// For pages: what the head is and why it died.
	EventType  string  `json:"-"`
	State      string  `json:"-"`
	DeadReason *string `json:"-"`
	LastStatus *int    `json:"-"`
}

// BlockedKeyPage is a page of blocked keys, by key.
type BlockedKeyPage struct {
	Items      []BlockedKey `json:"items"`
	NextCursor string       `json:"next_cursor"`
}

// HeldKeyWaiting says, for a dead delivery that holds its ordering key (on_dead block), how many of the
// key's deliveries wait behind it; held is false when it holds no key.
func (s *Service) HeldKeyWaiting(ctx context.Context, tenantID uuid.UUID, d Delivery) (waiting int64, held bool, err error) {
	if d.OrderingKey == nil || !d.State.Dead() || d.Discarded {
		return 0, false, nil
	}
	waiting, err = s.q.KeyHeldByDeadHead(ctx, db.KeyHeldByDeadHeadParams{TenantID: tenantID, SubscriptionID: d.SubscriptionID,
		OrderingKey: *d.OrderingKey, HeadID: d.ID})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("key held by a dead delivery: %w", err)
	}
	return waiting, true, nil
}

// BlockedKeys lists a subscription's blocked keys after cursor (a next_cursor, "" for the first page).
// An unknown, deleted or other tenant's subscription is NOT_FOUND.
func (s *Service) BlockedKeys(ctx context.Context, tenantID, subscriptionID uuid.UUID, cursor string, limit int) (BlockedKeyPage, error) {
	// A cursor is a key this API gave: printable UTF-8 of at most 128 characters.
	after, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || (len(after) > 0 && delivery.ValidateOrderingKey(string(after)) != nil) {
		return BlockedKeyPage{}, fault.Invalid("cursor is not one this API gave")
	}
	if _, err := s.q.GetSubscription(ctx, db.GetSubscriptionParams{ID: subscriptionID, TenantID: tenantID}); errors.Is(err, pgx.ErrNoRows) {
		return BlockedKeyPage{}, fault.Missing("subscription")
	} else if err != nil {
		return BlockedKeyPage{}, fmt.Errorf("get subscription: %w", err)
	}
	rows, err := s.q.ListBlockedKeys(ctx, db.ListBlockedKeysParams{TenantID: tenantID, SubscriptionID: subscriptionID,
		AfterKey: string(after), MaxKeys: int32(limit + 1)})
	if err != nil {
		return BlockedKeyPage{}, fmt.Errorf("list blocked keys: %w", err)
	}
	page := BlockedKeyPage{Items: make([]BlockedKey, 0, len(rows))}
	for i, r := range rows {
		if i == limit {
			page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(rows[i-1].OrderingKey))
			break
		}
		k := BlockedKey{OrderingKey: r.OrderingKey, HeadDeliveryID: r.HeadID, Waiting: r.Waiting, EventType: r.EventType,
			State: r.State, DeadReason: r.DeadReason}
		if r.LastStatus != nil {
			st := int(*r.LastStatus)
			k.LastStatus = &st
		}
		if r.DeadAt != nil {
			k.DeadAt = *r.DeadAt
		}
		page.Items = append(page.Items, k)
	}
	return page, nil
}
