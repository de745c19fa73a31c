package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/bounded"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/jackc/pgx/v5/pgxpool"
)

// complete batches finished attempts: whatever has arrived is written in one statement. (Several
// completers were tried: batches shrank, statements multiplied and CPU per delivery doubled.)
func (w *Worker) complete() {
	defer close(w.completerDone)
	defer close(w.advance) // the completer is the advancer's only sender
	// One batch buffer for the completer's life: growing a fresh one by appending was a tenth of the
	// bytes the worker allocated in a drain.
	batch := make([]attemptResult, 0, w.o.BatchSize)
	for first := range w.results {
		batch = append(batch[:0], first)
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
		w.writeResults(w.recordCtx, batch)
		for range batch {
			<-w.slots
		}
		clear(batch) // let the written rows' bodies go while waiting for the next
		select {
		case w.slotFreed <- struct{}{}:
		default:
		}
	}
}

// recordTry bounds one try at writing a batch: a database that stopped answering, or a statement that
// waits on a lock or runs a bad plan, fails the try instead of holding the completer (and every slot of
// the batch) for good.
const recordTry = 5 * time.Second

// recordTries is how many tries writeResults makes at a batch whose statement fails with the database
// there (an error of the statement, or a try that ran out of time while the database answers) before it
// gives the batch up, as River's completer does (3 tries). Three tries of recordTry end well within a
// lease (AttemptTimeout + 15 s by default).
const recordTries = 3

// writeResults stores a batch, each try within w.recordTry, until ctx ends (shutdown's deadline).
//
// While the database is away (down, restarting, failing over to a standby, or silent: pgfail.Away) it
// keeps trying, however long that takes: the results are good, nothing can be claimed meanwhile anyway, and
// the writes are guarded by the rows' lease ids, so one that lands late, even after the lease ran out,
// records exactly the rows the rescuer has not taken back. Giving up after a few seconds, as it once did,
// had every delivery in flight at a failover sent a second time once its lease ran out. A try that fails
// with the database there is counted, a slow one too (a lock wait, a bad plan: a try that ran out of time
// while the database answers a ping), and after recordTries the batch is given up and logged: its rows
// stay in flight under their lease and the rescuer puts them back in the queue when it runs out, so an
// attempt's record may be lost (the delivery is sent again), a delivery never is.
func (w *Worker) writeResults(ctx context.Context, batch []attemptResult) {
	tries := 1
	err := bounded.Do(ctx, bounded.Policy{
		PerTry: w.recordTry,
		Tries:  recordTries,
		Away: func(ctx context.Context, err error) bool {
			return pgfail.Away(ctx, w.recordPool(len(batch)), err)
		},
		OnRetry: func(try int, err error, away bool) {
			tries = try + 2
			if try < 5 || try%20 == 0 { // a long outage is logged every twentieth try, not every one
				w.log.Warn("recording attempts failed; retrying", "err", err, "try", try+1, "database_unavailable", away,
					"timed_out", pgfail.TimedOut(err))
			}
		},
	}, func(ctx context.Context) error { return w.Record(ctx, batch) })
	switch {
	case err == nil:
		if tries > 1 {
			w.log.Info("recorded attempts after retrying", "attempts", len(batch), "tries", tries)
		}
	case ctx.Err() != nil:
		w.log.Error("shutdown deadline reached while recording attempts; their rows will be rescued when the lease runs out", "err", err, "attempts", len(batch))
	default:
		w.log.Error("recording attempts failed; giving the batch up: its rows stay in flight and will be rescued when the lease runs out",
			"err", err, "attempts", len(batch), "tries", tries, "timed_out", pgfail.TimedOut(err))
	}
}

// Record writes a batch of results: releases in one statement, attempts and transitions in another. Each
// statement is atomic and guarded by the rows' leases, so a retry after a failure between them redoes only
// what is missing. They are not one transaction: both lock subscription_finished rows in id order, and a
// transaction holding the releases' rows while the completion locked lower ids deadlocked with another
// completer. It then counts metrics and logs dead-lettered deliveries.
func (w *Worker) Record(ctx context.Context, batch []attemptResult) error {
	rel, done, byID, err := w.recordParams(batch)
	if err != nil {
		return err
	}
	var written []uuid.UUID
	q := w.recordQueries(len(batch))
	if len(rel.DeliveryIDs) > 0 {
		if err := q.ReleaseDeliveries(ctx, rel); err != nil {
			return fmt.Errorf("release deliveries: %w", err)
		}
	}
	if len(done.DeliveryIDs) > 0 {
		if written, err = q.CompleteAttempts(ctx, done); err != nil {
			return fmt.Errorf("complete attempts: %w", err)
		}
	}
	// The keys whose head finished with this batch go on, in a transaction of their own after the
	// completion (see advancer). Every finished ordered delivery of the batch is named, recorded by this
	// try or an earlier one: advancing a key whose head still holds it changes nothing.
	if keys := finishedKeys(done.DeliveryIDs, byID); len(keys) > 0 {
		if w.advance != nil {
			w.advance <- keys
		} else if _, err := AdvanceKeysOnce(ctx, w.pool, done.Now, keys); err != nil {
			return err // a worker not started (tests recording by hand): at once, in the caller's turn
		}
	}
	if len(written) < len(done.DeliveryIDs) {
		w.log.Warn("some attempts finished after their lease was lost; their outcome was not recorded",
			"lost", len(done.DeliveryIDs)-len(written))
	}
	for _, id := range written {
		w.recorded(id, byID[id])
	}
	return nil
}

