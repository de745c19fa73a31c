package deliveries

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
)

// A page that shows several numbers about deliveries (a list's rows, its state tabs' counts, "N matching",
// a health card's and a paused note's counts) reads them through one View, so they are of one moment: read
// one by one, a delivery that moved in between was counted in one number and not in the next ("10
// matching" above 9 rows, "3 waiting" beside a Pending tab of 2).

// View reads deliveries as of one snapshot of the database.
type View struct {
	s *Service
	q *db.Queries
}

// Read runs f with a View on one REPEATABLE READ, read-only transaction: everything f reads through it
// is of the moment of its first statement.
func (s *Service) Read(ctx context.Context, f func(v *View) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error { return f(&View{s: s, q: s.q.WithTx(tx)}) })
}

// List is Service.List in the View's snapshot.
func (v *View) List(ctx context.Context, tenantID uuid.UUID, f Filter) (Page, error) {
	return v.s.list(ctx, v.q, tenantID, f)
}

// Count is Service.Count in the View's snapshot.
func (v *View) Count(ctx context.Context, tenantID uuid.UUID, f Filter, upTo int) (int64, bool, error) {
	return v.s.count(ctx, v.q, tenantID, f, upTo)
}

// StateCounts is Service.StateCounts in the View's snapshot.
func (v *View) StateCounts(ctx context.Context, tenantID uuid.UUID, subIDs []uuid.UUID, upTo int) (map[uuid.UUID]StateCounts, error) {
	return stateCounts(ctx, v.q, tenantID, subIDs, upTo)
}

// Capped is a count that stops at a cap: AtLeast says it stopped there and there may be more.
type Capped struct {
	N       int64
	AtLeast bool
}

// StateCounts are one subscription's deliveries in each state now, counted as the lists' state tabs count
// them (Count with that subscription and state): pending includes retrying (pending and tried before), in
// flight is apart, dead is failed and expired, and discarded deliveries are left out.
type StateCounts struct {
	Pending, Retrying, InFlight, Dead Capped
}

// StateCounts counts each of the subscriptions' deliveries by state now, each count stopping at upTo, in
// one statement (one snapshot): the health card's counts and a paused subscription's "N waiting".
func (s *Service) StateCounts(ctx context.Context, tenantID uuid.UUID, subIDs []uuid.UUID, upTo int) (map[uuid.UUID]StateCounts, error) {
	return stateCounts(ctx, s.q, tenantID, subIDs, upTo)
}

func stateCounts(ctx context.Context, q *db.Queries, tenantID uuid.UUID, subIDs []uuid.UUID, upTo int) (map[uuid.UUID]StateCounts, error) {
	rows, err := q.CountDeliveryStatesBySubscription(ctx, db.CountDeliveryStatesBySubscriptionParams{
		TenantID: tenantID, SubscriptionIds: subIDs, UpTo: int32(upTo),
	})
	if err != nil {
		return nil, fmt.Errorf("count delivery states: %w", err)
	}
	capped := func(n int64) Capped { return Capped{N: n, AtLeast: n >= int64(upTo)} }
	out := make(map[uuid.UUID]StateCounts, len(rows))
	for _, r := range rows {
		out[r.SubscriptionID] = StateCounts{Pending: capped(r.Pending), Retrying: capped(r.Retrying),
			InFlight: capped(r.InFlight), Dead: capped(r.Dead)}
	}
	return out, nil
}
