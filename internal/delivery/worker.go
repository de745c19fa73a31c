package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/service"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

// WorkerOptions tune a Worker. Zero values take the defaults noted.
type WorkerOptions struct {
	// Concurrency is how many attempts run at once (default 512). The worker never claims more rows than
	// it has free slots, so claimed rows start at once and leases are not spent waiting. It also bounds the
	// batches: with 32, a busy endpoint's claims and completions averaged 19 and 13 rows and the database
	// spent 2.4 times the CPU per delivery that it spends at 256 (BenchmarkDrainVsCeiling).
	Concurrency int
	// BatchSize caps one claim and one completion (default 200). Each has a fixed cost (the completion is
	// planned per call, 1.5 ms); 512 and 200 instead of 256 and 100 cut the database's CPU per delivery in
	// a one-endpoint drain by about 14 % and raised its rate by about 10 % (three alternating pairs of
	// make bench -only drain, each taken against the receiver's CPU per delivery, the same work in all).
	BatchSize int
	// AttemptTimeout is the sender's whole-request timeout (default 15 s); it sizes leases and shutdown.
	AttemptTimeout time.Duration
	// Lease is how long a claim holds a row before the rescuer may take it back
	// (default AttemptTimeout + 15 s, which keeps rescue within the contract's 2 × timeout + 30 s).
	Lease time.Duration
	// PollInterval is the fallback wake-up when no notification comes (default 1 s, jittered).
	PollInterval time.Duration
	// ClaimTimeout bounds one claim (default 10 s; a claim takes milliseconds). A primary that vanished
	// without closing its connections (a crashed machine, a partition) would otherwise hold the fetcher
	// until TCP gives up, many minutes, while a promoted standby waits; cut off, the claim's connection is
	// closed and the next claim connects to whichever host accepts writes.
	ClaimTimeout time.Duration
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
	// GenericPool, when set, runs the completions of small batches (at most genericCompletionMax results)
	// on its connections, which must plan with plan_cache_mode = force_generic_plan (see recordQueries).
	GenericPool *pgxpool.Pool
	// Tracer, when set, makes a span of every attempt in the trace stored with its delivery; nil (the
	// default) is tracing off, which the attempt path checks once and otherwise never touches.
	Tracer trace.Tracer
}

func (o *WorkerOptions) defaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = 512
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 200
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
	if o.ClaimTimeout <= 0 {
		o.ClaimTimeout = 10 * time.Second
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
	// origin names this worker in the NOTIFYs of its own process's publishes, which its listener skips
	// (see Origin).
	origin string
	// onNotification, set by tests before Start, sees each notification and whether it woke the fetcher.
	onNotification func(payload string, wake bool)

	slots     chan struct{} // one token per running attempt
	slotFreed chan struct{}
	wake      chan struct{}
	// rescheduled tells an idle fetcher to look at its wait again: a sooner retry was scheduled, or a
	// publish started attempts for it (see publishclaim.go).
	rescheduled chan struct{}
	results     chan attemptResult

	soonestMu sync.Mutex
	soonest   time.Time // earliest retry this worker scheduled, to wake for it

	stopClaiming context.CancelFunc
	stopSending  context.CancelFunc
	sendCtx      context.Context
	// recordCtx bounds the completer's writes; Stop cancels it when its deadline passes.
	recordCtx     context.Context
	stopRecording context.CancelFunc
	// recordTry bounds each try at writing a batch of results (recordTry; tests shorten it).
	recordTry     time.Duration
	loops         sync.WaitGroup // fetcher, listener
	attempts      sync.WaitGroup
	completerDone chan struct{}
	// advance carries the ordering keys whose head finished from the completer to the advancer, which
	// releases each key's next delivery (ordering.go); nil until Start.
	advance      chan []OrderingKey
	advancerDone chan struct{}
	stopOnce     sync.Once
	// runMu guards running and publishClaiming: a publish's claim for this worker starts its attempts only
	// while the worker runs, counted before Stop waits for them (see publishclaim.go).
	runMu           sync.Mutex
	running         bool
	publishClaiming bool
}

