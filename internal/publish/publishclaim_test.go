package publish_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
)

// A publish that finds its process's worker idle claims for it in the publish's own transaction: the
// answer already says in_flight (the row was never pending at any commit), and the receiver gets it with
// no NOTIFY or poll (the poll is a minute away; the listener is not even running a claim for it). A
// delivery to a paused subscription stays pending.
func TestPublishClaimsForTheIdleLocalWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	e.subscribe(rc.URL(), subscriptions.Input{})
	paused, _ := e.subscribe(rc.URL()+"/paused", subscriptions.Input{})
	if _, err := e.subs.Pause(e.ctx, e.tenant, paused.ID); err != nil {
		t.Fatal(err)
	}
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	e.pub.Local = w

	for i := range 3 { // the worker is idle again before each: its slots came back
		p := e.publish("order.created", `{}`)
		if len(p.Deliveries) != 2 {
			t.Fatalf("publish %d: %d deliveries, want 2", i, len(p.Deliveries))
		}
		for _, d := range p.Deliveries {
			want := "in_flight"
			if d.SubscriptionID == paused.ID.String() {
				want = "pending"
			}
			if d.State != want {
				t.Errorf("publish %d: delivery to %s answered %q, want %q", i, d.SubscriptionID, d.State, want)
			}
			var state string
			if err := e.pool.QueryRow(e.ctx, `SELECT state FROM webhook_deliveries WHERE id = $1`, d.ID).Scan(&state); err != nil {
				t.Fatal(err)
			}
			if want == "in_flight" && state == "pending" {
				t.Errorf("publish %d: the answer said in_flight, the row is pending", i)
			}
		}
		eventually(t, 5*time.Second, "the delivery claimed with the publish", func() bool { return rc.hits() == i+1 })
		eventually(t, 5*time.Second, "its attempt recorded", func() bool {
			var delivered int
			err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'`).Scan(&delivered)
			return err == nil && delivered == i+1
		})
		// The completer gives the attempt's slot back just after its outcome is stored: the worker is idle
		// again once a publish could reserve its slots (given straight back here).
		eventually(t, 5*time.Second, "the worker idle again", func() bool {
			c, ok := w.ReserveForPublish()
			if ok {
				w.StartClaimed(c, nil)
			}
			return ok
		})
	}
}

// A publish does not claim for a worker that has attempts in flight: its delivery is answered pending,
// and the worker, woken, claims it itself.
func TestPublishDoesNotClaimForABusyWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-release // the first attempt stays in flight
		}
		w.WriteHeader(http.StatusNoContent)
	})
	e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	defer close(release) // before Stop, which would wait for the held attempt
	e.pub.Local = w

	if first := e.publish("order.created", `{}`); first.Deliveries[0].State != "in_flight" {
		t.Fatalf("the idle worker's publish answered %q, want in_flight", first.Deliveries[0].State)
	}
	eventually(t, 5*time.Second, "the first attempt under way", func() bool { return rc.hits() == 1 })
	if second := e.publish("order.created", `{}`); second.Deliveries[0].State != "pending" {
		t.Errorf("with an attempt in flight the publish answered %q, want pending", second.Deliveries[0].State)
	}
	eventually(t, 5*time.Second, "the second delivery, claimed by the woken worker", func() bool { return rc.hits() == 2 })
}

