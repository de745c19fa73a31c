package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// WorkerOptions tune a Worker. Zero values take the defaults noted.
type WorkerOptions struct {
	// Concurrency is how many attempts run at once (default 32). The worker never claims more rows than
	// it has free slots, so claimed rows start at once and leases are not spent waiting.
	Concurrency int
	// BatchSize caps one claim (default 100).
	BatchSize int
	// AttemptTimeout is the sender's whole-request timeout (default 15 s); it sizes leases and shutdown.
	AttemptTimeout time.Duration
	// Lease is how long a claim holds a row before the rescuer may take it back
	// (default AttemptTimeout + 15 s, which keeps rescue within the contract's 2 × timeout + 30 s).
	Lease time.Duration
	// PollInterval is the fallback wake-up when no notification comes (default 1 s, jittered).
	PollInterval time.Duration
	// ShutdownGrace is how long Stop lets running attempts finish before cutting them off and releasing
	// their rows (default AttemptTimeout).
	ShutdownGrace time.Duration
	// EndpointConcurrency is the most attempts in flight to one subscription, counted across every
	// process on the database (default 10).
	EndpointConcurrency int
	// Breaker opens a subscription's circuit; zero values take the defaults.
	Breaker Breaker
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Jitter returns numbers in [0, 1) for the backoff (default math/rand).
	Jitter  func() float64
	Logger  *slog.Logger
	Metrics *Metrics
	// Open decrypts a stored signing secret or custom header value (secretbox.Box.Open of
	// HOOKLINE_SECRET_KEY's keys; default: plaintext values pass, sealed ones are refused).
	Open func(stored string) (string, error)
}

func (o *WorkerOptions) defaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 100
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 15 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = o.AttemptTimeout + 15*time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = o.AttemptTimeout
	}
	if o.EndpointConcurrency <= 0 {
		o.EndpointConcurrency = 10
	}
	o.Breaker.defaults()
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = Jitter
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil, nil)
	}
}

// Worker delivers webhooks: a fetcher claims due rows into free slots, one goroutine per attempt sends,
// and a completer writes finished attempts in batches. A listener wakes the fetcher on new work. Rows
// whose lease ran out are returned by RescueExpired, which the maintenance leader (one process among
// all) calls every RescueInterval. Several workers, in one process or many, can share a database.
type Worker struct {
	pool   *pgxpool.Pool
	q      *db.Queries
	sender *Sender
	policy RetryPolicy
	o      WorkerOptions
	log    *slog.Logger

	slots     chan struct{} // one token per running attempt
	slotFreed chan struct{}
	wake      chan struct{}
	// rescheduled tells an idle fetcher that a sooner retry was scheduled.
	rescheduled chan struct{}
	results     chan attemptResult

	soonestMu sync.Mutex
	soonest   time.Time // earliest retry this worker scheduled, to wake for it

	stopClaiming  context.CancelFunc
	stopSending   context.CancelFunc
	sendCtx       context.Context
	loops         sync.WaitGroup // fetcher, listener
	attempts      sync.WaitGroup
	completerDone chan struct{}
	stopOnce      sync.Once
}

// NewWorker returns a Worker; Start runs it.
func NewWorker(pool *pgxpool.Pool, sender *Sender, policy RetryPolicy, o WorkerOptions) *Worker {
	o.defaults()
	return &Worker{
		pool: pool, q: db.New(pool), sender: sender, policy: policy, o: o, log: o.Logger,
		slots:       make(chan struct{}, o.Concurrency),
		slotFreed:   make(chan struct{}, 1),
		wake:        make(chan struct{}, 1),
		rescheduled: make(chan struct{}, 1),
		results:     make(chan attemptResult, o.Concurrency),
	}
}

// attemptResult is one finished (or released) attempt on its way to the completer.
type attemptResult struct {
	row      db.ClaimDeliveriesRow
	leaseID  uuid.UUID
	resp     Response
	decision Decision
	// release gives the row back without recording an attempt (shutdown, rate limit).
	release   bool
	releaseAt time.Time
}

// Start runs the worker until Stop. ctx only bounds start-up.
func (w *Worker) Start(ctx context.Context) error {
	claimCtx, stopClaiming := context.WithCancel(context.WithoutCancel(ctx))
	sendCtx, stopSending := context.WithCancel(context.WithoutCancel(ctx))
	w.stopClaiming, w.stopSending, w.sendCtx = stopClaiming, stopSending, sendCtx
	w.completerDone = make(chan struct{})
	go w.complete()
	w.loops.Add(2)
	go func() { defer w.loops.Done(); w.fetch(claimCtx) }()
	go func() { defer w.loops.Done(); w.listen(claimCtx) }()
	return nil
}

