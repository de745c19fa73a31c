package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"go.uber.org/goleak"
)

// A stopped worker leaves nothing running: fetcher, listener, completer, attempts and the sender's
// keep-alive connections are all gone.
func TestStoppedWorkerLeavesNoGoroutines(t *testing.T) {
	// Not parallel: it counts every goroutine of the process.
	e := setup(t)
	rc := newReceiver(t, nil)
	e.subscribe(rc.URL(), subscriptions.Input{})
	e.genericPool() // the server's pool, which outlives its worker
	before := goleak.IgnoreCurrent()

	w := e.worker(delivery.WorkerOptions{}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	id := e.publishOne(`{}`)
	eventually(t, 10*time.Second, "delivery", func() bool { return e.delivery(id).State == string(delivery.Delivered) })
	w.Stop(context.Background())
	goleak.VerifyNone(t, before)
}
