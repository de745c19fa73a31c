package replays_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
)

// A replay reports what became of what it scheduled, counted from the deliveries themselves: real
// deliveries to real receivers (one answering 204, one 410, one 503 until told otherwise), a replay that
// finishes scheduling long before they are final, and a later replay that takes some of them over.
func TestReplayOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	ok := newReceiver(t, nil)
	// "gone" answers 404, not 410: a 410 disables its subscription at once, and the second of its two
	// deliveries, if claimed after the first's answer was recorded, would wait for good.
	gone := newReceiver(t, statuses(http.StatusNotFound))
	var fixedToGone atomic.Bool
	flaky := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if fixedToGone.Load() {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	subOK, _ := e.subscribe(ok.URL(), subscriptions.Input{})
	subGone, _ := e.subscribe(gone.URL(), subscriptions.Input{})
	subFlaky, _ := e.subscribe(flaky.URL(), subscriptions.Input{})
	now := e.clock.Now()
	from, to := now.Add(-2*time.Hour), now
	dead := func(sub subscriptions.Subscription, n int) {
		e.insert(rows{sub: sub.ID, n: n, state: delivery.Failed, reason: delivery.ReasonPermanentStatus,
			createdAt: now.Add(-time.Hour), step: time.Millisecond})
	}
	dead(subOK, 4)
	dead(subGone, 2)
	dead(subFlaky, 1)

	r1, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{TenantID: &e.tenant, CreatedFrom: &from, CreatedTo: &to},
		Spread: time.Second, Actor: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	e.runner(rp).RunAll(e.ctx)
	got := e.getReplay(rp, r1.ID)
	// Scheduling is done; nothing is sent yet: finished is not settled.
	if got.State != replays.ReplayFinished || got.Scheduled != 7 || got.Pending != 7 || got.Delivered != 0 || got.Failed != 0 || got.Settled() {
		t.Fatalf("scheduled replay: %+v", got)
	}

	e.clock.Advance(2 * time.Second)
	w := e.worker(delivery.WorkerOptions{Concurrency: 4, PollInterval: 10 * time.Millisecond}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	eventually(t, 10*time.Second, "the replayed deliveries' first attempts", func() bool {
		return ok.hits() == 4 && gone.hits() == 2 && flaky.hits() == 1 &&
			e.count("SELECT count(*) FROM webhook_deliveries WHERE replay_id = $1 AND state = 'in_flight'", r1.ID) == 0
	})
	got = e.getReplay(rp, r1.ID)
	if got.Delivered != 4 || got.Failed != 2 || got.Pending != 1 || got.TakenOver != 0 || got.Settled() {
		t.Fatalf("after first attempts: delivered %d, failed %d, pending %d, taken over %d, settled %v",
			got.Delivered, got.Failed, got.Pending, got.TakenOver, got.Settled())
	}
	// The audit log counts the same.
	page, err := rp.List(e.ctx, replays.ReplayListFilter{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Delivered != 4 || page.Items[0].Failed != 2 || page.Items[0].Pending != 1 {
		t.Fatalf("audit log: %+v, %v", page.Items, err)
	}

	// The retrying one dies at its next attempt: now every delivery is final.
	fixedToGone.Store(true)
	e.clock.Advance(time.Hour)
	eventually(t, 10*time.Second, "the retrying delivery to die", func() bool {
		return e.getReplay(rp, r1.ID).Pending == 0
	})
	got = e.getReplay(rp, r1.ID)
	if got.Delivered != 4 || got.Failed != 3 || got.Pending != 0 || !got.Settled() {
		t.Fatalf("settled: %+v", got)
	}

	w.Stop(context.Background())
	later := e.clock.Now()
	checkTakeOver(t, e, rp, r1.ID, subGone.ID, from, later)
	checkDryRunsApart(t, e, rp, from, later)
}

// checkTakeOver starts a later replay of subGone's dead deliveries, which takes them over from replay r1:
// they count there, and the first says so; no delivery is counted twice, none pending for good.
func checkTakeOver(t *testing.T, e *env, rp *replays.Replays, r1, subGone uuid.UUID, from, later time.Time) {
	r2, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{SubscriptionID: &subGone, CreatedFrom: &from, CreatedTo: &later},
		Spread: time.Second, Actor: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	e.runner(rp).RunAll(e.ctx)
	got, second := e.getReplay(rp, r1), e.getReplay(rp, r2.ID)
	if got.Delivered != 4 || got.Failed != 1 || got.Pending != 0 || got.TakenOver != 2 || !got.Settled() {
		t.Fatalf("first replay after the take-over: %+v", got)
	}
	if got.Delivered+got.Failed+got.Pending+got.TakenOver != got.Scheduled {
		t.Fatalf("first replay's outcome does not add up to %d scheduled: %+v", got.Scheduled, got)
	}
	if second.Scheduled != 2 || second.Pending != 2 || second.TakenOver != 0 || second.Settled() {
		t.Fatalf("second replay: %+v", second)
	}
}

// checkDryRunsApart checks that a dry run schedules nothing and has nothing pending (settled at once), and
// that dry runs and real replays are listed apart on request.
func checkDryRunsApart(t *testing.T, e *env, rp *replays.Replays, from, later time.Time) {
	dry, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &later}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.getReplay(rp, dry.ID); !d.Settled() || d.Pending != 0 {
		t.Fatalf("dry run: %+v", d)
	}
	// Dry runs and real replays are listed apart on request.
	real, yes := false, true
	if p, err := rp.List(e.ctx, replays.ReplayListFilter{DryRun: &real}); err != nil || len(p.Items) != 2 {
		t.Fatalf("real replays: %d, %v", len(p.Items), err)
	}
	if p, err := rp.List(e.ctx, replays.ReplayListFilter{DryRun: &yes}); err != nil || len(p.Items) != 1 || p.Items[0].ID != dry.ID {
		t.Fatalf("dry runs: %+v, %v", p.Items, err)
	}
}

// Recover previews (dry runs) are limited per subscription: five at once, then one every 12 s; the
// refused one is not recorded; a real recover and another subscription's previews are not limited.
func TestRecoverPreviewsAreRateLimited(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	other, _ := e.subscribe("http://127.0.0.1:1/b", subscriptions.Input{})
	since := e.clock.Now().Add(-time.Hour)
	for i := range replays.RecoverPreviewBurst {
		if _, err := rp.Recover(e.ctx, e.tenant, sub.ID, since, true, "t"); err != nil {
			t.Fatalf("preview %d: %v", i+1, err)
		}
	}
	_, err := rp.Recover(e.ctx, e.tenant, sub.ID, since, true, "t")
	fe := wantFault(t, err, fault.RateLimited)
	if fe.RetryAfter <= 0 || fe.RetryAfter > replays.RecoverPreviewEvery {
		t.Errorf("retry after %s", fe.RetryAfter)
	}
	if n := e.count("SELECT count(*) FROM replays WHERE subscription_id = $1", sub.ID); n != replays.RecoverPreviewBurst {
		t.Errorf("%d previews recorded, want %d", n, replays.RecoverPreviewBurst)
	}
	if _, err := rp.Recover(e.ctx, e.tenant, other.ID, since, true, "t"); err != nil {
		t.Errorf("another subscription's preview: %v", err)
	}
	if _, err := rp.Recover(e.ctx, e.tenant, sub.ID, since, false, "t"); err != nil {
		t.Errorf("a real recover: %v", err)
	}
	e.clock.Advance(replays.RecoverPreviewEvery)
	if _, err := rp.Recover(e.ctx, e.tenant, sub.ID, since, true, "t"); err != nil {
		t.Errorf("a preview once the bucket refilled: %v", err)
	}
}

// The runner paces its chunks with a token bucket (x/time/rate): at 5 chunks a second, a replay of 3,500
// rows (four chunks and the empty one that finishes it) goes at once for its first chunk, then waits
// 200 ms before each next one. The pacer runs on a fake clock: nothing sleeps.
func TestReplayRunnerPacesChunks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	now := e.clock.Now()
	e.insert(rows{sub: sub.ID, n: 3500, state: delivery.Failed, reason: delivery.ReasonPermanentStatus,
		createdAt: now.Add(-time.Hour), step: time.Millisecond})
	from, to := now.Add(-2*time.Hour), now
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}, Actor: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	run := replays.NewReplayRunner(rp, quietLog)
	run.SetChunkRate(5)
	fake := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	run.SetPaceClock(func() time.Time { return fake }, func(_ context.Context, d time.Duration) {
		waits = append(waits, d)
		fake = fake.Add(d)
	})
	run.Run(e.ctx, r.ID)
	if got := e.getReplay(rp, r.ID); got.State != replays.ReplayFinished || got.Scheduled != 3500 {
		t.Fatalf("replay: %+v", got)
	}
	if len(waits) != 4 {
		t.Fatalf("waited %d times (%v), want 4: before each chunk but the first", len(waits), waits)
	}
	for _, d := range waits {
		if d != 200*time.Millisecond {
			t.Errorf("waited %s between chunks, want 200ms (%v)", d, waits)
		}
	}
}
