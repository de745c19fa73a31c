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

// NewMetrics registers the engine's metrics on reg. pending, when not nil, backs the
// webhook_deliveries_pending gauge and is called at scrape time.
func NewMetrics(reg prometheus.Registerer, pending func() float64) *Metrics {
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
		if pending != nil {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "webhook_deliveries_pending",
				Help: "Deliveries waiting in the queue (state pending, paused subscriptions included).",
			}, pending))
		}
	}
	return m
}
