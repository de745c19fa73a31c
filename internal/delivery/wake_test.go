package delivery_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/jackc/pgx/v5"
)

// An idle worker must not wait for its poll interval: a new event wakes it through LISTEN/NOTIFY, and a
// retry it scheduled itself wakes it when due. The poll interval here is a minute, so either path failing
// makes the test time out.
func TestIdleWorkerWakesForNewEventsAndScheduledRetries(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
		// Well under the minute the worker would otherwise wait for its poll, with room for a busy CI machine
		// (a burst of 16 under the race detector beside the other packages once took over 5 s).
		eventually(t, 20*time.Second, "every event of the burst delivered", func() bool { return rc.hits() == want })
	}
}

// A publish's NOTIFY names its own process's worker (Publisher.Local), which that worker's listener skips,
// having been woken directly; every other process's worker claims on it. Here the publisher's "own" worker
// is a stand-in, so only the NOTIFY can wake the real one (its poll is a minute): the event is delivered at
// once, and the NOTIFY carried the stand-in's origin, not the real worker's.
func TestPublishNotifiesOtherProcessesWorkersWithItsOrigin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	e.subscribe(rc.URL(), subscriptions.Input{})
	conn, err := pgx.ConnectConfig(e.ctx, e.pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(e.ctx, "LISTEN hookline_deliveries"); err != nil {
		t.Fatal(err)
	}
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	local := &stubLocal{origin: "another-process-worker"}
	e.pub.Local = local
	e.publishOne(`{}`)
	eventually(t, 5*time.Second, "the other worker to deliver on the NOTIFY", func() bool { return rc.hits() == 1 })
	if local.wakes.Load() != 1 {
		t.Errorf("the publisher's own worker was woken %d times, want 1", local.wakes.Load())
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != local.origin || n.Payload == w.Origin() {
		t.Errorf("NOTIFY payload %q, want the publisher's own worker's origin %q (the real worker's is %q)", n.Payload, local.origin, w.Origin())
	}
}

// A worker's listener skips a NOTIFY carrying its own origin (its process's publish woke it already) and
// wakes for any other: the NOTIFY with its origin is skipped; a NOTIFY from elsewhere, sent after it,
// wakes it and its claim finds the delivery. (A publish that claims for its idle local worker sends no
// NOTIFY when it claimed every delivery it made: see TestPublishClaimsForTheIdleLocalWorker.)
func TestListenerSkipsItsOwnOrigin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	var woken atomic.Int32
	w.OnNotification(func(payload string, wake bool) {
		if payload == w.Origin() && wake {
			t.Errorf("the worker woke for its own origin")
		}
		if payload != w.Origin() && !wake {
			t.Errorf("the worker skipped a NOTIFY from elsewhere (%q)", payload)
		}
		woken.Add(1)
	})
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	eventually(t, 5*time.Second, "the listener to be listening", func() bool {
		var n int
		err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%LISTEN hookline_deliveries%'`).Scan(&n)
		return err == nil && n > 0
	})
	// The publisher's local worker stands in for w, under w's origin: the publish wakes the stand-in, and
	// its NOTIFY names w, which skips it, so the delivery waits (the poll is a minute away).
	e.pub.Local = &stubLocal{origin: w.Origin()}
	e.publishOne(`{}`)
	eventually(t, 5*time.Second, "the NOTIFY with the worker's own origin", func() bool { return woken.Load() == 1 })
	if _, err := e.pool.Exec(e.ctx, "SELECT pg_notify('hookline_deliveries', 'elsewhere')"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the NOTIFY from elsewhere", func() bool { return woken.Load() == 2 })
	eventually(t, 5*time.Second, "the delivery the NOTIFY from elsewhere woke the worker for", func() bool { return rc.hits() == 1 })
}

// stubLocal stands for a process's own worker (Publisher.Local): it counts wakes.
type stubLocal struct {
	wakes  atomic.Int32
	origin string
}

func (l *stubLocal) Wake()          { l.wakes.Add(1) }
func (l *stubLocal) Origin() string { return l.origin }