// A worker that stops while a publish is claiming for it does not wait for that claim (Stop returns at
// once), and the rows the claim took go straight back to the queue, unattempted, with their slots freed.
func TestPublishClaimForAStoppedWorkerGivesTheRowsBack(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	reserved, ok := w.ReserveForPublish()
	if !ok {
		t.Fatal("an idle running worker refused a publish's claim")
	}
	if _, again := w.ReserveForPublish(); again {
		t.Error("a second publish claimed for the worker while the first was claiming")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for a publish's claim")
	}
	ids, err := e.pub.PublishAndClaim(e.ctx, w, reserved, publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 {
		t.Fatalf("the claim took %d deliveries, want the publish's 1", len(ids))
	}
	var state string
	var leased bool
	var attempts, inFlight int
	if err := e.pool.QueryRow(e.ctx, `
		SELECT d.state, d.lease_id IS NOT NULL, (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id),
		       (SELECT s.claimed - coalesce((SELECT f.finished FROM subscription_finished f WHERE f.subscription_id = s.id), 0)
		        FROM subscriptions s WHERE s.id = $2)
		FROM webhook_deliveries d WHERE d.id = $1`, ids[0], sub.ID).Scan(&state, &leased, &attempts, &inFlight); err != nil {
		t.Fatal(err)
	}
	if state != "pending" || leased || attempts != 0 || inFlight != 0 {
		t.Errorf("after the stopped worker's claim: state %s, leased %v, %d attempts, %d slots of the subscription taken; want pending, unleased, none, none",
			state, leased, attempts, inFlight)
	}
	if rc.hits() != 0 {
		t.Errorf("a stopped worker sent %d requests", rc.hits())
	}
}

// A publish's claim for the idle local worker is the worker's own claim, with every guard: a subscription
// at its concurrency cap, held by another process's worker, gets nothing claimed with the publish (the
// answer says pending), and the delivery goes out once that worker's attempt has finished.
func TestPublishClaimKeepsTheEndpointCap(t *testing.T) {
	t.Parallel()
	e := setup(t)
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-release // the other process's attempt holds the subscription's only slot
		}
		w.WriteHeader(http.StatusNoContent)
	})
	e.subscribe(rc.URL(), subscriptions.Input{})
	o := delivery.WorkerOptions{Now: time.Now, PollInterval: 50 * time.Millisecond, EndpointConcurrency: 1}
	other := e.worker(o, nil) // another process's worker
	if err := other.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Stop(context.Background())
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // before the workers stop, which would wait for the held attempt

	e.publish("order.created", `{}`) // e.pub has no local worker yet: the other worker claims it
	eventually(t, 5*time.Second, "the other worker's attempt under way", func() bool { return rc.hits() == 1 })
	local := e.worker(o, nil) // started only now, so the first delivery was surely the other's
	if err := local.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer local.Stop(context.Background())
	e.pub.Local = local
	if p := e.publish("order.created", `{}`); p.Deliveries[0].State != "pending" {
		t.Errorf("a publish to a subscription at its cap answered %q, want pending", p.Deliveries[0].State)
	}
	var inFlight int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM webhook_deliveries WHERE state = 'in_flight'`).Scan(&inFlight); err != nil {
		t.Fatal(err)
	}
	if inFlight != 1 {
		t.Errorf("%d deliveries in flight to a subscription capped at 1", inFlight)
	}
	releaseOnce()
	eventually(t, 5*time.Second, "the second delivery, once the slot was free", func() bool { return rc.hits() == 2 })
}

// A publish that reuses an Idempotency-Key gets the first answer as it was sent, byte for byte: "in_flight"
// for the delivery claimed in the first publish's own transaction, not an answer rebuilt from rows that
// says "pending".
func TestIdempotentPublishReturnsTheAnswerAsSent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	e.subscribe(rc.URL(), subscriptions.Input{})
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	e.pub.Local = w

	in := publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(`{"n":1}`), IdempotencyKey: "order-1"}
	first, err := e.pub.Publish(e.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Deliveries) != 1 || first.Deliveries[0].State != "in_flight" {
		t.Fatalf("first answer %+v, want its one delivery in_flight (claimed with the publish)", first)
	}
	eventually(t, 5*time.Second, "the delivery sent", func() bool { return rc.hits() == 1 })
	again, err := e.pub.Publish(e.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Errorf("the same Idempotency-Key answered\n%s\nafter\n%s", b, a)
	}
}

// A publish that claims nothing for the idle worker (its one delivery is to a paused endpoint) gives its
// reserved slots back so that the fetcher sees them: a fetcher that woke meanwhile and found every slot
// reserved waits for one to be freed, and once waited for good (HOOKLINE_WORKERS at or below the claim
// batch), so the delivery stayed pending after the endpoint was resumed.
func TestAPublishThatClaimedNothingFreesTheFetcher(t *testing.T) {
	// Not parallel: fetcherWaitsForSlot reads every goroutine's stack, another test's fetcher included.
	e := setup(t)
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	if _, err := e.subs.Pause(e.ctx, e.tenant, sub.ID); err != nil {
		t.Fatal(err)
	}
	w := e.worker(delivery.WorkerOptions{Now: time.Now, PollInterval: time.Minute, Concurrency: 4}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	reserved, ok := w.ReserveForPublish()
	if !ok {
		t.Fatal("an idle running worker refused a publish's claim")
	}
	w.Wake() // the fetcher leaves its idle wait (if it was in it) and finds all four slots reserved
	eventually(t, 5*time.Second, "the fetcher to wait for a slot", fetcherWaitsForSlot)
	ids, err := e.pub.PublishAndClaim(e.ctx, w, reserved, publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 0 {
		t.Fatalf("the claim took %d deliveries of a paused endpoint", len(ids))
	}
	if _, err := e.subs.Resume(e.ctx, e.tenant, sub.ID); err != nil {
		t.Fatal(err)
	}
	w.Wake()
	eventually(t, 5*time.Second, "the delivery sent after the resume", func() bool { return rc.hits() == 1 })
}

// fetcherWaitsForSlot reports whether a worker's fetcher is blocked in its own select (not idle's): with
// every slot taken, that is the wait for a freed one. Read from the goroutines' stacks, since nothing else
// in the worker says so.
func fetcherWaitsForSlot() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 4 || !strings.Contains(lines[0], "[select") {
			continue
		}
		// lines[1:3] are runtime.selectgo and its file; the next frame is the one that selects.
		for i := 1; i+1 < len(lines); i += 2 {
			if strings.HasPrefix(lines[i], "runtime.") {
				continue
			}
			if strings.Contains(lines[i], "delivery.(*Worker).fetch(") {
				return true
			}
			break
		}
	}
	return false
}
