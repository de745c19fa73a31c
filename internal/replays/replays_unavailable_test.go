package replays_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
)

// A chunk that fails because the database is away does not count against MaxFailures: a failover must not
// fail a customer's replay for good. The replay stays running and resumes once the database answers.
func TestReplaySurvivesTheDatabaseGoingAway(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	e.insert(rows{sub: sub.ID, n: 1500, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}})
	if err != nil {
		t.Fatal(err)
	}

	proxy, proxied := startFlakyProxy(t, urlOf(t))
	pool, err := server.Connect(context.Background(), proxied, 1, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	run := e.runner(replays.NewReplays(pool, e.policy, e.clock.Now))
	run.MaxFailures = 1 // the first counted failure fails the replay

	pool.Reset()        // the next chunk needs a new connection,
	proxy.Drop.Store(1) // which is refused; the one after it goes through
	run.Run(e.ctx, r.ID)
	if got := e.getReplay(rp, r.ID); got.State != replays.ReplayRunning || got.Scheduled != 0 || got.Error != "" {
		t.Fatalf("after a chunk failed with the database away: %+v, want it running, untouched", got)
	}
	run.Run(e.ctx, r.ID)
	if got := e.getReplay(rp, r.ID); got.State != replays.ReplayFinished || got.Scheduled != 1500 {
		t.Fatalf("once the database answered: %+v, want it finished with all 1500 scheduled", got)
	}
}
