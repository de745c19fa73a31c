package delivery

import (
	"context"
	"runtime"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// Test hooks for the external test package (delivery_test): they reach the worker's claim and its
// batched completer without HTTP.

// Claim claims up to n due deliveries under one new lease, as the fetcher does.
func (w *Worker) Claim(ctx context.Context, n int) ([]db.ClaimDeliveriesRow, uuid.UUID, error) {
	return w.claim(ctx, n)
}

// RecordStatus records, through Record, one synthetic attempt per row that answered status, decided by
// the worker's policy as a real attempt would be.
func (w *Worker) RecordStatus(ctx context.Context, rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, status int) error {
	now := w.o.Now()
	statuses, started := make([]int, len(rows)), make([]time.Time, len(rows))
	for i := range rows {
		statuses[i], started[i] = status, now
	}
	return w.RecordStatuses(ctx, rows, leaseID, statuses, started)
}

// RecordStatuses is RecordStatus with a status and a start time of its
// own for each row, all in one batch.
func (w *Worker) RecordStatuses(ctx context.Context, rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, statuses []int, startedAt []time.Time) error {
	return w.Record(ctx, w.syntheticBatch(rows, leaseID, statuses, startedAt))
}

// WriteStatus writes one synthetic attempt per row that answered status as the completer writes a batch
// (writeResults: tries, waits, gives up), each try within try; it returns when the completer would go on.
func (w *Worker) WriteStatus(ctx context.Context, rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, status int, try time.Duration) {
	now := w.o.Now()
	statuses, started := make([]int, len(rows)), make([]time.Time, len(rows))
	for i := range rows {
		statuses[i], started[i] = status, now
	}
	w.recordTry = try
	w.writeResults(ctx, w.syntheticBatch(rows, leaseID, statuses, started))
}

func (w *Worker) syntheticBatch(rows []db.ClaimDeliveriesRow, leaseID uuid.UUID, statuses []int, startedAt []time.Time) []attemptResult {
	now := w.o.Now()
	batch := make([]attemptResult, len(rows))
	for i, row := range rows {
		resp := Response{StartedAt: startedAt[i], Duration: time.Millisecond, Status: statuses[i], Snippet: "ok",
			Headers: map[string]string{"webhook-id": row.EventID.String()}}
		batch[i] = attemptResult{row: row, leaseID: leaseID, resp: resp,
			decision: w.policy.Decide(Result{Status: statuses[i]}, int(row.AttemptCount)+1, row.GiveUpAt, now, w.o.Jitter())}
	}
	return batch
}

// ClaimAndRecord claims up to BatchSize due deliveries and records a synthetic status for each: the
// engine's database ceiling with no HTTP. It returns how many rows it handled.
func (w *Worker) ClaimAndRecord(ctx context.Context, status int) (int, error) {
	rows, leaseID, err := w.claim(ctx, w.o.BatchSize)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return len(rows), w.RecordStatus(ctx, rows, leaseID, status)
}

// BatchedPublish is what PublishTogether says of one publish.
type BatchedPublish struct {
	EventID    uuid.UUID
	Deliveries []uuid.UUID // of the subscriptions, in the answer's order
	Stored     bool        // false when its Idempotency-Key was used before (or earlier in the batch)
	Err        error
}

// PublishTogether stores the publishes as one batch, as the writers do with publishes that arrive together.
func (p *Publisher) PublishTogether(ins ...PublishInput) []BatchedPublish {
	ctxs := make([]context.Context, len(ins))
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return p.PublishTogetherFor(ctxs, ins...)
}

// PublishTogetherFor is PublishTogether with each publish's caller's context: ctxs[i] is the caller of
// ins[i], as store passes it to the batch.
func (p *Publisher) PublishTogetherFor(ctxs []context.Context, ins ...PublishInput) []BatchedPublish {
	out := make([]BatchedPublish, len(ins))
	var batch []*publishRequest
	var at []int
	for i, in := range ins {
		ev, err := p.prepare(in)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].EventID = ev.id
		batch = append(batch, &publishRequest{ctx: ctxs[i], event: ev, done: make(chan struct{}), taken: true})
		at = append(at, i)
	}
	p.writeBatch(batch, false)
	for k, r := range batch {
		o := &out[at[k]]
		o.Err, o.Stored = r.err, len(r.rows) > 0
		for _, row := range r.rows {
			if row.SubscriptionID != uuid.Nil {
				o.Deliveries = append(o.Deliveries, row.SubscriptionID)
			}
		}
	}
	return out
}

// AfterRead makes the service run f between a manual retry's read of the delivery and its statement.
func (s *Service) AfterRead(f func()) { s.afterRead = f }

// SetPaceClock runs the runner's chunk pacing on a test clock: now is read before each chunk and sleep is
// called with how long the pacer waits.
func (r *ReplayRunner) SetPaceClock(now func() time.Time, sleep func(context.Context, time.Duration)) {
	r.pace.now, r.pace.sleep = now, sleep
}

// OnNotification calls f with every notification the worker's listener gets and whether it woke the
// fetcher for it. Set before Start.
func (w *Worker) OnNotification(f func(payload string, wake bool)) { w.onNotification = f }

// ReserveForPublish takes the worker's free slots for a publish's claim, as a publish stored alone does
// when it finds the worker idle; PublishAndClaim then stores a publish with that claim.
func (w *Worker) ReserveForPublish() (any, bool) { return w.reserveForPublish() }

// PublishAndClaim stores one event of in with the claim reserved by ReserveForPublish and returns the
// ids of the deliveries the claim took.
func (p *Publisher) PublishAndClaim(ctx context.Context, w *Worker, reserved any, in PublishInput) ([]uuid.UUID, error) {
	ev, err := p.prepare(in)
	if err != nil {
		return nil, err
	}
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	_, claimed, _, err := p.publishAndClaim(ctx, ctx, conn, w, reserved.(publishClaim), publishParams([]storedEvent{ev}))
	ids := make([]uuid.UUID, 0, len(claimed))
	for id := range claimed {
		ids = append(ids, id)
	}
	return ids, err
}

// Waiting is how many publishes wait for a batch (none of their statements has started).
func (p *Publisher) Waiting() int {
	p.batchMu.Lock()
	defer p.batchMu.Unlock()
	return len(p.waiting)
}

// WakeWorkers sends the NOTIFY that wakes every process's workers, as a publish does after its commit,
// within timeout, and returns a channel that gets how it ended.
func (p *Publisher) WakeWorkers(timeout time.Duration) <-chan error {
	ended := make(chan error, 1)
	p.notifyTimeout, p.notified = timeout, func(err error) { ended <- err }
	p.wake(context.Background(), false)
	return ended
}

// FetcherWaitsForSlot reports whether a worker's fetcher is blocked in its own select (not idle's): with
// every slot taken, that is the wait for a freed one. Read from the goroutines' stacks, since nothing else
// in the worker says so.
func FetcherWaitsForSlot() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 4 || !strings.Contains(lines[0], "[select") {
			continue
		}
		// lines[1:3] are runtime.selectgo and its file; the next frame is the one that selects.
		for i := 1; i+1 < len(lines); i += 2 {
			if strings.HasPrefix(lines[i], "runtime.") {
				continue
			}
			if strings.Contains(lines[i], "delivery.(*Worker).fetch(") {
				return true
			}
			break
		}
	}
	return false
}
