package delivery_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
)

// BenchmarkReplay100k measures a bulk replay of 100,000 dead deliveries (HOOKLINE_BENCH_REPLAY_ROWS changes
// it) and what it costs the workers. It reports:
//
//   - replay_s, replay_rows/s: the replay alone, by one runner with the production pause between chunks;
//   - drain_alone/s: the worker's database ceiling (claim a batch of 100 and record a 200 for each, no HTTP)
//     with no replay running, measured before and after and averaged;
//   - drain_during/s: the same while a replay of the same size runs;
//   - drain_ratio: drain_during / drain_alone (1 means the replay costs the workers nothing);
//   - replay_slowdown: the replay's duration with the worker draining next to it over its duration alone.
//
// Run it alone: go test -run '^$' -bench Replay100k -benchtime=1x ./internal/delivery/ (about a minute).
func BenchmarkReplay100k(b *testing.B) {
	rows := 100_000
	if v, err := strconv.Atoi(os.Getenv("HOOKLINE_BENCH_REPLAY_ROWS")); err == nil && v > 0 {
		rows = v
	}
	const (
		pendingRows = 150_000 // the worker's own queue, enough to outlast a replay
		sample      = 20_000  // rows per drain-alone measurement
	)
	e := setup(b)
	rp := e.replays()
	dead, _ := e.subscribe("http://127.0.0.1:1/dead", subscriptions.Input{})
	live, _ := e.subscribe("http://127.0.0.1:1/live", subscriptions.Input{})
	event := e.publish("order.created", `{"n":1}`).ID
	now := e.clock.Now()
	from := now.Add(-24 * time.Hour)
	e.seedReplayBench(dead.ID, live.ID, event, rows, pendingRows, from)
	to := now
	filter := replays.DeadFilter{SubscriptionID: &dead.ID, CreatedFrom: &from, CreatedTo: &to}

	w := e.worker(delivery.WorkerOptions{BatchSize: 100, EndpointConcurrency: 100}, nil)
	drain := func(ctx context.Context, stopAfter int) (int, time.Duration) {
		start, handled := time.Now(), 0
		for ctx.Err() == nil && (stopAfter == 0 || handled < stopAfter) {
			n, err := w.ClaimAndRecord(e.ctx, 200)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break // the queue ran dry
			}
			handled += n
		}
		return handled, time.Since(start)
	}
	replay := func() (uuid.UUID, time.Duration) {
		r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: filter, Spread: time.Hour})
		if err != nil || r.Matched != int64(rows) {
			b.Fatalf("replay matched %d of %d: %v", r.Matched, rows, err)
		}
		start := time.Now()
		replays.NewReplayRunner(rp, quietLog).Run(e.ctx, r.ID) // production pause between chunks
		d := time.Since(start)
		if got := e.getReplay(rp, r.ID); got.State != replays.ReplayFinished || got.Scheduled != int64(rows) {
			b.Fatalf("replay: %+v", got)
		}
		return r.ID, d
	}
	b.ResetTimer()
	n0, d0 := drain(e.ctx, sample)
	_, alone := replay()
	e.redie(dead.ID)

	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	var during time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		_, during = replay()
	}()
	n1, d1 := drain(ctx, 0)
	cancel()
	wg.Wait()
	if n1 == 0 {
		b.Fatal("the worker handled nothing while the replay ran")
	}
	if d1 < during*9/10 {
		b.Logf("the worker's queue ran dry %s into a %s replay; raise pendingRows", d1, during)
	}
	n2, d2 := drain(e.ctx, sample)
	b.StopTimer()

	reportReplayBench(b, rows, alone, during, drained{n0, d0}, drained{n1, d1}, drained{n2, d2})
}

// drained is how many rows a drain handled and how long it took.
type drained struct {
	n int
	d time.Duration
}

func (x drained) rate() float64 { return float64(x.n) / x.d.Seconds() }

// reportReplayBench reports the replay's time alone and beside the worker, and the worker's rate before,
// during and after it.
func reportReplayBench(b *testing.B, rows int, alone, during time.Duration, before, while, after drained) {
	aloneRate := (before.rate() + after.rate()) / 2
	duringRate := while.rate()
	b.ReportMetric(alone.Seconds(), "replay_s")
	b.ReportMetric(float64(rows)/alone.Seconds(), "replay_rows/s")
	b.ReportMetric(aloneRate, "drain_alone/s")
	b.ReportMetric(duringRate, "drain_during/s")
	b.ReportMetric(duringRate/aloneRate, "drain_ratio")
	b.ReportMetric(during.Seconds()/alone.Seconds(), "replay_slowdown")
	b.Logf("replay of %d alone %s; with the worker draining %s. drain before %.0f/s, during %.0f/s (%d rows in %s), after %.0f/s",
		rows, alone.Round(time.Millisecond), during.Round(time.Millisecond), before.rate(), duringRate, while.n,
		while.d.Round(time.Millisecond), after.rate())
}

// seedReplayBench inserts rows expired deliveries of dead, 10 ms apart from from, and pendingRows pending
// ones of live: the worker's own queue.
func (e *env) seedReplayBench(dead, live uuid.UUID, event string, rows, pendingRows int, from time.Time) {
	b := e.t
	now := e.clock.Now()
	if _, err := e.pool.Exec(e.ctx, `
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at,
		    created_at, updated_at, attempt_count, total_attempts, last_status, last_error, dead_reason, dead_at)
		SELECT $1, $2, $3, 'order.created', 'expired', t, t + interval '72 hours', t, t, 24, 24, 503, 'unavailable',
		       'max_attempts', $6::timestamptz
		FROM generate_series(1, $4::int) g, LATERAL (SELECT $5::timestamptz + g * interval '10 milliseconds' AS t) x`,
		e.tenant, event, dead, rows, from, now.Add(-time.Hour)); err != nil {
		b.Fatal(err)
	}
	insertDeliveries(b, e, live, event, "pending", pendingRows, now)
	e.vacuum()
}

// redie has the replayed rows of dead die again, so that a second replay finds them.
func (e *env) redie(dead uuid.UUID) {
	e.clock.Advance(time.Second)
	if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = 'expired', dead_reason = 'max_attempts',
		dead_at = $2, replay_id = NULL WHERE subscription_id = $1`, dead, e.clock.Now().Add(-time.Millisecond)); err != nil {
		e.t.Fatal(err)
	}
	e.vacuum()
	e.clock.Advance(time.Second)
}

func (e *env) vacuum() {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, "VACUUM ANALYZE webhook_deliveries, webhook_attempts, subscriptions, events, replays"); err != nil {
		e.t.Fatal(err)
	}
}

// Replays run on the API/dashboard pool (plans per call), as the server wires them.
func (e *env) replays() *replays.Replays {
	e.t.Helper()
	pool, err := server.Connect(context.Background(), urlOf(e.t), 8, server.PlanPerCall)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	return replays.NewReplays(pool, e.policy, e.clock.Now)
}

func (e *env) getReplay(rp *replays.Replays, id uuid.UUID) replays.Replay {
	e.t.Helper()
	r, err := rp.Get(e.ctx, id, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}
