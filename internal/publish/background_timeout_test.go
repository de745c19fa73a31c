package publish_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
)

// The NOTIFY a publish sends in the background gives up on a database that stopped answering (a crashed
// primary's machine, a partition), so it does not hold its connection until TCP gives up, minutes later.
func TestNotifyGivesUpOnASilentDatabase(t *testing.T) {
	t.Parallel()
	e := setup(t)
	proxy, proxied := startFlakyProxy(t, urlOf(t))
	pool, err := server.Connect(context.Background(), proxied, 2, server.PlanGeneric)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		proxy.Close() // else closing the pool waits for the frozen connections
		pool.Close()
	}()
	pub := publish.NewPublisher(pool, e.policy, e.clock.Now)
	proxy.Freeze()
	select {
	case err := <-pub.WakeWorkers(200 * time.Millisecond):
		if err == nil {
			t.Fatal("a NOTIFY on a silent database succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the NOTIFY on a silent database still waits after 10 s (its timeout: 200 ms)")
	}
}
