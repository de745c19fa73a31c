package retention_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
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
// (one attempt each, on their own events), the rest recent delivered rows and a quarter pending ones
// to claim. A worker (RunOnce: claim a batch of 100, POST each to a local receiver, record in one statement)
// runs alone for 10 s, then alongside the sweep; the figures are the sweep's duration and rate,
// and the worker's rate during the sweep as a fraction of its rate alone. Compare only within one run.
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
	old, pending := total/2, total/4
	recent := total - old - pending
	b.StopTimer()
	for range b.N {
		e := setup(b)
		rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		e.exec("UPDATE subscriptions SET url = $1", rc.URL)
		// Without a signing secret every attempt fails, the circuit opens after the first batch and the
		// worker claims nothing more: its rate would measure nothing.
		e.exec("INSERT INTO subscription_secrets (subscription_id, secret) VALUES ($1, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')", e.sub)
		oldAt := e.now.Add(-keepDelivered - time.Hour)
		fill := time.Now()
		e.bulk(old, "delivered", oldAt, true)
		e.bulk(recent, "delivered", e.now.Add(-time.Hour), false)
		e.bulk(pending, "pending", e.now.Add(-time.Minute), false)
		e.exec("VACUUM ANALYZE webhook_deliveries, webhook_attempts, events")
		// Write the fill out now rather than during the worker's measurement (superuser only; best effort).
		_, _ = e.pool.Exec(e.ctx, "CHECKPOINT")
		b.Logf("filled %d deliveries (%d old, %d attempts) in %s", total, old, old, time.Since(fill).Round(time.Second))

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
		until := time.Now().Add(10 * time.Second)
		n0, d0 := drain(func() bool { return time.Now().After(until) })
		rate0 := float64(n0) / d0.Seconds()

		s := retention.New(e.pool, retention.Options{Delivered: keepDelivered, Dead: keepDead, Now: clock, Logger: quietLog, Rate: pace})
		var swept atomic.Bool
		done := make(chan struct{})
		var n1 int
		var d1 time.Duration
		go func() { defer close(done); n1, d1 = drain(swept.Load) }()
		b.StartTimer()
		res, err := s.Sweep(e.ctx)
		b.StopTimer()
		swept.Store(true)
		<-done
		rc.Close()
		if err != nil || res.Delivered != int64(old) {
			b.Fatalf("sweep: %+v, %v; want %d delivered deleted", res, err, old)
		}
		rate1 := float64(n1) / d1.Seconds()
		b.ReportMetric(res.Duration.Seconds(), "sweep-s")
		b.ReportMetric(float64(res.Delivered)/res.Duration.Seconds(), "deleted/s")
		b.ReportMetric(rate0, "worker-alone/s")
		b.ReportMetric(rate1, "worker-during/s")
		b.ReportMetric(rate1/rate0, "worker-ratio")
		b.Logf("sweep paced at %g deliveries/s (0: unpaced) deleted %d deliveries, %d attempts and %d events in %s (%.0f deliveries/s); worker %.0f/s alone, %.0f/s during the sweep (%.2f×)",
			pace, res.Delivered, res.Delivered, res.Events, res.Duration.Round(time.Millisecond), float64(res.Delivered)/res.Duration.Seconds(), rate0, rate1, rate1/rate0)
	}
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
