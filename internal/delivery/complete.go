package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
)

// complete batches finished attempts: whatever has arrived is written in one statement. (Several
// completers were tried: batches shrank, statements multiplied and CPU per delivery doubled.)
func (w *Worker) complete() {
	defer close(w.completerDone)
	for first := range w.results {
		batch := []attemptResult{first}
	drain:
		for len(batch) < w.o.BatchSize {
			select {
			case r, ok := <-w.results:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		w.writeResults(batch)
		for range batch {
			<-w.slots
		}
		select {
		case w.slotFreed <- struct{}{}:
		default:
		}
	}
}

// writeResults stores a batch, retrying while the database is away. If it never comes back, the leases
// run out and the rescuer re-queues the rows: an attempt record may be lost, a delivery never is.
func (w *Worker) writeResults(batch []attemptResult) {
	for try := 0; ; try++ {
		err := w.Record(context.Background(), batch)
		if err == nil {
			return
		}
		if try == 5 {
			w.log.Error("recording attempts failed; their rows will be rescued when the lease runs out", "err", err, "attempts", len(batch))
			return
		}
		w.log.Warn("recording attempts failed; retrying", "err", err, "try", try+1)
		time.Sleep(time.Duration(100<<try) * time.Millisecond)
	}
}

// Record writes a batch of results: releases in one statement, attempts and transitions in another, all
// in one transaction. It then counts metrics and logs dead-lettered deliveries.
func (w *Worker) Record(ctx context.Context, batch []attemptResult) error {
	now := w.o.Now()
	var rel db.ReleaseDeliveriesParams
	var done db.CompleteAttemptsParams
	byID := map[uuid.UUID]*attemptResult{}
	for i := range batch {
		r := &batch[i]
		if r.release {
			rel.DeliveryIDs = append(rel.DeliveryIDs, r.row.ID)
			rel.LeaseIDs = append(rel.LeaseIDs, r.leaseID)
			rel.NextAttemptAt = append(rel.NextAttemptAt, r.releaseAt)
			continue
		}
		byID[r.row.ID] = r
		hdr, err := json.Marshal(r.resp.Headers)
		if err != nil {
			return err
		}
		done.DeliveryIDs = append(done.DeliveryIDs, r.row.ID)
		done.LeaseIDs = append(done.LeaseIDs, r.leaseID)
		done.StartedAt = append(done.StartedAt, r.resp.StartedAt)
		done.DurationMs = append(done.DurationMs, int32(r.resp.Duration.Milliseconds()))
		done.Status = append(done.Status, int32(r.resp.Status))
		done.Snippet = append(done.Snippet, r.resp.Snippet)
		done.Error = append(done.Error, r.resp.Err)
		done.Outcome = append(done.Outcome, string(r.decision.Outcome))
		done.NewState = append(done.NewState, string(r.decision.State))
		done.NextAttemptAt = append(done.NextAttemptAt, r.decision.NextAttemptAt)
		done.DeadReason = append(done.DeadReason, r.decision.DeadReason)
		done.RequestURL = append(done.RequestURL, r.row.URL)
		done.RequestHeaders = append(done.RequestHeaders, hdr)
	}
	done.Now = now
	done.Threshold = int32(w.o.Breaker.Threshold)
	done.ProbeBaseMs = int32(w.o.Breaker.ProbeInterval.Milliseconds())
	done.ProbeMaxMs = int32(min(w.o.Breaker.ProbeMax.Milliseconds(), math.MaxInt32))
	rel.Now = now
	var written []uuid.UUID
	write := func(q *db.Queries) error {
		if len(rel.DeliveryIDs) > 0 {
			if err := q.ReleaseDeliveries(ctx, rel); err != nil {
				return fmt.Errorf("release deliveries: %w", err)
			}
		}
		if len(done.DeliveryIDs) > 0 {
			ids, err := q.CompleteAttempts(ctx, done)
			if err != nil {
				return fmt.Errorf("complete attempts: %w", err)
			}
			written = ids
		}
		return nil
	}
	var err error
	if len(rel.DeliveryIDs) > 0 && len(done.DeliveryIDs) > 0 {
		err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error { return write(withCustomPlans(tx)) })
	} else {
		err = write(withCustomPlans(w.pool)) // one statement is atomic on its own: spare the BEGIN and COMMIT round trips
	}
	if err != nil {
		return err
	}
	if len(written) < len(done.DeliveryIDs) {
		w.log.Warn("some attempts finished after their lease was lost; their outcome was not recorded",
			"lost", len(done.DeliveryIDs)-len(written))
	}
	for _, id := range written {
		r := byID[id]
		w.o.Metrics.Attempts.WithLabelValues(string(r.decision.Outcome)).Inc()
		w.o.Metrics.AttemptDuration.Observe(r.resp.Duration.Seconds())
		w.o.Metrics.finished(r.decision.State)
		switch r.decision.State {
		case Failed, Expired:
			w.o.Metrics.Failed.WithLabelValues(string(r.decision.State)).Inc()
			w.log.Warn("delivery dead-lettered", "delivery_id", id, "subscription_id", r.row.SubscriptionID,
				"tenant_id", r.row.TenantID, "state", r.decision.State, "reason", r.decision.DeadReason,
				"status", r.resp.Status, "error", r.resp.Err)
		case Pending:
			w.noteRetry(r.decision.NextAttemptAt)
		}
	}
	return nil
}

func (w *Worker) noteRetry(at time.Time) {
	w.soonestMu.Lock()
	defer w.soonestMu.Unlock()
	if w.soonest.IsZero() || at.Before(w.soonest) {
		w.soonest = at
		select {
		case w.rescheduled <- struct{}{}:
		default:
		}
	}
}
