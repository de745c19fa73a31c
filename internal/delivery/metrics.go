package delivery

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the delivery engine's Prometheus metrics named in the contract.
type Metrics struct {
	// Failed counts deliveries that entered failed or expired.
	Failed *prometheus.CounterVec
	// Attempts counts attempts by outcome (delivered, retry, failed).
	Attempts *prometheus.CounterVec
	// AttemptDuration is the latency of attempts.
	AttemptDuration prometheus.Histogram
	// EventsPublished counts events accepted by a publish, once per event whatever its fan-out; a replayed
	// Idempotency-Key is not counted again. Its rate is the platform's ingest.
	EventsPublished prometheus.Counter
	// Finished counts deliveries that reached a final state (delivered, failed or expired), by state: the
	// denominator of the dead-letter rate, which Failed alone cannot give.
	Finished *prometheus.CounterVec
}

// QueueStats are the queue's gauges, read at scrape time.
type QueueStats struct {
	Pending, Dead, CircuitsOpen, Disabled int64
	// LagSeconds is how long the oldest due delivery of an active subscription has waited.
	LagSeconds float64
	// Unknown says the gauges could not be read (their query failed): they are reported as NaN, not as
	// values of an earlier read that would look current.
	Unknown bool
}

// NewMetrics registers the engine's metrics on reg. stats, when not nil, backs the queue gauges
// (webhook_deliveries_pending, webhook_deliveries_dead, webhook_queue_lag_seconds,
// webhook_subscriptions_circuit_open, webhook_subscriptions_disabled) and is called at scrape time.
func NewMetrics(reg prometheus.Registerer, stats func() QueueStats) *Metrics {
	m := &Metrics{
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_deliveries_failed_total",
			Help: "Deliveries that entered the dead-letter queue (failed or expired), by state.",
		}, []string{"state"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_delivery_attempts_total",
			Help: "Delivery attempts by outcome: delivered, retry or failed.",
		}, []string{"outcome"}),
		AttemptDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "webhook_delivery_attempt_duration_seconds",
			Help:    "Duration of delivery attempts, from sending the request to reading the response snippet.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30},
		}),
		EventsPublished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "webhook_events_published_total",
			Help: "Events accepted by a publish (once per event, not per delivery; idempotent replays not counted).",
		}),
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_deliveries_finished_total",
			Help: "Deliveries that reached a final state, by state: delivered, failed or expired.",
		}, []string{"state"}),
	}
	for _, o := range []Outcome{OutcomeDelivered, OutcomeRetry, OutcomeFailed} {
		m.Attempts.WithLabelValues(string(o))
	}
	m.Failed.WithLabelValues(string(Failed))
	m.Failed.WithLabelValues(string(Expired))
	// Every series exists from the start, so that rates and ratios over them are 0 rather than absent.
	for _, st := range []State{Delivered, Failed, Expired} {
		m.Finished.WithLabelValues(string(st))
	}
	if reg != nil {
		reg.MustRegister(m.Failed, m.Attempts, m.AttemptDuration, m.EventsPublished, m.Finished)
		if stats != nil {
			gauge := func(name, help string, v func(QueueStats) float64) prometheus.Collector {
				return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
					s := stats()
					if s.Unknown {
						return math.NaN()
					}
					return v(s)
				})
			}
			reg.MustRegister(
				gauge("webhook_deliveries_pending", "Deliveries waiting in the queue (state pending, paused subscriptions included).",
					func(s QueueStats) float64 { return float64(s.Pending) }),
				gauge("webhook_deliveries_dead", "Dead deliveries (failed or expired, not discarded): the dead-letter queue.",
					func(s QueueStats) float64 { return float64(s.Dead) }),
				gauge("webhook_queue_lag_seconds", "How long the oldest due delivery of an active subscription has waited.",
					func(s QueueStats) float64 { return s.LagSeconds }),
				gauge("webhook_subscriptions_circuit_open", "Subscriptions whose circuit breaker is open or half open.",
					func(s QueueStats) float64 { return float64(s.CircuitsOpen) }),
				gauge("webhook_subscriptions_disabled", "Subscriptions disabled by a 410 Gone or by only failing for too long.",
					func(s QueueStats) float64 { return float64(s.Disabled) }),
			)
		}
	}
	return m
}

// finished counts a delivery that the completer moved to state; pending (a retry) is not final.
func (m *Metrics) finished(state State) {
	if state == Delivered || state.Dead() {
		m.Finished.WithLabelValues(string(state)).Inc()
	}
}

// DeadLettered counts n deliveries dead-lettered outside the completer (their subscription was deleted):
// as dead letters and as finished, so that the dead-letter rate stays a ratio of the same deliveries.
func (m *Metrics) DeadLettered(state State, n int64) {
	m.Failed.WithLabelValues(string(state)).Add(float64(n))
	m.Finished.WithLabelValues(string(state)).Add(float64(n))
}

// QueueStatsReader reads the queue gauges at scrape time, at most once a second (one scrape reads five
// gauges), each read within 2 s; now is the clock the queue's lag is taken against. A read that fails
// leaves the gauges unknown (NaN) until one succeeds, rather than repeating the last values as if they were
// current (a queue whose lag grows while its query times out would look calm), and log says so: when the
// failures start, with the error, at most once a minute while they last, and when they end.
func QueueStatsReader(pool *pgxpool.Pool, now func() time.Time, log *slog.Logger) func() QueueStats {
	var (
		mu                   sync.Mutex
		readAt               time.Time // when the last read was tried
		value                QueueStats
		failingSince, toldAt time.Time
	)
	q := db.New(pool)
	return func() QueueStats {
		mu.Lock()
		defer mu.Unlock()
		if !readAt.IsZero() && time.Since(readAt) < time.Second {
			return value
		}
		readAt = time.Now()
		t := readAt
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		g, err := q.QueueGauges(ctx, now())
		if err != nil {
			value = QueueStats{Unknown: true}
			switch {
			case failingSince.IsZero():
				failingSince, toldAt = t, t
				log.Warn("reading the queue gauges failed: they read NaN until a read succeeds", "err", err)
			case t.Sub(toldAt) >= time.Minute:
				toldAt = t
				log.Warn("reading the queue gauges still fails: they read NaN", "err", err, "failing_for", t.Sub(failingSince).Round(time.Second))
			}
			return value
		}
		if !failingSince.IsZero() {
			log.Info("reading the queue gauges works again", "failed_for", t.Sub(failingSince).Round(time.Second))
			failingSince = time.Time{}
		}
		value = QueueStats{Pending: g.Pending, Dead: g.Dead, CircuitsOpen: g.CircuitsOpen,
			Disabled: g.Disabled, LagSeconds: g.LagSeconds}
		return value
	}
}
