package delivery_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
)

// concurrencyMeter is a receiver that counts requests in progress and remembers the most at once.
type concurrencyMeter struct {
	now, most atomic.Int64
	hits      atomic.Int64
}

func (m *concurrencyMeter) enter() {
	n := m.now.Add(1)
	m.hits.Add(1)
	for {
		old := m.most.Load()
		if n <= old || m.most.CompareAndSwap(old, n) {
			return
		}
	}
}

func (m *concurrencyMeter) leave() { m.now.Add(-1) }

// One tenant's endpoint hangs until the attempt timeout with a backlog behind it, and another of its
// endpoints has a large backlog; two workers on separate pools (two processes, as far as the database can
// tell) share 16 slots. The other tenant's fresh events must still arrive within a few seconds, and neither
// busy endpoint may ever have more than HOOKLINE_ENDPOINT_CONCURRENCY attempts in flight across both
// workers. Before fair share, the backlog was claimed first-due-first-served and held every slot.
func TestFairShareAcrossTenantsAndProcesses(t *testing.T) {
	// Not parallel: it measures a latency, which wants the machine to itself.
	if testing.Short() {
		t.Skip("takes about 10 s")
	}
	e := setup(t)
	const endpointCap = 4
	rc := startFairShareReceivers(t)
	hangSub, _ := e.subscribe(rc.hangURL, subscriptions.Input{})
	busySub, _ := e.subscribe(rc.busyURL, subscriptions.Input{})
	event := e.publish("backlog.seed", `{}`).ID
	insertDeliveries(t, e, hangSub.ID, event, "pending", 2_000, e.clock.Now())
	insertDeliveries(t, e, busySub.ID, event, "pending", 20_000, e.clock.Now())

	other, err := tenants.NewService(e.pool, "").CreateTenant(e.ctx, "quiet tenant")
	if err != nil {
		t.Fatal(err)
	}
	quietURL := rc.quietURL
	if _, _, err := e.subs.Create(e.ctx, other.ID, subscriptions.Input{URL: &quietURL}); err != nil {
		t.Fatal(err)
	}

	workers := make([]*delivery.Worker, 2)
	for i := range workers {
		workers[i] = delivery.NewWorker(connect(t, 8),
			delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 2 * time.Second}), e.policy,
			delivery.WorkerOptions{Concurrency: 8, EndpointConcurrency: endpointCap, AttemptTimeout: 2 * time.Second,
				Now: time.Now, Logger: quietLog})
		if err := workers[i].Start(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, w := range workers {
			w.Stop(context.Background())
		}
	}()

	// The backlogs are claimed first: the hanging endpoint holds its cap and the busy one is being sent to.
	eventually(t, 10*time.Second, "the backlogs claimed", func() bool {
		return rc.hanging.now.Load() >= endpointCap && rc.busy.hits.Load() > 0
	})
	waits := publishQuietly(t, e, other.ID, rc)
	p50, worst := waits[len(waits)/2], waits[len(waits)-1]
	t.Logf("quiet tenant's latency behind a hanging endpoint and a 20,000-row backlog: p50 %s, max %s; "+
		"most in flight: hanging %d, busy %d (cap %d); busy endpoint got %d requests",
		p50, worst, rc.hanging.most.Load(), rc.busy.most.Load(), endpointCap, rc.busy.hits.Load())
	if worst > 2*time.Second {
		t.Errorf("a quiet tenant's event waited %s behind other tenants' endpoints; want under 2 s", worst)
	}
	if rc.hanging.most.Load() > endpointCap || rc.busy.most.Load() > endpointCap {
		t.Errorf("in flight at once: hanging %d, busy %d; the cap across both workers is %d",
			rc.hanging.most.Load(), rc.busy.most.Load(), endpointCap)
	}
	if rc.busy.hits.Load() < 100 {
		t.Errorf("the busy endpoint got only %d requests: its backlog should drain under its cap", rc.busy.hits.Load())
	}
}

// fairShareReceivers are the fair-share test's endpoints: one that hangs until the sender gives up, one
// that answers after 20 ms, and the quiet tenant's, which notes when each event arrived.
type fairShareReceivers struct {
	hanging, busy              concurrencyMeter
	hangURL, busyURL, quietURL string
	mu                         sync.Mutex
	arrived                    map[string]time.Time
}