// recordParams turns a batch into the releases' and the completions' arrays, and indexes the attempts
// by delivery id.
func (w *Worker) recordParams(batch []attemptResult) (db.ReleaseDeliveriesParams, db.CompleteAttemptsParams, map[uuid.UUID]*attemptResult, error) {
	now := w.o.Now()
	var rel db.ReleaseDeliveriesParams
	n := len(batch) // sized once: releases are rare, and growing thirteen arrays by appending was not free
	done := db.CompleteAttemptsParams{
		DeliveryIDs: make([]uuid.UUID, 0, n), LeaseIDs: make([]uuid.UUID, 0, n), StartedAt: make([]time.Time, 0, n),
		DurationMs: make([]int32, 0, n), Status: make([]int32, 0, n), Snippet: make([]string, 0, n),
		Error: make([]string, 0, n), Outcome: make([]string, 0, n), NewState: make([]string, 0, n),
		NextAttemptAt: make([]time.Time, 0, n), DeadReason: make([]string, 0, n), RequestURL: make([]string, 0, n),
		RequestHeaders: make([][]byte, 0, n),
	}
	byID := make(map[uuid.UUID]*attemptResult, n)
	for i := range batch {
		r := &batch[i]
		if r.release {
			rel.DeliveryIDs = append(rel.DeliveryIDs, r.row.ID)
			rel.LeaseIDs = append(rel.LeaseIDs, r.leaseID)
			rel.NextAttemptAt = append(rel.NextAttemptAt, r.releaseAt)
			continue
		}
		byID[r.row.ID] = r
		hdr, err := headersJSON(r.resp.Headers)
		if err != nil {
			return rel, done, nil, err
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
	return rel, done, byID, nil
}

// recorded counts a written attempt in the metrics, logs a dead-lettered delivery and notes a retry.
func (w *Worker) recorded(id uuid.UUID, r *attemptResult) {
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

// genericCompletionMax is the largest batch whose completion runs on its generic plan (GenericPool).
const genericCompletionMax = 64

// recordQueries is where a batch of n results is written. A large batch is planned with its arrays' real
// length (customPlans: a generic plan guesses ten elements, and in a drain it once picked a nested loop
// that grew with the square of the batch). A small one, the usual batch at a moderate rate, runs its
// cached generic plan: planning the completion costs about 1.5 ms, which at 8 to 50 rows was 40 to 50 %
// of the whole write (BenchmarkRecordSmallBatch: 20 rows 3.3–3.5 ms planned, 1.7–1.9 ms generic; at 100
// and 200 rows the two were level).
func (w *Worker) recordQueries(n int) *db.Queries {
	if p := w.recordPool(n); p != w.pool {
		return db.New(p)
	}
	return withCustomPlans(w.pool)
}

// recordPool is the pool a batch of n results is written on (see recordQueries).
func (w *Worker) recordPool(n int) *pgxpool.Pool {
	if w.o.GenericPool != nil && n <= genericCompletionMax {
		return w.o.GenericPool
	}
	return w.pool
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

// headersJSON is json.Marshal of the request headers an attempt sent, byte for byte, without its
// reflection, sorting and allocations in the usual case: a few lowercase names and values of printable
// ASCII (an id, a timestamp, signatures, our content type and user agent). Anything else, and a nil map,
// goes through json.Marshal.
func headersJSON(h map[string]string) ([]byte, error) {
	if h == nil {
		return json.Marshal(h)
	}
	var keysBuf [8]string
	keys := keysBuf[:0]
	size := 2
	for k, v := range h {
		if !plainJSON(k) || !plainJSON(v) {
			return json.Marshal(h)
		}
		keys = append(keys, k)
		size += len(k) + len(v) + 6
	}
	slices.Sort(keys) // json.Marshal sorts map keys too
	buf := make([]byte, 0, size)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, k...)
		buf = append(buf, `":"`...)
		buf = append(buf, h[k]...)
		buf = append(buf, '"')
	}
	return append(buf, '}'), nil
}

// plainJSON reports whether json.Marshal writes s as it is between quotes: printable ASCII other than the
// quote, the backslash and the characters it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
