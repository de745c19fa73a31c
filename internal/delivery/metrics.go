package delivery

import (
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
}

// QueueStats are the queue's gauges, read at scrape time.
type QueueStats struct {
	Pending, Dead, CircuitsOpen, Disabled int64
	// LagSeconds is how long the oldest due delivery of an active subscription has waited.
	LagSeconds float64
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
	}
	for _, o := range []Outcome{OutcomeDelivered, OutcomeRetry, OutcomeFailed} {
		m.Attempts.WithLabelValues(string(o))
	}
	m.Failed.WithLabelValues(string(Failed))
	m.Failed.WithLabelValues(string(Expired))
	if reg != nil {
		reg.MustRegister(m.Failed, m.Attempts, m.AttemptDuration)
		if stats != nil {
			gauge := func(name, help string, v func(QueueStats) float64) prometheus.Collector {
				return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
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
