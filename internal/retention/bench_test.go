package retention_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/retention"
)

// BenchmarkRetentionSweep measures a sweep of a large table and what it costs the workers:
//
//	go test -run XXX -bench RetentionSweep -benchtime=1x ./internal/retention/
//
// The table holds RETENTION_BENCH_ROWS deliveries (default 1,000,000): half delivered past the retention
// (one attempt each, on their own events), an eighth recently delivered, the rest pending ones to claim.
// A worker (RunOnce: claim a batch of 100, POST each to a local receiver, record in one statement) runs
// in seven phases of RETENTION_BENCH_PHASE (10 s): alone, with the sweep, alone, with the sweep, alone,
// with the sweep, alone. The figures are the sweep's rate and, for each phase with the sweep, the worker's
// rate over the mean of its rates in the alone phases on either side (their median is worker-ratio).
// The sweep is paced as HOOKLINE_RETENTION_RATE's default paces it; RETENTION_BENCH_RATE sets another pace
// (deliveries per second; 0: unpaced, the sweep before the pace existed).
func BenchmarkRetentionSweep(b *testing.B) {
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("RETENTION_BENCH_ROWS")); err == nil && v > 0 {
		total = v
	}
	defaults, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	pace := defaults.RetentionRate
	if v, err := strconv.ParseFloat(os.Getenv("RETENTION_BENCH_RATE"), 64); err == nil && v >= 0 {
		pace = v
	}
	b.StopTimer()
	for range b.N {
		e := setup(b)
		rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		e.exec("UPDATE subscriptions SET url = $1", rc.URL)
		// Without a signing secret every attempt fails, the circuit opens after the first batch and the
		// worker claims nothing more: its rate would measure nothing.
		e.exec("INSERT INTO subscription_secrets (subscription_id, secret) VALUES ($1, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')", e.sub)
		e.fillForBench(b, total)
		r := e.benchPhases(b, pace)
		rc.Close()
		r.report(b, pace)
	}
}

// fillForBench fills the table: half old delivered deliveries with their attempts, an eighth recent ones,
// and the rest pending, as the worker needs pending rows for every phase (7 of RETENTION_BENCH_PHASE).
func (e *env) fillForBench(b *testing.B, total int) {
	old, recent := total/2, total/8
	pending := total - old - recent
	oldAt := e.now.Add(-keepDelivered - time.Hour)
	fill := time.Now()
	e.bulk(old, "delivered", oldAt, true)
	e.bulk(recent, "delivered", e.now.Add(-time.Hour), false)
	e.bulk(pending, "pending", e.now.Add(-time.Minute), false)
	e.exec("VACUUM ANALYZE webhook_deliveries, webhook_attempts, events")
	// Write the fill out now rather than during the worker's measurement (superuser only; best effort).
	_, _ = e.pool.Exec(e.ctx, "CHECKPOINT")
	b.Logf("filled %d deliveries (%d old, %d attempts) in %s", total, old, old, time.Since(fill).Round(time.Second))
}

// benchRun is what the phases measured.
type benchRun struct {
	alone, during []float64
	deleted       int64
	sweepTime     time.Duration
}

