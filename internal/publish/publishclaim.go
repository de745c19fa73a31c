package publish

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/pipeline"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Claimer is a local worker a quiet publish may claim for, in its own transaction (a *delivery.Worker:
// see delivery.PublishClaim). Every reservation ends in StartClaimed, with the rows the claim took (none
// when the statements failed).
type Claimer interface {
	ReserveForPublish() (delivery.PublishClaim, bool)
	StartClaimed(c delivery.PublishClaim, rows []db.ClaimDeliveriesRow)
}

// publishAndClaim stores one publish (params holds one event) and claims for the local worker in the same
// transaction, on conn; with an Idempotency-Key it keeps the answer there too (KeepPublishAnswer). It
// reports how many rows the claim took and whether that was all it had slots for (more may be due: the
// worker should be woken). When PostgreSQL refuses the pair (the claim may be what failed), the publish is
// stored alone, unless its caller has gone meanwhile (a cancel is refused too); any other failure (a lost
// connection, a timeout) is returned, since the pair may have committed.
func (p *Publisher) publishAndClaim(ctx, caller context.Context, conn *pgxpool.Conn, w Claimer, c delivery.PublishClaim, params db.PublishEventsParams) (rows []db.PublishEventsRow, claimed map[uuid.UUID]bool, full bool, err error) {
	var b pgx.Batch
	queue := db.New(pipeline.Queue{B: &b})
	if _, err := queue.PublishEvents(ctx, params); !errors.Is(err, pipeline.ErrQueued) {
		panic("publishAndClaim: PublishEvents was not queued")
	}
	if _, err := queue.ClaimDeliveries(ctx, c.Params()); !errors.Is(err, pipeline.ErrQueued) {
		panic("publishAndClaim: ClaimDeliveries was not queued")
	}
	// The answer says in_flight for what the claim took, which a later answer rebuilt from the rows could
	// not tell from what a worker claimed afterwards: with an Idempotency-Key it is kept as it is sent.
	keep := db.KeepPublishAnswerParams{ID: params.Ids[0], TenantID: params.TenantIds[0]}
	keyed := params.IdempotencyKeys[0] != ""
	if keyed {
		if err := queue.KeepPublishAnswer(ctx, keep); !errors.Is(err, pipeline.ErrQueued) {
			panic("publishAndClaim: KeepPublishAnswer was not queued")
		}
	}
	br := conn.SendBatch(ctx, &b)
	read := db.New(pipeline.Reader{BR: br})
	rows, err = read.PublishEvents(ctx, params)
	var taken []db.ClaimDeliveriesRow
	if err == nil {
		taken, err = read.ClaimDeliveries(ctx, c.Params())
	}
	if err == nil && keyed {
		err = read.KeepPublishAnswer(ctx, keep)
	}
	if cerr := br.Close(); err == nil {
		err = cerr // the commit's own failure
	}
	if err != nil {
		w.StartClaimed(c, nil)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || caller.Err() != nil {
			return nil, nil, false, err
		}
		rows, err = db.New(conn).PublishEvents(ctx, params)
		return rows, nil, false, err
	}
	w.StartClaimed(c, taken)
	claimed = make(map[uuid.UUID]bool, len(taken))
	for _, t := range taken {
		claimed[t.ID] = true
	}
	return rows, claimed, len(taken) == c.Slots(), nil
}
