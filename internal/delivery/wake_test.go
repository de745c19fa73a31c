package delivery_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// An idle worker must not wait for its poll interval: a new event wakes it through LISTEN/NOTIFY, and a
// retry it scheduled itself wakes it when due. The poll interval here is a minute, so either path failing
// makes the test time out.
func TestIdleWorkerWakesForNewEventsAndScheduledRetries(t *testing.T) {
	e := setup(t)
	e.setPolicy(delivery.RetryPolicy{Base: 100 * time.Millisecond, MaxDelay: time.Second, MaxAttempts: 5, Window: time.Hour})
	rc := newReceiver(t, statuses(500, 200, 200))
	e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	published := time.Now()
	id := e.publishOne(`{"n":1}`)
	eventually(t, 10*time.Second, "the retry after a 500 to be delivered", func() bool {
		return e.delivery(id).State == string(delivery.Delivered)
	})
	took := time.Since(published)
	if n := rc.hits(); n != 2 {
		t.Fatalf("receiver got %d requests, want 2 (500, then 200)", n)
	}
	t.Logf("publish → 500 → retry after 100 ms → 200 took %s with a one-minute poll interval", took)

	published = time.Now()
	id = e.publishOne(`{"n":2}`)
	eventually(t, 5*time.Second, "a new event on an idle worker", func() bool {
		return e.delivery(id).State == string(delivery.Delivered)
	})
	t.Logf("idle pickup to delivered took %s", time.Since(published))
}

// Concurrent publishes share NOTIFYs (one is sent after the commits that asked while another was being
// sent), and none is lost: with a one-minute poll, every burst of concurrent events on an idle worker is
// delivered at once, whichever way the publishes interleave.
func TestConcurrentPublishesWakeIdleWorker(t *testing.T) {
	e := setup(t)
	rc := newReceiver(t, nil)
	e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	for round := range 5 {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() { e.publishOne(`{}`) })
		}
		wg.Wait()
		want := (round + 1) * 16
		eventually(t, 5*time.Second, "every event of the burst delivered", func() bool { return rc.hits() == want })
	}
}
