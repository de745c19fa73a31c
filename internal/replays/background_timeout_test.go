package replays_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
)

// A replay chunk that waits on a lock (another transaction holds the deliveries' table) is cut off after
// ChunkTimeout and counts as a failed chunk, the database being there: after MaxFailures the replay is
// marked failed, with its true counts, rather than the runner waiting for as long as the lock is held.
func TestReplayChunkStuckOnALockIsCutOff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	e.insert(rows{sub: sub.ID, n: 10, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.getReplay(rp, r.ID); got.State != replays.ReplayRunning {
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
	if got := e.getReplay(rp, r.ID); got.State != replays.ReplayFailed || got.Scheduled != 0 || got.Error == "" {
		t.Fatalf("after a chunk stuck on a lock: %+v, want it failed, nothing scheduled, with the error", got)
	}
}
