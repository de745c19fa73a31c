package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/hookline/hookline/internal/server"
)

// A claim on a database that stopped answering without closing its connections (a crashed primary's
// machine, a partition) gives up after ClaimTimeout, as an unavailable database, so the fetcher goes on to
// the next claim (on whichever host accepts writes) instead of waiting for TCP to give up.
func TestClaimGivesUpOnASilentDatabase(t *testing.T) {
	t.Parallel()
	e := setup(t)
	proxy, proxied := startFlakyProxy(t, urlOf(t))
	pool, err := server.Connect(context.Background(), proxied, 1, server.PlanCached)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		proxy.Close() // else closing the pool waits out pgx's 15 s for the frozen connection's goodbye
		pool.Close()
	}()
	const claimTimeout = 300 * time.Millisecond
	w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), e.policy,
		delivery.WorkerOptions{ClaimTimeout: claimTimeout, Now: e.clock.Now, Logger: quietLog})
	if _, err := w.RunOnce(e.ctx); err != nil { // the connection is open and works
		t.Fatal(err)
	}

	proxy.Freeze()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err = w.RunOnce(ctx)
	took := time.Since(start)
	if err == nil {
		t.Fatal("a claim on a silent database succeeded")
	}
	t.Logf("the claim gave up after %s: %v", took.Round(time.Millisecond), err)
	if took > claimTimeout+2*time.Second {
		t.Fatalf("the claim gave up after %s, want about ClaimTimeout (%s)", took, claimTimeout)
	}
	if !pgfail.Unavailable(err) {
		t.Errorf("the claim's error is not an unavailable database: %v", err)
	}
}
