package delivery_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// switchable answers with whatever status it is set to.
func switchable(status *atomic.Int32) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(status.Load())) }
}

func (e *env) sub(id uuid.UUID) subscriptions.Subscription {
	e.t.Helper()
	s, err := e.subs.Get(e.ctx, e.tenant, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// The circuit breaker, on an injected clock: threshold transient failures in a row open the circuit; due
// deliveries then wait without being attempted; after the probe interval exactly one goes (half_open); a
// failed probe opens the circuit for twice as long; a 2xx closes it and the backlog drains under the cap.
func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var status atomic.Int32
	status.Store(503)
	rc := newReceiver(t, switchable(&status))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{EndpointConcurrency: 10,
		Breaker: delivery.Breaker{Threshold: 3, ProbeInterval: 10 * time.Second, ProbeMax: 30 * time.Second}}, nil)
	for range 2 {
		e.publishOne(`{}`)
	}
	e.runOnce(w) // two transient failures: below the threshold
	if c := e.sub(sub.ID).Circuit; c.State != delivery.CircuitClosed {
		t.Fatalf("circuit %s after 2 failures, threshold 3", c.State)
	}
	e.publishOne(`{}`)
	if n := e.runOnce(w); n != 1 { // the two retries are not due yet
		t.Fatalf("attempted %d, want the one fresh delivery", n)
	}
	opened := e.clock.Now()
	c := e.sub(sub.ID).Circuit
	if c.State != delivery.CircuitOpen || c.OpenedAt == nil || !c.OpenedAt.Equal(opened) ||
		c.NextProbeAt == nil || !c.NextProbeAt.Equal(opened.Add(10*time.Second)) {
		t.Fatalf("after 3 failures in a row: %+v, want open at %s with a probe 10 s later", c, opened)
	}
	h, err := e.subs.Health(e.ctx, e.tenant, sub.ID)
	if err != nil || h.CircuitState != delivery.CircuitOpen || h.FailingSince == nil {
		t.Fatalf("health: %+v, %v; want the open circuit and failing_since", h, err)
	}

	// Open: due deliveries wait, a fresh one too.
	e.clock.Advance(9 * time.Second)
	fresh := e.publishOne(`{}`)
	if n := e.runOnce(w); n != 0 {
		t.Fatalf("an open circuit let %d attempts through before its probe time", n)
	}

	// Probe time: exactly one attempt, while the circuit is half open; it fails → open for 20 s.
	e.clock.Advance(time.Second)
	e.failProbe(w, sub.ID, rc)

	// The next probe, 20 s later, succeeds: closed, and everything due drains.
	e.clock.Advance(20 * time.Second)
	status.Store(200)
	if n := e.runOnce(w); n != 1 {
		t.Fatalf("second probe: %d attempts, want 1", n)
	}
	if c := e.sub(sub.ID).Circuit; c.State != delivery.CircuitClosed || c.OpenedAt != nil || c.NextProbeAt != nil {
		t.Fatalf("after a successful probe: %+v, want closed", c)
	}
	if s := e.sub(sub.ID); s.FailingSince != nil {
		t.Fatalf("failing_since %v after a success", s.FailingSince)
	}
	e.clock.Advance(time.Hour) // every retry due
	for e.runOnce(w) > 0 {
	}
	e.wantState(fresh, delivery.Delivered, 2) // due first at the first probe time, so that probe was its first attempt
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state <> 'delivered'", sub.ID); n != 0 {
		t.Fatalf("%d deliveries not delivered after the circuit closed", n)
	}
}

// failProbe claims the probe, the one attempt let through while the circuit is half open, and records
// its failure: the circuit opens again for twice as long, and the receiver gets nothing.
func (e *env) failProbe(w *delivery.Worker, sub uuid.UUID, rc *receiver) {
	e.t.Helper()
	hitsBefore := rc.hits()
	rows, lease, err := w.Claim(e.ctx, 10)
	if err != nil || len(rows) != 1 {
		e.t.Fatalf("probe claim: %d rows, %v; want exactly one", len(rows), err)
	}
	if c := e.sub(sub).Circuit; c.State != delivery.CircuitHalfOpen {
		e.t.Fatalf("circuit %s while the probe is in flight, want half_open", c.State)
	}
	if more, _, _ := w.Claim(e.ctx, 10); len(more) != 0 {
		e.t.Fatalf("a second attempt went out while the probe was in flight")
	}
	if err := w.RecordStatus(e.ctx, rows, lease, 503); err != nil {
		e.t.Fatal(err)
	}
	c := e.sub(sub).Circuit
	if c.State != delivery.CircuitOpen || !c.NextProbeAt.Equal(e.clock.Now().Add(20*time.Second)) {
		e.t.Fatalf("after a failed probe: %+v, want open with the next probe 20 s later", c)
	}
	if rc.hits() != hitsBefore {
		e.t.Fatalf("the receiver got %d requests during the open circuit; RecordStatus sends none", rc.hits()-hitsBefore)
	}
}

