package deliveries_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
)

// TestConcurrentAdminRetriesQueueOnce: admins are not held by the manual cap, so only the statement's
// guard keeps concurrent retries of one dead delivery from queueing it twice.
func TestConcurrentAdminRetriesQueueOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 3, 1000)
	rc := newReceiver(t, statuses(400))
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	for round := 1; round <= 5; round++ {
		e.runOnce(w)
		e.wantState(id, delivery.Failed, 1)
		var ok atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				_, err := svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{Admin: true})
				if err == nil {
					ok.Add(1)
				} else if !fault.Is(err, fault.InvalidState) {
					t.Errorf("round %d: %v, want success or INVALID_STATE", round, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 {
			t.Fatalf("round %d: %d of 8 concurrent admin retries succeeded, want 1", round, ok.Load())
		}
		e.wantState(id, delivery.Pending, 0)
	}
}

// TestAdminRetryOfAVersionAlreadyResentIsRefused: two admins retry one dead delivery; the first one's
// retry is sent and delivered before the second one's statement runs. The second read the dead delivery,
// so it must not queue the delivered row again (it did: the endpoint received it twice).
func TestAdminRetryOfAVersionAlreadyResentIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 3, 1000)
	var ok atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if ok.Load() {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	e.runOnce(w)
	e.wantState(id, delivery.Failed, 1)
	ok.Store(true)

	var raced atomic.Bool
	svc.AfterRead(func() {
		if raced.Swap(true) {
			return // the other admin's own read
		}
		{
			// The other admin's retry, sent and delivered meanwhile (the clock moves on, as it does).
			e.clock.Advance(time.Second)
			if _, err := svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{Admin: true}); err != nil {
				t.Errorf("the other admin's retry: %v", err)
			}
			e.runOnce(w)
			e.wantState(id, delivery.Delivered, 1)
		}
	})
	_, err := svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{Admin: true})
	wantFault(t, err, fault.InvalidState)
	e.wantState(id, delivery.Delivered, 1)
	if n := e.runOnce(w); n != 0 {
		t.Errorf("the delivered row was queued again and sent %d times", n)
	}
	if hits := rc.hits(); hits != 2 {
		t.Errorf("the endpoint received the event %d times, want 2 (the failure and one resend)", hits)
	}
}

// TestRetryNowRefusedWhileCircuitOpen: while the subscription's circuit is open nothing but its probe is
// sent, so Retry now is refused with the reason and the probe's time, and costs nothing: no manual retry
// counted, no token taken from the resend bucket, the schedule unchanged.
func TestRetryNowRefusedWhileCircuitOpen(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 3, 1) // one resend a minute
	rc := newReceiver(t, statuses(503))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{Breaker: delivery.Breaker{Threshold: 1, ProbeInterval: time.Minute}}, nil)
	e.runOnce(w)
	before := e.wantState(id, delivery.Pending, 1)
	probeAt := e.clock.Now().Add(time.Minute)

	for _, actor := range []deliveries.Actor{{}, {Admin: true}} {
		_, err := svc.RetryNow(e.ctx, e.tenant, id, actor)
		fe := wantFault(t, err, fault.InvalidState)
		if !strings.Contains(fe.Message, "circuit is open") || !strings.Contains(fe.Message, probeAt.UTC().Format(time.RFC3339)) {
			t.Errorf("admin %v: refusal %q does not say the circuit is open and when the probe is due (%s)", actor.Admin, fe.Message, probeAt.UTC().Format(time.RFC3339))
		}
	}
	after := e.delivery(id)
	if after.ManualRetries != 0 || !after.NextAttemptAt.Equal(before.NextAttemptAt) {
		t.Errorf("a refused retry now changed the delivery: manual_retries %d, next attempt %s (was %s)",
			after.ManualRetries, after.NextAttemptAt, before.NextAttemptAt)
	}
	if wait, err := svc.ResendWait(e.ctx, sub.ID); err != nil || wait != 0 {
		t.Errorf("a refused retry now took from the resend bucket: wait %s, %v", wait, err)
	}
}
