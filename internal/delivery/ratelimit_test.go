package delivery_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
)

// The outgoing rate limit is a token bucket on the subscription's row, taken where rows are claimed, so two
// workers on separate pools (two processes) share it: 5 a second means 5 at once and then one every 200 ms,
// whichever worker claims.
func TestOutgoingRateLimitSharedByProcesses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	five := 5
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{RateLimitPerSecond: &five})
	for range 30 {
		e.publishOne(`{}`)
	}
	workers := []*delivery.Worker{
		delivery.NewWorker(connect(t, 4), delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), e.policy,
			delivery.WorkerOptions{Now: e.clock.Now, Logger: quietLog, EndpointConcurrency: 100}),
		delivery.NewWorker(connect(t, 4), delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), e.policy,
			delivery.WorkerOptions{Now: e.clock.Now, Logger: quietLog, EndpointConcurrency: 100}),
	}
	run := func(w *delivery.Worker) int {
		t.Helper()
		n, err := w.RunOnce(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := run(workers[0]) + run(workers[1]); n != 5 {
		t.Fatalf("first second: %d sent by both workers, want the bucket's 5", n)
	}
	if n := run(workers[1]); n != 0 {
		t.Fatalf("%d more sent with the bucket empty", n)
	}
	e.clock.Advance(200 * time.Millisecond)
	if n := run(workers[1]) + run(workers[0]); n != 1 {
		t.Fatalf("200 ms later: %d sent, want 1", n)
	}
	e.clock.Advance(10 * time.Second) // the bucket holds at most one second's worth
	if n := run(workers[0]) + run(workers[1]); n != 5 {
		t.Fatalf("after a long pause: %d sent, want 5 (the bucket's size)", n)
	}
	if got := e.count("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'delivered'", sub.ID); got != 11 {
		t.Fatalf("%d delivered, want 11", got)
	}
}

// The manual resend limit lives in PostgreSQL too: two services (two processes) share one subscription's
// allowance, and the refusal says how long to wait.
func TestResendLimitSharedByProcesses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(400))
	e.subscribe(rc.URL(), subscriptions.Input{})
	var dead []uuid.UUID
	for range 4 {
		dead = append(dead, e.publishOne(`{}`))
	}
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	one := deliveries.NewService(connect(t, 2), e.policy, e.clock.Now, 100, 3) // 3 a minute
	two := deliveries.NewService(connect(t, 2), e.policy, e.clock.Now, 100, 3)
	for i, svc := range []*deliveries.Service{one, two, one} {
		if _, err := svc.Retry(e.ctx, e.tenant, dead[i], deliveries.Actor{}); err != nil {
			t.Fatalf("resend %d: %v", i+1, err)
		}
	}
	_, err := two.Retry(e.ctx, e.tenant, dead[3], deliveries.Actor{})
	fe := wantFault(t, err, fault.RateLimited)
	if fe.RetryAfter < 19*time.Second || fe.RetryAfter > 20*time.Second {
		t.Fatalf("retry after %s, want about 20 s (one resend every 20 s at 3 a minute)", fe.RetryAfter)
	}
	e.clock.Advance(20 * time.Second)
	if _, err := two.Retry(e.ctx, e.tenant, dead[3], deliveries.Actor{}); err != nil {
		t.Fatalf("resend after the wait: %v", err)
	}
}