// A Worker is a background service: Start runs it, Stop ends it within a deadline.
var _ service.Service = (*Worker)(nil)

// NewWorker returns a Worker; Start runs it.
func NewWorker(pool *pgxpool.Pool, sender *Sender, policy RetryPolicy, o WorkerOptions) *Worker {
	o.defaults()
	return &Worker{
		pool: pool, q: db.New(pool), sender: sender, policy: policy, o: o, log: o.Logger, origin: uuid.NewString(),
		slots:       make(chan struct{}, o.Concurrency),
		slotFreed:   make(chan struct{}, 1),
		wake:        make(chan struct{}, 1),
		rescheduled: make(chan struct{}, 1),
		results:     make(chan attemptResult, o.Concurrency),
		recordTry:   recordTry,
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
	w.recordCtx, w.stopRecording = context.WithCancel(context.WithoutCancel(ctx))
	w.completerDone = make(chan struct{})
	w.advance, w.advancerDone = make(chan []OrderingKey, w.o.Concurrency), make(chan struct{})
	w.runMu.Lock()
	w.running = true
	w.runMu.Unlock()
	go w.advancer()
	go w.complete()
	w.loops.Add(2)
	go func() { defer w.loops.Done(); w.fetch(claimCtx) }()
	go func() { defer w.loops.Done(); w.listen(claimCtx) }()
	return nil
}

// Stop stops claiming, lets running attempts finish within the grace period (or until ctx ends, if
// sooner), cuts off and releases the rest, writes every result and returns. When ctx ends first (a
// database that stopped answering), it gives up writing and returns ctx's error: the rows it could not
// record keep their lease, and the rescuer puts them back in the queue when it runs out.
func (w *Worker) Stop(ctx context.Context) error {
	var err error
	w.stopOnce.Do(func() {
		if w.stopClaiming == nil {
			return
		}
		defer context.AfterFunc(ctx, w.stopRecording)()
		w.runMu.Lock()
		w.running = false // a publish's claim that ends from now on gives its rows back
		w.runMu.Unlock()
		w.stopClaiming() // a claim waiting on the database is cancelled with it
		w.loops.Wait()
		done := make(chan struct{})
		go func() { w.attempts.Wait(); close(done) }()
		grace := time.NewTimer(w.o.ShutdownGrace)
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.C:
			w.log.Warn("shutdown grace period over: cutting off running attempts", "grace", w.o.ShutdownGrace)
		case <-ctx.Done():
			w.log.Warn("shutdown deadline reached: cutting off running attempts")
		}
		w.stopSending()
		<-done // a cancelled attempt returns at once
		close(w.results)
		select {
		case <-w.completerDone:
			select {
			case <-w.advancerDone:
			case <-ctx.Done():
				// the keys not advanced are the maintenance leader's (StuckOrderingKeys)
				err = fmt.Errorf("worker: ordering keys not all advanced: %w", ctx.Err())
			}
		case <-ctx.Done():
			err = fmt.Errorf("worker: results not all recorded: %w", ctx.Err())
		}
		w.stopRecording()
		w.sender.CloseIdle()
	})
	return err
}

// Wake makes an idle worker look for due deliveries now.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Origin is the NOTIFY payload by which this worker's own process announces a publish it has already woken
// the worker for (publish.Publisher.Local). The listener skips such a notification: the claim it would start finds
// nothing the local wake's claim has not taken, and at idle that second claim ran beside the first's
// POST on the same cores. Every other process's worker claims on it as on any other.
func (w *Worker) Origin() string { return w.origin }

// RunOnce claims up to BatchSize due deliveries, attempts them all concurrently and records the results,
// then returns how many it attempted. Tests and benchmarks use it to drive the engine step by step.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	rows, leaseID, err := w.claim(ctx, w.o.BatchSize)
	if err != nil {
		return 0, err
	}
	results := make([]attemptResult, len(rows))
	subs := w.prepare(rows)
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Go(func() { results[i] = w.attempt(ctx, row, leaseID, subs[i]) })
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
