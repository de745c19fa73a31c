package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
)

// orderedEvent is the payload the ordering tests publish: the key and the event's place in it (1, 2, …).
type orderedEvent struct {
	Key int `json:"key"`
	N   int `json:"n"`
}

// orderReceiver is an endpoint that checks what ordered delivery promises, request by request: never two
// requests of one key at once, and an event of a key only once every earlier one of the key was
// delivered or will never be (its answer was permanent). fail decides each answer.
type orderReceiver struct {
	t    *testing.T
	fail func(ev orderedEvent, try int) int // the status to answer (200 to accept)
	// blocks: the endpoint's on_dead is block, so a dead event does not let the next of its key go
	blocks bool

	mu         sync.Mutex
	inFlight   map[int]bool
	tries      map[orderedEvent]int
	delivered  map[int][]int // per key, the events accepted, in arrival order
	dead       map[orderedEvent]bool
	violations []string
	requests   atomic.Int64
}

func newOrderReceiver(t *testing.T, fail func(ev orderedEvent, try int) int) (*orderReceiver, string) {
	rc := &orderReceiver{t: t, fail: fail, inFlight: map[int]bool{}, tries: map[orderedEvent]int{},
		delivered: map[int][]int{}, dead: map[orderedEvent]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	return rc, srv.URL + "/ordered"
}

func (rc *orderReceiver) violate(format string, args ...any) {
	if len(rc.violations) < 20 {
		rc.violations = append(rc.violations, fmt.Sprintf(format, args...))
	}
}

func (rc *orderReceiver) serve(w http.ResponseWriter, r *http.Request) {
	rc.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		Data orderedEvent `json:"data"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	ev := msg.Data
	rc.mu.Lock()
	if rc.inFlight[ev.Key] {
		rc.violate("key %d: event %d arrived while another of the key was in flight", ev.Key, ev.N)
	}
	rc.inFlight[ev.Key] = true
	done := map[int]bool{}
	for _, n := range rc.delivered[ev.Key] {
		done[n] = true
	}
	for m := 1; m < ev.N; m++ {
		if !done[m] && (rc.blocks || !rc.dead[orderedEvent{ev.Key, m}]) {
			rc.violate("key %d: event %d arrived before event %d was delivered or dead (blocks: %v)", ev.Key, ev.N, m, rc.blocks)
			break
		}
	}
	if d := rc.delivered[ev.Key]; len(d) > 0 && d[len(d)-1] >= ev.N {
		rc.violate("key %d: event %d arrived after event %d was delivered", ev.Key, ev.N, d[len(d)-1])
	}
	rc.tries[ev]++
	try := rc.tries[ev]
	rc.mu.Unlock()

	status := rc.fail(ev, try)

	rc.mu.Lock()
	switch {
	case status < 300:
		rc.delivered[ev.Key] = append(rc.delivered[ev.Key], ev.N)
	case status >= 400 && status < 500 && status != 408 && status != 425 && status != 429:
		rc.dead[ev] = true // a permanent answer: the delivery dies now
	}
	delete(rc.inFlight, ev.Key)
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// TestOrderedDeliveryAcrossProcesses publishes 1,000 keys × 20 events while three workers (each with its
// own pool, as three processes) deliver them to two ordered endpoints, the receivers failing some events for
// a while (retried) and some for good (dead):
//   - every key's events arrive one at a time in publish order;
//   - on the endpoint that skips dead deliveries (every key), the dead ones are left out and listed as dead;
//   - on the endpoint that blocks (every fifth key), nothing after a key's dead delivery arrives, the key is
//     listed as blocked, and once the dead ones are resent and delivered the rest follow in order.
func TestOrderedDeliveryAcrossProcesses(t *testing.T) {
	keys, perKey := 1000, 20
	if testing.Short() {
		keys = 100
	}
	e := setup(t)
	policy := delivery.RetryPolicy{Base: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxAttempts: 10, Window: time.Hour}
	permanent := func(ev orderedEvent) bool { return (ev.Key*31+ev.N)%50 == 0 }
	transient := func(ev orderedEvent) bool { return (ev.Key*7+ev.N)%10 == 0 }
	var accept atomic.Bool // once set, the blocking endpoint takes what it refused
	answer := func(blocking bool) func(ev orderedEvent, try int) int {
		return func(ev orderedEvent, try int) int {
			switch {
			case permanent(ev) && !(blocking && accept.Load()):
				return http.StatusUnprocessableEntity
			case transient(ev) && try == 1:
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		}
	}
	skipRC, skipURL := newOrderReceiver(t, answer(false))
	blockRC, blockURL := newOrderReceiver(t, answer(true))
	blockRC.blocks = true
	ordered, block := true, subscriptions.OnDeadBlock
	skipSub, _ := e.subscribe(skipURL, subscriptions.Input{Ordered: &ordered})
	blockSub, _ := e.subscribe(blockURL, subscriptions.Input{Ordered: &ordered, OnDead: &block, EventTypes: &[]string{"order.audited"}})
	blocking := func(k int) bool { return k%5 == 0 } // these keys' events go to both endpoints
	eventType := func(k int) string {
		if blocking(k) {
			return "order.audited"
		}
		return "order.updated"
	}

	workers := make([]*delivery.Worker, 3)
	publishers := make([]*publish.Publisher, 3)
	for i := range workers {
		pool := connect(t, 10)
		workers[i] = delivery.NewWorker(pool,
			delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 5 * time.Second}), policy,
			delivery.WorkerOptions{Concurrency: 64, EndpointConcurrency: 48, AttemptTimeout: 5 * time.Second,
				Now: time.Now, Logger: failOnErrorLog(t), PollInterval: 100 * time.Millisecond})
		if err := workers[i].Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		publishers[i] = publish.NewPublisher(pool, policy, time.Now)
		publishers[i].Local = workers[i]
	}
	defer func() {
		for _, w := range workers {
			w.Stop(context.Background())
		}
	}()

	// 16 publishers at once, each publishing its keys' events in order, key after key interleaved: the
	// publishes of one key come one after the other (publish order is the order they were answered).
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			pub := publishers[g%3]
			for n := 1; n <= perKey; n++ {
				for k := g; k < keys; k += 16 {
					payload, _ := json.Marshal(orderedEvent{Key: k, N: n})
					if _, err := pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: eventType(k),
						Payload: payload, OrderingKey: fmt.Sprintf("order-%d", k)}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("publish: %v", err)
	}
	published := time.Since(start)

	// Everything that can go has gone: the skipping endpoint has nothing left, the blocking one only what
	// waits behind a dead delivery (every key it holds is held by a dead head; a key whose head was just
	// delivered is being advanced beside the completion, and its next delivery is neither due nor in flight
	// for that moment).
	eventually(t, 5*time.Minute, "every delivery finished or waiting behind a dead one", func() bool {
		return e.count(`SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state IN ('pending', 'in_flight')`, skipSub.ID) == 0 &&
			e.count(`SELECT count(*) FROM ordering_keys k LEFT JOIN webhook_deliveries d ON d.id = k.head_id
				WHERE k.subscription_id = $1 AND k.head_id IS NOT NULL AND (d.id IS NULL OR d.state NOT IN ('failed', 'expired'))`, blockSub.ID) == 0
	})
	t.Logf("%d keys × %d events: published in %s, all finished after %s; %d + %d requests", keys, perKey, published,
		time.Since(start), skipRC.requests.Load(), blockRC.requests.Load())

	check := func(rc *orderReceiver, name string, want func(k int) []int) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, v := range rc.violations {
			t.Errorf("%s: %s", name, v)
		}
		for k := range keys {
			if got, w := rc.delivered[k], want(k); !slices.Equal(got, w) {
				t.Errorf("%s: key %d delivered %v, want %v", name, k, got, w)
			}
		}
	}
	wantDead, blockedKeys := 0, 0
	check(skipRC, "skip", func(k int) []int {
		var want []int
		for n := 1; n <= perKey; n++ {
			if permanent(orderedEvent{k, n}) {
				wantDead++
			} else {
				want = append(want, n)
			}
		}
		return want
	})
	check(blockRC, "block", func(k int) []int {
		var want []int
		if !blocking(k) {
			return nil
		}
		for n := 1; n <= perKey; n++ {
			if permanent(orderedEvent{k, n}) {
				blockedKeys++
				break
			}
			want = append(want, n)
		}
		return want
	})
	// The skipping endpoint's dead deliveries are listed as the dead-letter queue lists them.
	page, err := e.svc.List(e.ctx, e.tenant, deliveries.Filter{SubscriptionID: &skipSub.ID, States: []string{"failed", "expired"},
		Limit: 100, CountUpTo: 1000, WithTotal: true})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total == nil || int(*page.Total) != wantDead {
		t.Errorf("dead-letter list of the skipping endpoint counts %d, want %d", *page.Total, wantDead)
	}
	// The blocking endpoint's keys are listed as blocked; each dead head is resent, and then taken.
	var heads []uuid.UUID
	for cursor := ""; ; {
		page, err := e.svc.BlockedKeys(e.ctx, e.tenant, blockSub.ID, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Items {
			heads = append(heads, b.HeadDeliveryID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(heads) != blockedKeys {
		t.Errorf("%d keys listed as blocked, want %d", len(heads), blockedKeys)
	}
	accept.Store(true)
	for _, h := range heads {
		if _, err := e.svc.Retry(e.ctx, e.tenant, h, deliveries.Actor{Admin: true}); err != nil {
			t.Fatalf("resend %s: %v", h, err)
		}
	}
	eventually(t, 5*time.Minute, "the blocked keys' deliveries delivered after the resends", func() bool {
		return e.count(`SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state <> 'delivered'`, blockSub.ID) == 0
	})
	check(blockRC, "block, after the resends", func(k int) []int {
		if !blocking(k) {
			return nil
		}
		var want []int
		for n := 1; n <= perKey; n++ {
			want = append(want, n)
		}
		return want
	})
	// The keys are let go right after their last delivery (by the workers' advancers, beside the completion).
	eventually(t, 10*time.Second, "every key let go", func() bool {
		return e.count(`SELECT count(*) FROM ordering_keys WHERE head_id IS NOT NULL`) == 0
	})
}

// orderedEnv is an ordered subscription on the env's clock, driven a claim at a time (RunOnce).
type orderedEnv struct {
	*env
	rc  *orderReceiver
	sub subscriptions.Subscription
	w   *delivery.Worker
}

func newOrderedEnv(t *testing.T, onDead string, fail func(ev orderedEvent, try int) int) *orderedEnv {
	e := setup(t)
	rc, url := newOrderReceiver(t, fail)
	ordered := true
	sub, _ := e.subscribe(url, subscriptions.Input{Ordered: &ordered, OnDead: &onDead})
	return &orderedEnv{env: e, rc: rc, sub: sub, w: e.worker(delivery.WorkerOptions{EndpointConcurrency: 100}, nil)}
}

// publishKey publishes event n of key k and returns its delivery.
func (o *orderedEnv) publishKey(k, n int) uuid.UUID {
	o.t.Helper()
	payload, _ := json.Marshal(orderedEvent{Key: k, N: n})
	p, err := o.pub.Publish(o.ctx, publish.PublishInput{TenantID: o.tenant, EventType: "order.updated", Payload: payload,
		OrderingKey: fmt.Sprintf("k%d", k)})
	if err != nil || len(p.Deliveries) != 1 {
		o.t.Fatalf("publish: %v (%d deliveries)", err, len(p.Deliveries))
	}
	return uuid.MustParse(p.Deliveries[0].ID)
}

// drain claims and sends until nothing is due.
func (o *orderedEnv) drain() {
	o.t.Helper()
	for range 100 {
		if o.runOnce(o.w) == 0 {
			return
		}
	}
	o.t.Fatal("still claiming after 100 rounds")
}

func (o *orderedEnv) delivered(k int) []int {
	o.rc.mu.Lock()
	defer o.rc.mu.Unlock()
	return slices.Clone(o.rc.delivered[k])
}

// TestOrderedClaimTakesOneHeadPerKey: a claim takes each key's first delivery only, deliveries without a
// key all at once, and the next of a key once the one before it was delivered.
func TestOrderedClaimTakesOneHeadPerKey(t *testing.T) {
	t.Parallel()
	o := newOrderedEnv(t, subscriptions.OnDeadSkip, func(orderedEvent, int) int { return 200 })
	for n := 1; n <= 3; n++ {
		o.publishKey(1, n)
		o.publishKey(2, n)
	}
	for range 2 {
		o.publish("order.updated", `{"key": 99, "n": 1}`) // no ordering key
	}
	rows, lease, err := o.w.Claim(o.ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("the first claim took %d deliveries, want 4 (one head per key and both without a key)", len(rows))
	}
	// Nothing more is due until they are done, whatever the clock says.
	o.clock.Advance(time.Hour)
	if more, _, err := o.w.Claim(o.ctx, 100); err != nil || len(more) != 0 {
		t.Fatalf("a second claim took %d (%v); the keys' next ones wait for their heads", len(more), err)
	}
	if err := o.w.RecordStatus(o.ctx, rows, lease, 200); err != nil {
		t.Fatal(err)
	}
	next, _, err := o.w.Claim(o.ctx, 100)
	if err != nil || len(next) != 2 {
		t.Fatalf("after the heads were delivered a claim took %d (%v), want the two keys' second events", len(next), err)
	}
	for _, r := range next {
		var ev struct {
			Data orderedEvent `json:"data"`
		}
		_ = json.Unmarshal(r.Body, &ev)
		if ev.Data.N != 2 {
			t.Errorf("released event %d of key %d, want event 2", ev.Data.N, ev.Data.Key)
		}
	}
}

// TestOrderedRetryKeepsTheKeyWaiting: a head waiting for a retry holds its key; the next goes after it.
func TestOrderedRetryKeepsTheKeyWaiting(t *testing.T) {
	t.Parallel()
	o := newOrderedEnv(t, subscriptions.OnDeadSkip, func(ev orderedEvent, try int) int {
		if ev.N == 1 && try == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	o.publishKey(1, 1)
	second := o.publishKey(1, 2)
	o.drain() // event 1 fails once and waits for its retry
	if got := o.delivered(1); len(got) != 0 {
		t.Fatalf("delivered %v while event 1 waits for its retry", got)
	}
	d, err := o.svc.Get(o.ctx, o.tenant, second)
	if err != nil {
		t.Fatal(err)
	}
	if d.WaitingFor == nil || d.NextAttemptAt != nil || !d.Parked {
		t.Errorf("event 2 waiting_for %v, next_attempt_at %v: want the head's id and no next attempt", d.WaitingFor, d.NextAttemptAt)
	}
	if _, err := o.svc.RetryNow(o.ctx, o.tenant, second, deliveries.Actor{}); err == nil {
		t.Error("retry now of a delivery waiting behind its key was accepted")
	}
	o.clock.Advance(time.Minute)
	o.drain()
	if got := o.delivered(1); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("delivered %v, want [1 2]", got)
	}
}

// TestOrderedBlockWaitsForResendOrSkip: with on_dead block a dead delivery holds its key; nothing after it
// goes until it is resent and delivered, or discarded (Skip). The blocked keys are listed.
func TestOrderedBlockWaitsForResendOrSkip(t *testing.T) {
	t.Parallel()
	var accept atomic.Bool
	o := newOrderedEnv(t, subscriptions.OnDeadBlock, func(ev orderedEvent, try int) int {
		if ev.N == 2 && !accept.Load() {
			return http.StatusUnprocessableEntity // permanent: dead at once
		}
		return http.StatusOK
	})
	var heads [3]uuid.UUID
	for k := 1; k <= 2; k++ {
		for n := 1; n <= 4; n++ {
			id := o.publishKey(k, n)
			if n == 2 {
				heads[k] = id
			}
		}
	}
	o.drain()
	for k := 1; k <= 2; k++ {
		if got := o.delivered(k); !slices.Equal(got, []int{1}) {
			t.Fatalf("key %d delivered %v; want [1]: event 2 died and blocks the rest", k, got)
		}
	}
	page, err := o.svc.BlockedKeys(o.ctx, o.tenant, o.sub.ID, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].OrderingKey != "k1" || page.Items[0].HeadDeliveryID != heads[1] ||
		page.Items[0].Waiting != 2 || page.NextCursor == "" {
		t.Fatalf("first page of blocked keys %+v, want k1 held by %s with 2 waiting, and a next page", page, heads[1])
	}
	page, err = o.svc.BlockedKeys(o.ctx, o.tenant, o.sub.ID, page.NextCursor, 1)
	if err != nil || len(page.Items) != 1 || page.Items[0].OrderingKey != "k2" || page.NextCursor != "" {
		t.Fatalf("second page %+v (%v), want k2 and no more", page, err)
	}
	// Time passing changes nothing: the key waits for a person.
	o.clock.Advance(48 * time.Hour)
	o.drain()
	if got := o.delivered(1); !slices.Equal(got, []int{1}) {
		t.Fatalf("key 1 delivered %v after two days, want [1]", got)
	}
	// Key 1: the dead delivery is resent and delivered, then the rest follow in order.
	accept.Store(true)
	if _, err := o.svc.Retry(o.ctx, o.tenant, heads[1], deliveries.Actor{}); err != nil {
		t.Fatal(err)
	}
	o.drain()
	if got := o.delivered(1); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("key 1 delivered %v after the resend, want [1 2 3 4]", got)
	}
	// Key 2: Skip discards the dead one, the rest follow without it.
	accept.Store(false)
	if err := o.svc.Discard(o.ctx, o.tenant, heads[2]); err != nil {
		t.Fatal(err)
	}
	o.drain()
	if got := o.delivered(2); !slices.Equal(got, []int{1, 3, 4}) {
		t.Errorf("key 2 delivered %v after Skip, want [1 3 4]", got)
	}
	if page, err := o.svc.BlockedKeys(o.ctx, o.tenant, o.sub.ID, "", 50); err != nil || len(page.Items) != 0 {
		t.Errorf("blocked keys after resend and skip: %+v (%v), want none", page.Items, err)
	}
}

// TestOrderedSkipLetsTheNextGo: with on_dead skip a dead delivery lets the key's next one go at once.
func TestOrderedSkipLetsTheNextGo(t *testing.T) {
	t.Parallel()
	o := newOrderedEnv(t, subscriptions.OnDeadSkip, func(ev orderedEvent, try int) int {
		if ev.N == 2 {
			return http.StatusUnprocessableEntity // permanent: dead at once
		}
		return http.StatusOK
	})
	for n := 1; n <= 3; n++ {
		o.publishKey(1, n)
	}
	o.drain()
	if got := o.delivered(1); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("delivered %v, want [1 3]: event 2 died and was skipped", got)
	}
}

// TestUnorderingReleasesEverything: a subscription no longer ordered sends what waited behind heads.
func TestUnorderingReleasesEverything(t *testing.T) {
	t.Parallel()
	o := newOrderedEnv(t, subscriptions.OnDeadBlock, func(ev orderedEvent, try int) int {
		if ev.N == 1 {
			return http.StatusUnprocessableEntity
		}
		return http.StatusOK
	})
	for n := 1; n <= 3; n++ {
		o.publishKey(1, n)
	}
	o.drain()
	if got := o.delivered(1); len(got) != 0 {
		t.Fatalf("delivered %v behind a dead head", got)
	}
	off := false
	if _, err := o.subs.Update(o.ctx, o.tenant, o.sub.ID, subscriptions.Input{Ordered: &off}); err != nil {
		t.Fatal(err)
	}
	o.drain()
	if got := o.delivered(1); len(got) != 2 {
		t.Errorf("delivered %v after ordering was turned off, want events 2 and 3", got)
	}
	if n := o.count(`SELECT count(*) FROM ordering_keys WHERE subscription_id = $1`, o.sub.ID); n != 0 {
		t.Errorf("%d keys kept after ordering was turned off", n)
	}
}

// TestStuckKeyIsAdvancedByTheLeader: a key whose head finished without the key being advanced (its
// worker stopped in between) goes on when the maintenance leader looks.
func TestStuckKeyIsAdvancedByTheLeader(t *testing.T) {
	t.Parallel()
	o := newOrderedEnv(t, subscriptions.OnDeadSkip, func(orderedEvent, int) int { return 200 })
	first := o.publishKey(1, 1)
	second := o.publishKey(1, 2)
	// The head finishes as if its worker stopped before advancing the key.
	if _, err := o.pool.Exec(o.ctx, `UPDATE webhook_deliveries SET state = 'delivered', last_attempt_at = now() WHERE id = $1`, first); err != nil {
		t.Fatal(err)
	}
	if n, err := o.w.AdvanceStuckKeys(o.ctx); err != nil || n != 0 {
		t.Fatalf("advanced %d (%v) at once; the leader leaves a key to its worker for a moment", n, err)
	}
	o.clock.Advance(time.Minute)
	if n, err := o.w.AdvanceStuckKeys(o.ctx); err != nil || n != 1 {
		t.Fatalf("advanced %d (%v), want 1", n, err)
	}
	if d := o.delivery(second); delivery.IsParked(d.NextAttemptAt) {
		t.Error("the key's next delivery is still parked")
	}
}

// TestIdleKeysAreForgotten: a key nobody holds is forgotten an hour after its last use, and starts afresh.
func TestIdleKeysAreForgotten(t *testing.T) {
	t.Parallel()
	o := newOrderedEnv(t, subscriptions.OnDeadSkip, func(orderedEvent, int) int { return 200 })
	o.publishKey(1, 1)
	o.publishKey(2, 1)
	o.publishKey(2, 2)
	o.drain()
	o.publishKey(3, 1) // held: its head waits
	if n, err := o.w.PruneIdleKeys(o.ctx); err != nil || n != 0 {
		t.Fatalf("pruned %d (%v) at once; idle keys are kept an hour", n, err)
	}
	o.clock.Advance(2 * time.Hour)
	if n, err := o.w.PruneIdleKeys(o.ctx); err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want the two idle keys", n, err)
	}
	if n := o.count(`SELECT count(*) FROM ordering_keys WHERE ordering_key = 'k3'`); n != 1 {
		t.Fatal("the held key was forgotten")
	}
	o.publishKey(2, 3)
	o.publishKey(2, 4)
	o.drain()
	if got := o.delivered(2); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("key 2 delivered %v after it was forgotten and used again, want [1 2 3 4]", got)
	}
	// A deleted subscription's keys go, held or not.
	if err := o.subs.Delete(o.ctx, o.tenant, o.sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := o.w.PruneIdleKeys(o.ctx); err != nil {
		t.Fatal(err)
	}
	if n := o.count(`SELECT count(*) FROM ordering_keys WHERE subscription_id = $1`, o.sub.ID); n != 0 {
		t.Errorf("%d keys of a deleted subscription kept", n)
	}
}

// failOnErrorLog is a logger that fails t on an error the engine logs (and drops the rest).
func failOnErrorLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Errorf("engine error: %s", p)
	return len(p), nil
}
