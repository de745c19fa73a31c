package tenants

// The operator overview: every tenant with cheap, capped counts of its subscriptions, deliveries and attempts.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
)

// OverviewCountUpTo caps every overview count: past it a count says "at least", so the page stays cheap however
// many rows a tenant has.
const OverviewCountUpTo = 10000

// TenantSummary is one tenant's line of the overview. The delivery and attempt counts stop at OverviewCountUpTo.
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
var OverviewSorts = []string{"name", "pending", "retrying", "dead", "attempts"}

// Overview lists every tenant with its counts, sorted by sort (name ascending; counts largest first).
func (s *Service) Overview(ctx context.Context, sort string) ([]TenantSummary, error) {
	if sort == "" {
		sort = "name"
	}
	if !slices.Contains(OverviewSorts, sort) {
		return nil, fault.Invalid("sort must be one of %s", strings.Join(OverviewSorts, ", "))
	}
	rows, err := s.q.TenantOverview(ctx, db.TenantOverviewParams{UpTo: OverviewCountUpTo, Since: s.Now().Add(-24 * time.Hour)})
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
