package deliveries_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
)

// TestRetryNow: a retrying delivery's backoff is cut short (same attempt numbering, deadline and schedule
// otherwise), with the manual cap and the resend bucket of a resend; anything not waiting for a retry is
// INVALID_STATE.
func TestRetryNow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var succeed atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if succeed.Load() {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)

	// Not tried yet: nothing to cut short.
	_, err := e.svc.RetryNow(e.ctx, e.tenant, id, deliveries.Actor{})
	wantFault(t, err, fault.InvalidState)

	w := e.worker(delivery.WorkerOptions{}, nil)
	e.runOnce(w)
	before := e.wantState(id, delivery.Pending, 1)
	if !before.NextAttemptAt.After(e.clock.Now()) {
		t.Fatalf("fixture: next attempt %s is not in the future", before.NextAttemptAt)
	}
	// Not due yet: the worker leaves it.
	if n := e.runOnce(w); n != 0 {
		t.Fatalf("worker sent %d before the backoff", n)
	}

	d, err := e.svc.RetryNow(e.ctx, e.tenant, id, deliveries.Actor{})
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	if d.State != delivery.Pending || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(now) || d.ManualRetries != 1 ||
		d.AttemptCount != 1 || !d.GiveUpAt.Equal(before.GiveUpAt) {
		t.Fatalf("after retry now: %+v", d)
	}
	succeed.Store(true)
	e.runOnce(w)
	if row := e.wantState(id, delivery.Delivered, 2); row.TotalAttempts != 2 {
		t.Errorf("total_attempts %d, want 2", row.TotalAttempts)
	}

	// The API's retry is for finished deliveries; Retry now for waiting ones only.
	_, err = e.svc.RetryNow(e.ctx, e.tenant, id, deliveries.Actor{})
	wantFault(t, err, fault.InvalidState)
	if d := e.delivery(id); d.ManualRetries != 1 {
		t.Errorf("a refused retry now counted: %d", d.ManualRetries)
	}
}

func TestRetryNowCappedAndLimited(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 1, 2) // cap 1, 2 resends a minute
	rc := newReceiver(t, statuses(503))
	e.subscribe(rc.URL(), subscriptions.Input{})
	ida, idb := e.publishOne(`{}`), e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	e.runOnce(w)
	e.wantState(ida, delivery.Pending, 1)
	e.wantState(idb, delivery.Pending, 1)
	if _, err := svc.RetryNow(e.ctx, e.tenant, ida, deliveries.Actor{}); err != nil {
		t.Fatal(err)
	}
	e.runOnce(w) // fails again: back to waiting
	e.wantState(ida, delivery.Pending, 2)
	_, err := svc.RetryNow(e.ctx, e.tenant, ida, deliveries.Actor{})
	wantFault(t, err, fault.MaxRetries)
	if _, err := svc.RetryNow(e.ctx, e.tenant, ida, deliveries.Actor{Admin: true}); err != nil {
		t.Errorf("an admin is not capped: %v", err)
	}
	// The bucket (2 a minute) is shared with resends: the admin's took the second token.
	_, err = svc.RetryNow(e.ctx, e.tenant, idb, deliveries.Actor{})
	fe := wantFault(t, err, fault.RateLimited)
	if d := e.delivery(idb); d.ManualRetries != 0 || !d.NextAttemptAt.After(e.clock.Now()) {
		t.Errorf("a limited retry now changed the delivery: %d, next %s", d.ManualRetries, d.NextAttemptAt)
	}
	e.clock.Advance(fe.RetryAfter)
	if _, err := svc.RetryNow(e.ctx, e.tenant, idb, deliveries.Actor{}); err != nil {
		t.Errorf("after Retry-After: %v", err)
	}
}
