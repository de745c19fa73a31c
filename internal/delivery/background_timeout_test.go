package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
)

// The NOTIFY a publish sends in the background gives up on a database that stopped answering (a crashed
// primary's machine, a partition), so it does not hold its connection until TCP gives up, minutes later.
func TestNotifyGivesUpOnASilentDatabase(t *testing.T) {
	e := setup(t)
	proxy, proxied := startFlakyProxy(t, dbURL)
	pool, err := server.Connect(context.Background(), proxied, 2, server.PlanGeneric)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		proxy.Close() // else closing the pool waits for the frozen connections
		pool.Close()
	}()
	pub := delivery.NewPublisher(pool, e.policy, e.clock.Now)
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

// A replay chunk that waits on a lock (another transaction holds the deliveries' table) is cut off after
// ChunkTimeout and counts as a failed chunk, the database being there: after MaxFailures the replay is
// marked failed, with its true counts, rather than the runner waiting for as long as the lock is held.
func TestReplayChunkStuckOnALockIsCutOff(t *testing.T) {
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	e.insert(rows{sub: sub.ID, n: 10, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	r, err := rp.Start(e.ctx, delivery.ReplayRequest{Filter: delivery.DeadFilter{CreatedFrom: &from, CreatedTo: &to}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.getReplay(rp, r.ID); got.State != delivery.ReplayRunning {
		t.Fatalf("replay %+v, want it running", got)
	}
	holder, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(e.ctx, "LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}

	run := e.runner(rp)
	run.ChunkTimeout, run.MaxFailures = 200*time.Millisecond, 1
	done := make(chan struct{})
	go func() {
		defer close(done)
		run.Run(e.ctx, r.ID)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the replay runner still waits on a chunk stuck on a lock after 15 s (ChunkTimeout 200 ms)")
	}
	if err := holder.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.getReplay(rp, r.ID); got.State != delivery.ReplayFailed || got.Scheduled != 0 || got.Error == "" {
		t.Fatalf("after a chunk stuck on a lock: %+v, want it failed, nothing scheduled, with the error", got)
	}
}