func startFairShareReceivers(t *testing.T) *fairShareReceivers {
	rc := &fairShareReceivers{arrived: map[string]time.Time{}}
	hangSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.hanging.enter()
		defer rc.hanging.leave()
		// The body must be read: only then does the server watch the connection and cancel the context
		// when the sender gives up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // until the sender's timeout cuts it off
	}))
	t.Cleanup(hangSrv.Close)
	busySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.busy.enter()
		defer rc.busy.leave()
		select { // a slow endpoint: 20 ms an answer
		case <-time.After(20 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(busySrv.Close)
	quietSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.arrived[r.Header.Get("webhook-id")] = time.Now()
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(quietSrv.Close)
	rc.hangURL, rc.busyURL, rc.quietURL = hangSrv.URL+"/hook", busySrv.URL+"/hook", quietSrv.URL+"/hook"
	return rc
}

// publishQuietly publishes an event of tenant every 200 ms, 20 in all, waits for all of them to arrive
// and returns how long each took, sorted.
func publishQuietly(t *testing.T, e *env, tenant uuid.UUID, rc *fairShareReceivers) []time.Duration {
	pub := publish.NewPublisher(e.pool, e.policy, time.Now)
	sent := map[string]time.Time{}
	every := time.NewTicker(200 * time.Millisecond)
	defer every.Stop()
	for range 20 {
		p, err := pub.Publish(e.ctx, publish.PublishInput{TenantID: tenant, EventType: "order.created", Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		sent[p.ID] = time.Now()
		<-every.C
	}
	eventually(t, 10*time.Second, "every quiet-tenant event delivered", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.arrived) == len(sent)
	})
	var waits []time.Duration
	rc.mu.Lock()
	for id, at := range sent {
		waits = append(waits, rc.arrived[id].Sub(at))
	}
	rc.mu.Unlock()
	slices.Sort(waits)
	return waits
}

// The counters that carry the cap (claimed - finished) equal the rows actually in flight once the workers
// stop, and after a rescue: every statement that moves a row into or out of in_flight keeps them.
func TestInFlightCounterMatchesRows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(200, 503, 410, 200))
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	for range 30 {
		e.publishOne(`{}`)
	}
	w := e.worker(delivery.WorkerOptions{EndpointConcurrency: 5}, nil)
	for range 3 {
		if n := e.runOnce(w); n > 5 {
			t.Fatalf("one claim took %d rows of one subscription; the cap is 5", n)
		}
	}
	check := func(when string) {
		t.Helper()
		counter := e.count(inFlightCounter, sub.ID)
		rows := e.count("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'in_flight'", sub.ID)
		if counter != rows {
			t.Fatalf("%s: in_flight counter %d, rows in flight %d", when, counter, rows)
		}
	}
	check("after three claims and their outcomes")
	claimed, _, err := w.Claim(e.ctx, 10)
	if err != nil || len(claimed) == 0 {
		// The 410 above disabled the subscription: resume it, then claim and abandon the rows.
		if _, err := e.subs.Resume(e.ctx, e.tenant, sub.ID); err != nil {
			t.Fatal(err)
		}
		if claimed, _, err = w.Claim(e.ctx, 10); err != nil || len(claimed) == 0 {
			t.Fatalf("claim after resume: %d rows, %v", len(claimed), err)
		}
	}
	check("with claimed rows abandoned")
	e.clock.Advance(time.Hour)
	if _, err := w.RescueExpired(e.ctx); err != nil {
		t.Fatal(err)
	}
	check("after the rescue")
	if n := e.count(inFlightCounter, sub.ID); n != 0 {
		t.Fatalf("in_flight %d after everything was rescued", n)
	}
}

const inFlightCounter = `SELECT s.claimed - coalesce(f.finished, 0) FROM subscriptions s
	LEFT JOIN subscription_finished f ON f.subscription_id = s.id WHERE s.id = $1`

// A completion frees its slots without the subscription row, and leaves the row alone when its health does
// not change (only successes on a healthy subscription, last success recorded under a second ago), so a
// busy endpoint's completions never queue behind the claim holding that row. A failure still waits for the
// row and records the failure.
func TestCompletionOfHealthySuccessesDoesNotLockTheSubscription(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sub, _ := e.subscribe("http://127.0.0.1:1/x", subscriptions.Input{})
	for range 3 {
		e.publishOne(`{}`)
	}
	w := e.worker(delivery.WorkerOptions{}, nil)
	first, lease, err := w.Claim(e.ctx, 1)
	if err != nil || len(first) != 1 {
		t.Fatalf("claim: %d rows, %v", len(first), err)
	}
	if err := w.RecordStatus(e.ctx, first, lease, 200); err != nil { // sets last_success_at
		t.Fatal(err)
	}
	rows, lease, err := w.Claim(e.ctx, 2)
	if err != nil || len(rows) != 2 {
		t.Fatalf("claim: %d rows, %v", len(rows), err)
	}

	// Another transaction (a claim, say) holds the subscription row.
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	if _, err := tx.Exec(e.ctx, "SELECT 1 FROM subscriptions WHERE id = $1 FOR NO KEY UPDATE", sub.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	if err := w.RecordStatus(ctx, rows[:1], lease, 200); err != nil {
		t.Fatalf("recording a success on a healthy subscription waited for its row: %v", err)
	}
	if n := e.count(inFlightCounter, sub.ID); n != 1 {
		t.Fatalf("in flight after one of two finished: %d", n)
	}

	// A failure changes the health, so it waits for the row, and records once the row is free.
	done := make(chan error, 1)
	go func() { done <- w.RecordStatus(e.ctx, rows[1:], lease, 503) }()
	select {
	case err := <-done:
		t.Fatalf("recording a failure did not wait for the subscription row: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT consecutive_failures FROM subscriptions WHERE id = $1", sub.ID); n != 1 {
		t.Fatalf("consecutive failures %d, want 1", n)
	}
	if n := e.count(inFlightCounter, sub.ID); n != 0 {
		t.Fatalf("in flight after both finished: %d", n)
	}
}
