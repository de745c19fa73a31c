package deliveries_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
)

// TestResendOfADeletedSubscriptionsDeliveryIsRefused: nothing is sent to a deleted subscription, so a
// resend of one of its dead deliveries, or a retry now of one still waiting, is 409 INVALID_STATE naming
// the deleted subscription, for a tenant and an admin alike, and costs nothing: no manual retry counted, no
// resend taken from the bucket, the delivery left as it was. (It was accepted, spent a manual retry and
// then waited as "retrying" for good, since no worker claims a deleted subscription's deliveries.)
func TestResendOfADeletedSubscriptionsDeliveryIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 3, 1) // one resend a minute
	rc := newReceiver(t, statuses(400))
	sub, _ := e.subscribe(rc.URL()+"/gone", subscriptions.Input{})
	dead := e.publishOne(`{}`)
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	e.wantState(dead, delivery.Failed, 1)
	retrying := e.publishOne(`{}`)
	if err := e.subs.Delete(e.ctx, e.tenant, sub.ID); err != nil {
		t.Fatal(err)
	}
	// A retrying delivery the delete did not end (how such rows come about: see
	// TestDeletedSubscriptionsWaitingDeliveriesEnd): dead-lettered by the delete, then back in the queue.
	e.forceRetrying(retrying, e.clock.Now().Add(time.Hour))

	for _, actor := range []deliveries.Actor{{}, {Admin: true}} {
		_, err := svc.Retry(e.ctx, e.tenant, dead, actor)
		fe := wantFault(t, err, fault.InvalidState)
		for _, want := range []string{sub.ID.String(), rc.URL() + "/gone", "deleted"} {
			if !strings.Contains(fe.Message, want) {
				t.Errorf("admin %v: resend refusal %q does not name %q", actor.Admin, fe.Message, want)
			}
		}
		_, err = svc.RetryNow(e.ctx, e.tenant, retrying, actor)
		fe = wantFault(t, err, fault.InvalidState)
		if !strings.Contains(fe.Message, sub.ID.String()) || !strings.Contains(fe.Message, "deleted") {
			t.Errorf("admin %v: retry-now refusal %q does not name the deleted subscription", actor.Admin, fe.Message)
		}
	}
	if d := e.wantState(dead, delivery.Failed, 1); d.ManualRetries != 0 {
		t.Errorf("a refused resend counted %d manual retries", d.ManualRetries)
	}
	if d := e.delivery(retrying); d.ManualRetries != 0 || !d.NextAttemptAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Errorf("a refused retry now changed the delivery: manual_retries %d, next attempt %s", d.ManualRetries, d.NextAttemptAt)
	}
	if wait, err := svc.ResendWait(e.ctx, sub.ID); err != nil || wait != 0 {
		t.Errorf("a refused resend took from the resend bucket: wait %s, %v", wait, err)
	}
}

// TestResendRacingADeleteIsRefused: the subscription is deleted after a resend read its dead delivery and
// before its statement runs. The statement's guard refuses it, and the answer names the deleted
// subscription (the resend queued it for good).
func TestResendRacingADeleteIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(400))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	e.wantState(id, delivery.Failed, 1)
	e.svc.AfterRead(func() {
		if err := e.subs.Delete(e.ctx, e.tenant, sub.ID); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
	_, err := e.svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{})
	fe := wantFault(t, err, fault.InvalidState)
	if !strings.Contains(fe.Message, sub.ID.String()) || !strings.Contains(fe.Message, "deleted") {
		t.Errorf("refusal %q does not name the deleted subscription", fe.Message)
	}
	if d := e.wantState(id, delivery.Failed, 1); d.ManualRetries != 0 {
		t.Errorf("the refused resend counted %d manual retries", d.ManualRetries)
	}
}

// TestRetryThatLosesTheRaceSpendsNoResend: of two resends of one dead delivery, the one whose statement
// finds the delivery already queued by the other is refused and takes nothing from the subscription's
// resend bucket (it took a token before its statement ran, so the loser spent the budget too).
func TestRetryThatLosesTheRaceSpendsNoResend(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 3, 2) // two resends a minute
	rc := newReceiver(t, statuses(400))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	e.wantState(id, delivery.Failed, 1)
	var raced atomic.Bool
	svc.AfterRead(func() {
		if raced.Swap(true) {
			return // the winner's own read
		}
		if _, err := svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{}); err != nil {
			t.Errorf("the winning resend: %v", err)
		}
	})
	_, err := svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{})
	wantFault(t, err, fault.InvalidState)
	if d := e.wantState(id, delivery.Pending, 0); d.ManualRetries != 1 {
		t.Errorf("manual retries %d, want 1 (the winner's)", d.ManualRetries)
	}
	// The winner took one of the two tokens; the second is still there.
	if wait, err := svc.ResendWait(e.ctx, sub.ID); err != nil || wait != 0 {
		t.Errorf("the losing resend took from the resend bucket: wait %s, %v", wait, err)
	}
}

// TestRetryOverTheResendRateChangesNothing: past the subscription's resend rate a resend is 429 with the
// wait, and the delivery is left as it was (the rate is checked in the statement's transaction now).
func TestRetryOverTheResendRateChangesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	svc := deliveries.NewService(e.pool, e.policy, e.clock.Now, 3, 1)
	rc := newReceiver(t, statuses(400))
	e.subscribe(rc.URL(), subscriptions.Input{})
	first, second := e.publishOne(`{}`), e.publishOne(`{}`)
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	e.wantState(first, delivery.Failed, 1)
	e.wantState(second, delivery.Failed, 1)
	if _, err := svc.Retry(e.ctx, e.tenant, first, deliveries.Actor{}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Retry(e.ctx, e.tenant, second, deliveries.Actor{})
	if fe := wantFault(t, err, fault.RateLimited); fe.RetryAfter <= 0 {
		t.Errorf("rate-limited without a wait: %+v", fe)
	}
	if d := e.wantState(second, delivery.Failed, 1); d.ManualRetries != 0 {
		t.Errorf("a rate-limited resend counted %d manual retries", d.ManualRetries)
	}
}

// forceRetrying puts a delivery back in the queue as retrying, due at next, the way a race with a delete
// leaves one (a resend, a replay or an attempt's outcome that committed around it).
func (e *env) forceRetrying(id uuid.UUID, next time.Time) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = 'pending', total_attempts = greatest(total_attempts, 1),
		attempt_count = greatest(attempt_count, 1), dead_reason = NULL, dead_at = NULL, next_attempt_at = $2 WHERE id = $1`, id, next); err != nil {
		e.t.Fatal(err)
	}
}
