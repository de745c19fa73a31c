package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/jackc/pgx/v5"
)

// Event is a published event as the dashboard shows it: what its deliveries carry.
type Event struct {
	ID        uuid.UUID       `json:"id"`
	EventType string          `json:"event_type"`
	Body      json.RawMessage `json:"body"`
	CreatedAt time.Time       `json:"created_at"`
}

// Event returns one of the tenant's events: NOT_FOUND for another tenant's or an unknown id.
func (s *Service) Event(ctx context.Context, tenantID, id uuid.UUID) (Event, error) {
	r, err := s.q.GetEvent(ctx, db.GetEventParams{ID: id, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Event{}, fault.Missing("event")
	}
	if err != nil {
		return Event{}, fmt.Errorf("get event: %w", err)
	}
	return Event{ID: r.ID, EventType: r.EventType, Body: json.RawMessage(r.Body), CreatedAt: r.CreatedAt}, nil
}

// EventTenant says which tenant an event belongs to, for operators who find any event by its id.
func (s *Service) EventTenant(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	t, err := s.q.EventTenant(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, fault.Missing("event")
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("event tenant: %w", err)
	}
	return t, nil
}

// Count counts the deliveries f selects (its page fields are ignored), stopping at upTo when it is
// positive: atLeast then says there may be more. A capped count reads at most upTo index entries.
func (s *Service) Count(ctx context.Context, tenantID uuid.UUID, f Filter, upTo int) (n int64, atLeast bool, err error) {
	return s.count(ctx, s.q, tenantID, f, upTo)
}

// count is Count on q: the pool, or a View's transaction.
func (s *Service) count(ctx context.Context, q *db.Queries, tenantID uuid.UUID, f Filter, upTo int) (n int64, atLeast bool, err error) {
	states, retrying, err := ParseStates(joinStates(f.States))
	if err != nil {
		return 0, false, err
	}
	if states == nil {
		states = []string{}
	}
	statusMin, statusMax, err := ParseStatus(f.Status)
	if err != nil {
		return 0, false, err
	}
	limit := int32(math.MaxInt32)
	if upTo > 0 && upTo < math.MaxInt32 {
		limit = int32(upTo)
	}
	n, err = q.CountDeliveries(ctx, db.CountDeliveriesParams{
		TenantID: tenantID, SubscriptionID: f.SubscriptionID, States: states, Retrying: retrying, EventID: f.EventID,
		EventType: optional(f.EventType), EventTypePrefix: optional(f.EventTypePrefix), StatusMin: statusMin, StatusMax: statusMax,
		Since: f.Since, Until: f.Until, UpTo: limit,
	})
	if err != nil {
		return 0, false, fmt.Errorf("count deliveries: %w", err)
	}
	return n, upTo > 0 && n >= int64(limit), nil
}

// EventTypes are the event types among the newest upTo deliveries of the tenant, or of one subscription
// when subID is set, sorted: the choices of the dashboard's event-type filter.
func (s *Service) EventTypes(ctx context.Context, tenantID uuid.UUID, subID *uuid.UUID, upTo int) ([]string, error) {
	types, err := s.q.RecentEventTypes(ctx, db.RecentEventTypesParams{TenantID: tenantID, SubscriptionID: subID, UpTo: int32(upTo)})
	if err != nil {
		return nil, fmt.Errorf("recent event types: %w", err)
	}
	return types, nil
}

// ParseStatus reads a last-status filter: empty (any), an exact code from 100 to 599 ("404"), or a class
// ("2xx" to "5xx", any case): the range of codes it matches, nil for any. Anything else is INVALID_REQUEST.
func ParseStatus(s string) (lo, hi *int32, err error) {
	if s == "" {
		return nil, nil, nil
	}
	bad := fault.Invalid("status %q is not an HTTP status (such as 404) or a class (such as 4xx or 5xx)", s)
	if len(s) != 3 {
		return nil, nil, bad
	}
	if rest := strings.ToLower(s[1:]); rest == "xx" {
		if s[0] < '1' || s[0] > '5' {
			return nil, nil, bad
		}
		l, h := int32(s[0]-'0')*100, int32(s[0]-'0')*100+99
		return &l, &h, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 {
		return nil, nil, bad
	}
	c := int32(n)
	return &c, &c, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
