package delivery

import (
	"context"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// A publish that finds its own process's worker idle claims for it: the worker's claim statement is sent
// with the publish's, in the same round trip and transaction (internal/publish, through internal/pipeline), and the
// attempts start as soon as the publish has committed. An idle server otherwise stored the event, woke
// the worker and only then claimed: a second round trip, and about a third of the time from the publish
// to the receiver.
// The claim is the worker's own (ClaimDeliveries: fair turns, the endpoint cap, the circuit, the rate
// limit), so it takes whatever is due, not only the publish's own rows. Only a publish stored alone at a
// quiet moment (no other publish waiting or being stored) does it, while the worker has nothing in flight:
// under load the worker claims for itself in large batches, and a publish batch carries no claim. (Gated
// on the worker alone, ingest to paused subscriptions, whose worker is always idle, sent a claim with
// every other statement: 8 % of the server's CPU, finding nothing.)

// PublishClaim is the slots a publish reserved on the worker and the claim it runs for them.
type PublishClaim struct {
	slots  int
	params db.ClaimDeliveriesParams
}

// Slots is how many rows the claim may take.
func (c PublishClaim) Slots() int { return c.slots }

// Params is the claim statement's arguments, sent in the publish's batch.
func (c PublishClaim) Params() db.ClaimDeliveriesParams { return c.params }

// ReserveForPublish takes the worker's free slots for a publish's claim when the worker runs, has nothing
// in flight and no other publish is claiming for it. Every reservation ends in StartClaimed.
func (w *Worker) ReserveForPublish() (PublishClaim, bool) {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	if !w.running || w.publishClaiming || len(w.slots) > 0 {
		return PublishClaim{}, false
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
		return PublishClaim{}, false
	}
	w.publishClaiming = true
	now := w.o.Now()
	return PublishClaim{slots: n, params: db.ClaimDeliveriesParams{
		Now: now, Max: int32(n), LeaseExpiresAt: now.Add(w.o.Lease), LeaseID: uuid.New(), Cap: int32(w.o.EndpointConcurrency),
	}}, true
}

// StartClaimed starts an attempt for each row a publish claimed (none when its statements failed) and
// gives back the reserved slots they do not use. A worker stopped meanwhile starts nothing: it gives the
// rows back to the queue at once (or, if that fails too, when their lease runs out).
func (w *Worker) StartClaimed(c PublishClaim, rows []db.ClaimDeliveriesRow) {
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
