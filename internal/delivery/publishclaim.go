package delivery

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A publish that finds its own process's worker idle claims for it: the worker's claim statement is sent
// with the publish's, in the same round trip and transaction (see pipeline.go), and the attempts start as
// soon as the publish has committed. An idle server otherwise stored the event, woke the worker and only
// then claimed: a second round trip, and about a third of the time from the publish to the receiver.
// The claim is the worker's own (ClaimDeliveries: fair turns, the endpoint cap, the circuit, the rate
// limit), so it takes whatever is due, not only the publish's own rows. Only a publish stored alone at a
// quiet moment (no other publish waiting or being stored) does it, while the worker has nothing in flight:
// under load the worker claims for itself in large batches, and a publish batch carries no claim. (Gated
// on the worker alone, ingest to paused subscriptions, whose worker is always idle, sent a claim with
// every other statement: 8 % of the server's CPU, finding nothing.)

// publishClaim is the slots a publish reserved on the worker and the claim it runs for them.
type publishClaim struct {
	slots  int
	params db.ClaimDeliveriesParams
}

// reserveForPublish takes the worker's free slots for a publish's claim when the worker runs, has nothing
// in flight and no other publish is claiming for it. Every reservation ends in startClaimed.
func (w *Worker) reserveForPublish() (publishClaim, bool) {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	if !w.running || w.publishClaiming || len(w.slots) > 0 {
		return publishClaim{}, false
	}
	n := 0
reserve:
	for n < w.o.BatchSize {
		select {
		case w.slots <- struct{}{}:
			n++
		default: // the fetcher took slots meanwhile
			break reserve
		}
	}
	if n == 0 {
		return publishClaim{}, false
	}
	w.publishClaiming = true
	now := w.o.Now()
	return publishClaim{slots: n, params: db.ClaimDeliveriesParams{
		Now: now, Max: int32(n), LeaseExpiresAt: now.Add(w.o.Lease), LeaseID: uuid.New(), Cap: int32(w.o.EndpointConcurrency),
	}}, true
}

// startClaimed starts an attempt for each row a publish claimed (none when its statements failed) and
// gives back the reserved slots they do not use. A worker stopped meanwhile starts nothing: it gives the
// rows back to the queue at once (or, if that fails too, when their lease runs out).
func (w *Worker) startClaimed(c publishClaim, rows []db.ClaimDeliveriesRow) {
	w.runMu.Lock()
	running := w.running
	if running {
		w.attempts.Add(len(rows)) // before Stop, which sets running under runMu, waits for attempts
	}
	w.publishClaiming = false
	w.runMu.Unlock()
	if !running {
		w.releaseClaimed(rows, c.params.LeaseID)
		rows = nil
	}
	for range c.slots - len(rows) {
		<-w.slots
	}
	if len(rows) < c.slots {
		// The fetcher may have found every slot reserved and be waiting for one to be freed: these are.
		// (Without this, a publish that claimed nothing left an idle fetcher waiting for good.)
		select {
		case w.slotFreed <- struct{}{}:
		default:
		}
	}
	subs := w.prepare(rows)
	for i, row := range rows {
		w.goAttempt(row, c.params.LeaseID, subs[i])
	}
	// The fetcher idled with nothing in flight; now that it has, a finished attempt should end its wait.
	select {
	case w.rescheduled <- struct{}{}:
	default:
	}
}

// releaseClaimed gives rows claimed for a worker that has stopped back to the queue, due now.
func (w *Worker) releaseClaimed(rows []db.ClaimDeliveriesRow, leaseID uuid.UUID) {
	if len(rows) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTry)
	defer cancel()
	now := w.o.Now()
	results := make([]attemptResult, len(rows))
	for i, row := range rows {
		results[i] = attemptResult{row: row, leaseID: leaseID, release: true, releaseAt: now}
	}
	if err := w.Record(ctx, results); err != nil {
		w.log.Error("giving back deliveries a publish claimed for a stopped worker; their lease will run out", "err", err, "deliveries", len(rows))
	}
}

// publishAndClaim stores one publish (params holds one event) and claims for the local worker in the same
// transaction, on conn; with an Idempotency-Key it keeps the answer there too (KeepPublishAnswer). It
// reports how many rows the claim took and whether that was all it had slots for (more may be due: the
// worker should be woken). When PostgreSQL refuses the pair (the claim may be what failed), the publish is
// stored alone, unless its caller has gone meanwhile (a cancel is refused too); any other failure (a lost
// connection, a timeout) is returned, since the pair may have committed.
func (p *Publisher) publishAndClaim(ctx, caller context.Context, conn *pgxpool.Conn, w *Worker, c publishClaim, params db.PublishEventsParams) (rows []db.PublishEventsRow, claimed map[uuid.UUID]bool, full bool, err error) {
	var b pgx.Batch
	queue := db.New(queueing{&b})
	if _, err := queue.PublishEvents(ctx, params); !errors.Is(err, errQueued) {
		panic("publishAndClaim: PublishEvents was not queued")
	}
	if _, err := queue.ClaimDeliveries(ctx, c.params); !errors.Is(err, errQueued) {
		panic("publishAndClaim: ClaimDeliveries was not queued")
	}
	// The answer says in_flight for what the claim took, which a later answer rebuilt from the rows could
	// not tell from what a worker claimed afterwards: with an Idempotency-Key it is kept as it is sent.
	keep := db.KeepPublishAnswerParams{ID: params.Ids[0], TenantID: params.TenantIds[0]}
	keyed := params.IdempotencyKeys[0] != ""
	if keyed {
		if err := queue.KeepPublishAnswer(ctx, keep); !errors.Is(err, errQueued) {
			panic("publishAndClaim: KeepPublishAnswer was not queued")
		}
	}
	br := conn.SendBatch(ctx, &b)
	read := db.New(batchReader{br})
	rows, err = read.PublishEvents(ctx, params)
	var taken []db.ClaimDeliveriesRow
	if err == nil {
		taken, err = read.ClaimDeliveries(ctx, c.params)
	}
	if err == nil && keyed {
		err = read.KeepPublishAnswer(ctx, keep)
	}
	if cerr := br.Close(); err == nil {
		err = cerr // the commit's own failure
	}
	if err != nil {
		w.startClaimed(c, nil)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || caller.Err() != nil {
			return nil, nil, false, err
		}
		rows, err = db.New(conn).PublishEvents(ctx, params)
		return rows, nil, false, err
	}
	w.startClaimed(c, taken)
	claimed = make(map[uuid.UUID]bool, len(taken))
	for _, t := range taken {
		claimed[t.ID] = true
	}
	return rows, claimed, len(taken) == c.slots, nil
}
