// Package console reads what the operator pages need beyond the domain services: a cheap per-tenant overview
// and whose a subscription is. Replays and dead letters are delivery.Replays'.
package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// CountUpTo caps every overview count: past it a count says "at least", so the page stays cheap however
// many rows a tenant has.
const CountUpTo = 10000

// Service reads the operator overview.
type Service struct {
	q   *db.Queries
	now func() time.Time
}

// New returns the console's reads over the pool.
func New(pool *pgxpool.Pool, now func() time.Time) *Service {
	return &Service{q: db.New(pool), now: now}
}

// TenantSummary is one tenant's line of the overview. The delivery and attempt counts stop at CountUpTo.
type TenantSummary struct {
	ID            uuid.UUID
	Name          string
	CreatedAt     time.Time
	Subscriptions int
	Pending       int
	Retrying      int
	Dead          int
	// Attempts counts attempts over the last 24 hours.
	Attempts int
}

// Sort orders of the overview.
var Sorts = []string{"name", "pending", "retrying", "dead", "attempts"}

// Overview lists every tenant with its counts, sorted by sort (name ascending; counts largest first).
func (s *Service) Overview(ctx context.Context, sort string) ([]TenantSummary, error) {
	if sort == "" {
		sort = "name"
	}
	if !slices.Contains(Sorts, sort) {
		return nil, fault.Invalid("sort must be one of %s", strings.Join(Sorts, ", "))
	}
	rows, err := s.q.TenantOverview(ctx, db.TenantOverviewParams{UpTo: CountUpTo, Since: s.now().Add(-24 * time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("tenant overview: %w", err)
	}
	out := make([]TenantSummary, 0, len(rows))
	for _, r := range rows {
		out = append(out, TenantSummary{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt, Subscriptions: int(r.Subscriptions),
			Pending: int(r.Pending), Retrying: int(r.Retrying), Dead: int(r.Dead), Attempts: int(r.Attempts)})
	}
	key := map[string]func(TenantSummary) int{
		"pending": func(t TenantSummary) int { return t.Pending }, "retrying": func(t TenantSummary) int { return t.Retrying },
		"dead": func(t TenantSummary) int { return t.Dead }, "attempts": func(t TenantSummary) int { return t.Attempts },
	}[sort]
	if key != nil {
		// Stable: equal counts keep the query's name order.
		slices.SortStableFunc(out, func(a, b TenantSummary) int { return cmp.Compare(key(b), key(a)) })
	}
	return out, nil
}

// SubscriptionTenant says which tenant a live subscription belongs to; an unknown or deleted one is NOT_FOUND.
func (s *Service) SubscriptionTenant(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	t, err := s.q.SubscriptionTenant(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, fault.Missing("subscription")
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("subscription tenant: %w", err)
	}
	return t, nil
}