// Stop stops claiming, lets running attempts finish within the grace period, cuts off and releases the
// rest, writes every result and returns.
func (w *Worker) Stop() {
	w.stopOnce.Do(func() {
		if w.stopClaiming == nil {
			return
		}
		w.stopClaiming()
		w.loops.Wait()
		done := make(chan struct{})
		go func() { w.attempts.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(w.o.ShutdownGrace):
			w.log.Warn("shutdown grace period over: cutting off running attempts", "grace", w.o.ShutdownGrace)
			w.stopSending()
			<-done
		}
		close(w.results)
		<-w.completerDone
		w.stopSending()
		w.sender.CloseIdle()
	})
}

// Wake makes an idle worker look for due deliveries now.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// batchGather is how long the fetcher may wait for more free slots before claiming a small batch.
const batchGather = 5 * time.Millisecond

func (w *Worker) fetch(ctx context.Context) {
	waited := false
	for ctx.Err() == nil {
		free := cap(w.slots) - len(w.slots)
		if free == 0 {
			select {
			case <-w.slotFreed:
			case <-ctx.Done():
			}
			continue
		}
		// Claim in batches: while attempts are running and few slots are free, give others a moment to
		// finish rather than claiming one or two rows per statement as each attempt ends. The wait is
		// short, so slots held by slow receivers never keep the free ones idle for long.
		if free < max(cap(w.slots)/4, 1) && len(w.slots) > 0 && !waited {
			waited = true
			t := time.NewTimer(batchGather)
			select {
			case <-w.slotFreed:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		waited = false
		n := min(free, w.o.BatchSize)
		rows, leaseID, err := w.claim(ctx, n)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Error("claim deliveries", "err", err)
				w.sleep(ctx, time.Second)
			}
			continue
		}
		for _, row := range rows {
			w.slots <- struct{}{}
			w.attempts.Add(1)
			go func() {
				defer w.attempts.Done()
				w.results <- w.attempt(w.sendCtx, row, leaseID)
			}()
		}
		if len(rows) == n {
			continue // there may be more due right now
		}
		w.idle(ctx)
	}
}

