package delivery_test

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The operator's ingest and dead-letter-rate counters, driven by real publishes and real attempts: events
// are counted once each (not per delivery, not again on an idempotent replay), and every delivery that
// reaches delivered, failed or expired is counted once under that state, in step with the dead-letter
// counter, so that dead / finished is a true ratio.
func TestPublishedAndFinishedCounters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setPolicy(delivery.RetryPolicy{Base: 10 * time.Second, MaxDelay: time.Hour, MaxAttempts: 2, Window: 24 * time.Hour})
	reg := prometheus.NewRegistry()
	m := delivery.NewMetrics(reg, nil)
	e.pub.Metrics = m

	// Every series is there before anything happened, so that rate() and ratios start at 0, not absent.
	if n, err := testutil.GatherAndCount(reg, "webhook_events_published_total", "webhook_deliveries_finished_total"); err != nil || n != 4 {
		t.Fatalf("series before any event: %d, %v; want 1 + 3", n, err)
	}

	ok := newReceiver(t, nil)                               // 204: delivered
	gone := newReceiver(t, statuses(http.StatusBadRequest)) // permanent: failed at once
	down := newReceiver(t, statuses(http.StatusServiceUnavailable))
	for _, rc := range []*receiver{ok, gone, down} {
		e.subscribe(rc.URL(), subscriptions.Input{})
	}

	keyed := publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(`{"n":1}`), IdempotencyKey: "k-1"}
	first, err := e.pub.Publish(e.ctx, keyed)
	if err != nil || len(first.Deliveries) != 3 {
		t.Fatalf("publish: %v, %d deliveries", err, len(first.Deliveries))
	}
	again, err := e.pub.Publish(e.ctx, keyed)
	if err != nil || again.ID != first.ID {
		t.Fatalf("idempotent replay: %v, id %s want %s", err, again.ID, first.ID)
	}
	if _, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(`[1]`)}); err == nil {
		t.Fatal("a refused publish was accepted")
	}
	e.publish("order.paid", `{"n":2}`)
	if got := testutil.ToFloat64(m.EventsPublished); got != 2 {
		t.Fatalf("webhook_events_published_total = %v, want 2 (two events of three deliveries each, one replay, one refusal)", got)
	}

	finished := func(state delivery.State) float64 {
		return testutil.ToFloat64(m.Finished.WithLabelValues(string(state)))
	}
	dead := func(state delivery.State) float64 { return testutil.ToFloat64(m.Failed.WithLabelValues(string(state))) }
	w := e.worker(delivery.WorkerOptions{Metrics: m}, nil)
	drain := func() {
		for e.runOnce(w) > 0 {
		}
	}

	drain() // delivered, failed, and a first 503 that is retried: not finished yet
	if d, f, x := finished(delivery.Delivered), finished(delivery.Failed), finished(delivery.Expired); d != 2 || f != 2 || x != 0 {
		t.Fatalf("after the first attempts finished = delivered %v, failed %v, expired %v; want 2, 2, 0", d, f, x)
	}
	if got := testutil.ToFloat64(m.Attempts.WithLabelValues(string(delivery.OutcomeRetry))); got != 2 {
		t.Fatalf("retry attempts = %v, want 2", got)
	}

	e.clock.Advance(time.Minute) // past the retry: the second 503 is the last attempt
	drain()
	if d, f, x := finished(delivery.Delivered), finished(delivery.Failed), finished(delivery.Expired); d != 2 || f != 2 || x != 2 {
		t.Fatalf("after expiry finished = delivered %v, failed %v, expired %v; want 2, 2, 2", d, f, x)
	}
	if n := e.count(`SELECT count(*) FROM webhook_deliveries WHERE state IN ('delivered', 'failed', 'expired')`); n != 6 {
		t.Fatalf("%d deliveries in a final state, want all 6", n)
	}
	// The dead-letter rate's numerator and denominator count the same deliveries.
	for _, st := range []delivery.State{delivery.Failed, delivery.Expired} {
		if dead(st) != finished(st) {
			t.Errorf("%s: webhook_deliveries_failed_total %v != webhook_deliveries_finished_total %v", st, dead(st), finished(st))
		}
	}
	if got := testutil.ToFloat64(m.EventsPublished); got != 2 {
		t.Errorf("delivering changed webhook_events_published_total to %v", got)
	}

	// Dead-lettered outside the completer (a deleted subscription's queue): both counters move together.
	m.DeadLettered(delivery.Failed, 3)
	if dead(delivery.Failed) != 5 || finished(delivery.Failed) != 5 {
		t.Errorf("after DeadLettered: failed_total %v, finished_total %v, want 5 and 5", dead(delivery.Failed), finished(delivery.Failed))
	}
}

// A queue gauge whose query fails reads NaN (unknown) instead of the last values as if they were current,
// and the log says why; once a read succeeds the gauges are real again.
func TestQueueGaugesSayWhenTheyCannotBeRead(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	e.publishOne(`{}`)
	pool := connect(t, 2)
	var logs logBuffer
	reg := prometheus.NewRegistry()
	delivery.NewMetrics(reg, delivery.QueueStatsReader(pool, e.clock.Now, logs.logger()))
	pending := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "webhook_deliveries_pending" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no webhook_deliveries_pending")
		return 0
	}
	if v := pending(); v != 1 {
		t.Fatalf("pending %v, want 1", v)
	}
	pool.Close() // every later read fails
	eventually(t, 5*time.Second, "the gauge to read NaN", func() bool { return math.IsNaN(pending()) })
	if !strings.Contains(logs.String(), "reading the queue gauges failed") {
		t.Errorf("the failed read was not logged:\n%s", logs.String())
	}
}