// benchPhases runs the worker alone and during the sweep, alternately.
func (e *env) benchPhases(b *testing.B, pace float64) benchRun {
	clock := func() time.Time { return e.now }
	policy := delivery.RetryPolicy{Base: time.Second, MaxDelay: time.Minute, MaxAttempts: 3, Window: time.Hour}
	w := delivery.NewWorker(e.pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 5 * time.Second}),
		policy, delivery.WorkerOptions{Now: clock, Logger: quietLog, EndpointConcurrency: 100})
	// drain runs the worker until stop says so. It is never cancelled mid-batch: a batch claimed but not
	// recorded would hold its slots under the endpoint cap until its lease ran out, which on this fixed
	// clock is never, and the worker would claim nothing more.
	drain := func(stop func() bool) (int, time.Duration) {
		start, n := time.Now(), 0
		for !stop() {
			k, err := w.RunOnce(e.ctx)
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				b.Log("the worker ran out of pending deliveries: its rate covers only the time it had work")
				break
			}
			n += k
		}
		return n, time.Since(start)
	}
	// Alone and during alternate, alone first and last, so that each phase during the sweep is compared
	// with the phases on either side of it: a shared machine's load drifts over minutes, and comparing
	// one early "alone" with one later "during" measured the drift as much as the sweep. The sweep is
	// stopped (its context cancelled: the open batch rolls back) between its phases and started again.
	phase := 10 * time.Second
	if v, err := time.ParseDuration(os.Getenv("RETENTION_BENCH_PHASE")); err == nil && v > 0 {
		phase = v
	}
	const rounds = 3
	s := retention.New(e.pool, retention.Options{Delivered: keepDelivered, Dead: keepDead, Now: clock, Logger: quietLog, Rate: pace})
	var r benchRun
	for i := 0; ; i++ {
		until := time.Now().Add(phase)
		n, d := drain(func() bool { return time.Now().After(until) })
		r.alone = append(r.alone, float64(n)/d.Seconds())
		if i == rounds {
			break
		}
		ctx, cancel := context.WithCancel(e.ctx)
		type swept struct {
			res retention.Result
			err error
		}
		done := make(chan swept, 1)
		b.StartTimer()
		go func() { res, err := s.Sweep(ctx); done <- swept{res, err} }()
		until = time.Now().Add(phase)
		n, d = drain(func() bool { return time.Now().After(until) })
		cancel()
		got := <-done
		b.StopTimer()
		if got.err != nil && !errors.Is(got.err, context.Canceled) {
			b.Fatalf("sweep: %v", got.err)
		}
		r.deleted += got.res.Delivered
		r.sweepTime += got.res.Duration
		r.during = append(r.during, float64(n)/d.Seconds())
	}
	return r
}

// report reports each phase during the sweep over the mean of the alone phases before and after it.
func (r benchRun) report(b *testing.B, pace float64) {
	alone, during, deleted, sweepTime := r.alone, r.during, r.deleted, r.sweepTime
	each := make([]float64, len(during))
	for i, r := range during {
		each[i] = r / ((alone[i] + alone[i+1]) / 2)
	}
	sorted := slices.Clone(each)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	b.ReportMetric(float64(deleted)/sweepTime.Seconds(), "deleted/s")
	b.ReportMetric(mean(alone), "worker-alone/s")
	b.ReportMetric(mean(during), "worker-during/s")
	b.ReportMetric(median, "worker-ratio")
	b.Logf("sweep paced at %g deliveries/s (0: unpaced) deleted %d deliveries in %s of sweeping (%.0f/s); worker alone %.0f/s (phases %.0f), during %.0f/s (phases %.0f); each during phase over the alone phases around it: %.2f, median %.2f×",
		pace, deleted, sweepTime.Round(time.Millisecond), float64(deleted)/sweepTime.Seconds(), mean(alone), alone, mean(during), during, each, median)
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// bulk inserts n deliveries in state at time at, spread over n/100 events of their own, with one attempt
// each when attempts is set (the rows inserted with attempts are the only ones with total_attempts = 1).
func (e *env) bulk(n int, state string, at time.Time, attempts bool) {
	e.t.Helper()
	events := max(n/100, 1)
	e.exec(`
		WITH ev AS (
			INSERT INTO events (tenant_id, event_type, body, created_at)
			SELECT $1, 'order.created', '{"order":{"id":"ord_1","total":1250}}', $5 FROM generate_series(1, $6::int)
			RETURNING id
		), arr AS (SELECT array_agg(id) AS ids FROM ev)
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at,
			last_attempt_at, total_attempts, created_at, updated_at)
		SELECT $1, arr.ids[1 + g % $6::int], $2, 'order.created', $3, $5::timestamptz - g * interval '1 microsecond',
			$5::timestamptz + interval '72 hours', CASE WHEN $3 = 'delivered' THEN $5::timestamptz - g * interval '1 microsecond' END,
			$4::int, $5, $5
		FROM arr, generate_series(1, $7::int) g`, e.tenant, e.sub, state, map[bool]int{true: 1}[attempts], at, events, n)
	if attempts {
		e.exec(`INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome, request_url, request_headers)
			SELECT id, tenant_id, subscription_id, 1, last_attempt_at, 42, 200, 'delivered', 'http://127.0.0.1:1/', '{"content-type":"application/json"}'
			FROM webhook_deliveries WHERE total_attempts = 1`)
	}
}