// idle waits for a notification, the soonest retry this worker scheduled, or the jittered poll interval.
// A retry scheduled while it waits (by the completer) shortens the wait. While this worker's own attempts
// run, a finished one ends the wait too: a claim that came back short may have been held back by an
// endpoint's concurrency cap, and a finished attempt frees a slot under that cap.
func (w *Worker) idle(ctx context.Context) {
	pollAt := time.Now().Add(time.Duration(float64(w.o.PollInterval) * (0.8 + 0.4*rand.Float64())))
	var freed <-chan struct{}
	if len(w.slots) > 0 {
		freed = w.slotFreed
	}
	for {
		wait := time.Until(pollAt)
		w.soonestMu.Lock()
		if !w.soonest.IsZero() {
			if d := w.soonest.Sub(w.o.Now()); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		w.soonestMu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-w.wake:
			t.Stop()
			return
		case <-freed:
			t.Stop()
			return
		case <-w.rescheduled:
			t.Stop()
			continue
		case <-t.C:
			w.soonestMu.Lock()
			if !w.soonest.IsZero() && !w.soonest.After(w.o.Now()) {
				w.soonest = time.Time{}
			}
			w.soonestMu.Unlock()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

func (w *Worker) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// claim takes up to n due deliveries under one new lease.
func (w *Worker) claim(ctx context.Context, n int) ([]db.ClaimDeliveriesRow, uuid.UUID, error) {
	leaseID := uuid.New()
	now := w.o.Now()
	rows, err := w.q.ClaimDeliveries(ctx, db.ClaimDeliveriesParams{
		Now: now, Max: int32(n), LeaseExpiresAt: now.Add(w.o.Lease), LeaseID: leaseID, Cap: int32(w.o.EndpointConcurrency),
	})
	if err != nil {
		return nil, leaseID, fmt.Errorf("claim deliveries: %w", err)
	}
	return rows, leaseID, nil
}

// attempt sends one claimed delivery and decides what comes next. It does no database work.
func (w *Worker) attempt(ctx context.Context, row db.ClaimDeliveriesRow, leaseID uuid.UUID) attemptResult {
	// The outgoing rate limit was applied where the row was claimed (a token bucket on the subscription).
	res := attemptResult{row: row, leaseID: leaseID}
	var headers map[string]string
	if len(row.Headers) > 0 {
		if err := json.Unmarshal(row.Headers, &headers); err != nil {
			w.log.Error("subscription headers unreadable; sending without them", "subscription_id", row.SubscriptionID, "err", err)
		}
	}
	secrets, headers, err := openStored(w.o.Open, row.Secrets, headers)
	if err != nil {
		// A key missing from HOOKLINE_SECRET_KEY is the operator's to fix, not the receiver's failure: no
		// attempt is recorded, and the row waits a minute and comes back.
		w.log.Error("cannot decrypt the subscription's secrets; delivery postponed", "subscription_id", row.SubscriptionID, "err", err)
		res.release, res.releaseAt = true, w.o.Now().Add(time.Minute)
		return res
	}
	res.resp = w.sender.Send(ctx, Request{
		URL: row.URL, MsgID: row.EventID.String(), Body: row.Body, Secrets: secrets, CustomHeaders: headers,
	}, w.o.Now)
	if res.resp.Canceled {
		// Cut off by shutdown: not the receiver's fault, so no attempt is recorded and the row goes back.
		res.release, res.releaseAt = true, w.o.Now()
		return res
	}
	res.decision = w.policy.Decide(Result{Status: res.resp.Status, RetryAfter: res.resp.RetryAfter},
		int(row.AttemptCount)+1, row.GiveUpAt, w.o.Now(), w.o.Jitter())
	return res
}

// complete batches finished attempts: whatever has arrived is written in one statement.
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
		err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error { return write(w.q.WithTx(tx)) })
	} else {
		err = write(w.q) // one statement is atomic on its own: spare the BEGIN and COMMIT round trips
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

// listen holds a connection that LISTENs for new deliveries and wakes the fetcher on each notification.
func (w *Worker) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("listening for new deliveries failed; polling until it reconnects", "err", err)
		w.sleep(ctx, time.Second)
	}
}

func (w *Worker) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := db.New(conn).ListenForDeliveries(ctx); err != nil {
		return err
	}
	w.Wake() // anything published while we were not listening
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		w.Wake()
	}
}

// RescueInterval is how often the maintenance leader calls RescueExpired. With the default lease
// (timeout + 15 s) and leader election every 5 s, a delivery left in_flight by a dead process is back in
// the queue within about timeout + 25 s while the leader lives, and timeout + 35 s when the leader died
// too (its session is ended within 15 s, a follower takes over within 5 s and rescues at once): inside the
// contract's 2 × timeout + 30 s for any timeout of at least 5 s.
const RescueInterval = 10 * time.Second

// RescueExpired puts deliveries whose lease ran out back in the queue and says how many. Rescued rows
// are due now, so it wakes this worker and notifies every other process's worker as well.
func (w *Worker) RescueExpired(ctx context.Context) (int, error) {
	rows, err := w.q.RescueExpiredLeases(ctx, w.o.Now())
	if err != nil {
		return 0, fmt.Errorf("rescue expired leases: %w", err)
	}
	for _, r := range rows {
		w.log.Warn("delivery lease ran out; back in the queue", "delivery_id", r.ID, "subscription_id", r.SubscriptionID)
	}
	if len(rows) > 0 {
		w.Wake()
		if err := w.q.NotifyDeliveriesReady(ctx); err != nil {
			// The rows are queued either way; other workers find them at their next poll.
			w.log.Warn("notify rescued deliveries", "err", err)
		}
	}
	return len(rows), nil
}

// RunOnce claims up to BatchSize due deliveries, attempts them all concurrently and records the results,
// then returns how many it attempted. Tests and benchmarks use it to drive the engine step by step.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	rows, leaseID, err := w.claim(ctx, w.o.BatchSize)
	if err != nil {
		return 0, err
	}
	results := make([]attemptResult, len(rows))
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Go(func() { results[i] = w.attempt(ctx, row, leaseID) })
	}
	wg.Wait()
	if len(results) == 0 {
		return 0, nil
	}
	if err := w.Record(ctx, results); err != nil {
		return 0, err
	}
	return len(rows), nil
}