// A probe interval doubles after each failed probe, but never beyond ProbeMax.
func TestCircuitProbeIntervalCapped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(503))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Breaker: delivery.Breaker{Threshold: 1, ProbeInterval: 10 * time.Second, ProbeMax: 25 * time.Second}}, nil)
	e.publishOne(`{}`)
	e.runOnce(w)
	want := []time.Duration{20 * time.Second, 25 * time.Second, 25 * time.Second}
	wait := 10 * time.Second
	for _, next := range want {
		e.clock.Advance(wait)
		e.publishOne(`{}`) // something due for the probe
		if n := e.runOnce(w); n != 1 {
			t.Fatalf("probe: %d attempts, want 1", n)
		}
		c := e.sub(sub.ID).Circuit
		if got := c.NextProbeAt.Sub(e.clock.Now()); got != next {
			t.Fatalf("next probe in %s, want %s", got, next)
		}
		wait = next
	}
}

// A 410 Gone fails that delivery and disables the subscription at once, with the reason in words; its
// waiting deliveries are held; Resume starts afresh.
func TestGoneDisablesSubscription(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var status atomic.Int32
	status.Store(410)
	rc := newReceiver(t, switchable(&status))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{}, nil)
	gone := e.publishOne(`{}`)
	e.runOnce(w)
	d := e.wantState(gone, delivery.Failed, 1)
	if d.DeadReason == nil || *d.DeadReason != delivery.ReasonPermanentStatus {
		t.Fatalf("dead reason %v", deref(d.DeadReason))
	}
	s := e.sub(sub.ID)
	if s.State != subscriptions.Disabled || !strings.Contains(s.DisabledReason, "410 Gone") {
		t.Fatalf("after a 410: state %s, reason %q; want disabled, saying why", s.State, s.DisabledReason)
	}
	// Disabled subscriptions get no new deliveries; ones already waiting are held.
	if p := e.publish("order.created", `{}`); len(p.Deliveries) != 0 {
		t.Fatalf("a disabled subscription got %d new deliveries", len(p.Deliveries))
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, give_up_at, next_attempt_at)
		SELECT tenant_id, event_id, subscription_id, event_type, give_up_at, $2 FROM webhook_deliveries WHERE id = $1`, gone, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := e.runOnce(w); n != 0 {
		t.Fatalf("a disabled subscription's waiting delivery was attempted (%d)", n)
	}
	status.Store(200)
	s, err := e.subs.Resume(e.ctx, e.tenant, sub.ID)
	if err != nil || s.State != subscriptions.Active || s.DisabledReason != "" || s.FailingSince != nil || s.Circuit.State != delivery.CircuitClosed {
		t.Fatalf("resume: %+v, %v; want a fresh start", s, err)
	}
	if n := e.runOnce(w); n != 1 {
		t.Fatalf("after resume: %d attempts, want the held delivery", n)
	}
}

// Auto-disable, on an injected clock: a subscription whose attempts have only failed for longer than the
// limit is disabled with the reason in words; a success before that starts the count again.
func TestAutoDisableAfterOnlyFailures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var status atomic.Int32
	status.Store(500)
	rc := newReceiver(t, switchable(&status))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	healthy, _ := e.subscribe(newReceiver(t, nil).URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Breaker: delivery.Breaker{Threshold: 1000}}, nil)
	e.publish("order.created", `{}`)
	e.runOnce(w)
	first := e.clock.Now()
	if s := e.sub(sub.ID); s.FailingSince == nil || !s.FailingSince.Equal(first) {
		t.Fatalf("failing_since %v, want %s", s.FailingSince, first)
	}
	disable := func() []subscriptions.Subscription {
		t.Helper()
		got, err := e.subs.DisableFailing(e.ctx, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	e.clock.Advance(23 * time.Hour)
	if got := disable(); len(got) != 0 {
		t.Fatalf("disabled after 23 h of failures: %+v", got)
	}
	// A success resets the run; failures after it start a new one.
	status.Store(200)
	e.publish("order.created", `{}`)
	e.runOnce(w)
	if s := e.sub(sub.ID); s.FailingSince != nil {
		t.Fatalf("failing_since %v after a success", s.FailingSince)
	}
	status.Store(500)
	e.publish("order.created", `{}`)
	e.runOnce(w)
	restart := e.clock.Now()
	e.clock.Advance(2 * time.Hour) // 25 h after the first failure, 2 h after the new run began
	if got := disable(); len(got) != 0 {
		t.Fatalf("disabled although a success came 2 h ago: %+v", got)
	}
	e.clock.Set(restart.Add(24*time.Hour + time.Second))
	got := disable()
	if len(got) != 1 || got[0].ID != sub.ID {
		t.Fatalf("disabled %+v, want only the failing subscription", got)
	}
	s := e.sub(sub.ID)
	if s.State != subscriptions.Disabled || !strings.Contains(s.DisabledReason, "disabled automatically") {
		t.Fatalf("state %s, reason %q", s.State, s.DisabledReason)
	}
	if e.sub(healthy.ID).State != subscriptions.Active {
		t.Fatal("the healthy subscription was disabled")
	}
}
