package publish_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Each test works on a database of its own (ownDatabase: a copy of the migrated template, made in a
// fraction of a second), since a worker claims every due row whoever published it; so the tests run in
// parallel. Benchmarks share the package's database, which setup empties
// first.

var dbURL string

// ownURLs holds each test's own database URL (testing.TB → string).
var ownURLs sync.Map

// urlOf is the database t works on: its own (setup made it), else the package's.
func urlOf(t testing.TB) string {
	if u, ok := ownURLs.Load(t); ok {
		return u.(string)
	}
	return dbURL
}

// ownDatabase gives t a database of its own, dropped when it ends.
func ownDatabase(t testing.TB) {
	t.Helper()
	u, drop, err := testdb.Create(t.Context(), "dt")
	if err != nil {
		t.Fatal(err)
	}
	ownURLs.Store(t, u)
	t.Cleanup(func() { ownURLs.Delete(t); drop() })
}

func TestMain(m *testing.M) { testdb.Main(m, "publish", func(u string) { dbURL = u }) }

// clock is a fake clock the tests advance instead of sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().UTC().Truncate(time.Microsecond)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t (never backwards).
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}

// env is one test's bundle: a pool on the package's database, a fake clock, a tenant and the services.
type env struct {
	t      testing.TB
	ctx    context.Context
	pool   *pgxpool.Pool
	q      *db.Queries
	clock  *clock
	policy delivery.RetryPolicy
	tenant uuid.UUID
	subs   *subscriptions.Service
	pub    *publish.Publisher
	svc    *deliveries.Service
	// plannedCompletions leaves the env's workers without a GenericPool, so every completion is planned
	// with its batch (BenchmarkRecordSmallBatch's baseline).
	plannedCompletions bool
	generic            *pgxpool.Pool
}

// genericPool is the env's pool with generic plans (the server's GenericPool), opened on first use.
func (e *env) genericPool() *pgxpool.Pool {
	if e.generic == nil {
		gp, err := server.Connect(context.Background(), urlOf(e.t), server.GenericConns, server.PlanGeneric)
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(gp.Close)
		e.generic = gp
	}
	return e.generic
}

var testPolicy = delivery.RetryPolicy{Base: 10 * time.Second, MaxDelay: time.Hour, MaxAttempts: 10, Window: 24 * time.Hour}

func setup(t testing.TB) *env {
	t.Helper()
	if _, bench := t.(*testing.B); !bench {
		ownDatabase(t)
	}
	return setupOn(t)
}

// setupOn makes the env on t's database: its own, or the package's, which it empties first.
func setupOn(t testing.TB) *env {
	t.Helper()
	// What the tests change through the services is recorded (every change names an actor): as the system's.
	ctx := activity.System(t.Context(), "test setup")
	pool := connect(t, 8)
	if urlOf(t) == dbURL {
		if _, err := pool.Exec(ctx, "TRUNCATE tenants, replays, sessions, events, webhook_deliveries, webhook_attempts, event_idempotency CASCADE"); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, ctx: ctx, pool: pool, q: db.New(pool), clock: newClock(), policy: testPolicy}
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	e.tenant = tn.ID
	e.subs = subscriptions.NewService(pool, e.clock.Now, true)
	e.pub = publish.NewPublisher(pool, e.policy, e.clock.Now)
	e.svc = deliveries.NewService(pool, e.policy, e.clock.Now, 3, 100)
	return e
}

func connect(t testing.TB, n int32) *pgxpool.Pool {
	t.Helper()
	pool, err := server.Connect(context.Background(), urlOf(t), n, server.PlanCached) // as the engine runs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// quietLog drops the engine's expected warnings (dead-lettered deliveries, lost leases) from test output.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// subscribe creates an active subscription of the env's tenant and returns it with its secret.
func (e *env) subscribe(url string, in subscriptions.Input) (subscriptions.Subscription, string) {
	e.t.Helper()
	in.URL = &url
	s, secret, err := e.subs.Create(e.ctx, e.tenant, in)
	if err != nil {
		e.t.Fatalf("create subscription: %v", err)
	}
	return s, secret
}

func (e *env) publish(eventType, payload string) publish.Published {
	e.t.Helper()
	p, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: eventType, Payload: json.RawMessage(payload)})
	if err != nil {
		e.t.Fatalf("publish: %v", err)
	}
	return p
}

// publishOne publishes an event and returns the id of its single delivery.
func (e *env) publishOne(payload string) uuid.UUID {
	e.t.Helper()
	p := e.publish("order.created", payload)
	if len(p.Deliveries) != 1 {
		e.t.Fatalf("publish made %d deliveries, want 1", len(p.Deliveries))
	}
	return uuid.MustParse(p.Deliveries[0].ID)
}

// worker returns a worker on the env's clock with a fixed jitter (nominal delays); sender options default
// to allowing private addresses, since the receivers are local.
func (e *env) worker(o delivery.WorkerOptions, so *delivery.SenderOptions) *delivery.Worker {
	if so == nil {
		so = &delivery.SenderOptions{AllowPrivate: true, Timeout: 5 * time.Second}
	}
	if o.Now == nil {
		o.Now = e.clock.Now
	}
	if o.Jitter == nil {
		o.Jitter = func() float64 { return 0.5 }
	}
	if o.Logger == nil {
		o.Logger = quietLog
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = so.Timeout
	}
	if o.GenericPool == nil && !e.plannedCompletions {
		o.GenericPool = e.genericPool() // as the server runs it: small batches' completions on their generic plan
	}
	return delivery.NewWorker(e.pool, delivery.NewSender(*so), e.policy, o)
}

func (e *env) delivery(id uuid.UUID) db.WebhookDelivery {
	e.t.Helper()
	d, err := e.q.GetDelivery(e.ctx, db.GetDeliveryParams{ID: id, TenantID: e.tenant})
	if err != nil {
		e.t.Fatalf("get delivery %s: %v", id, err)
	}
	return d
}

func (e *env) attempts(id uuid.UUID) []db.WebhookAttempt {
	e.t.Helper()
	a, err := e.q.ListAttempts(e.ctx, db.ListAttemptsParams{DeliveryID: id, TenantID: e.tenant})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// wantState fails unless the delivery is in state with n attempts in its current schedule.
func (e *env) wantState(id uuid.UUID, state delivery.State, attemptCount int) db.WebhookDelivery {
	e.t.Helper()
	d := e.delivery(id)
	if d.State != string(state) || int(d.AttemptCount) != attemptCount {
		e.t.Fatalf("delivery is %s after %d attempts (last status %v, error %v), want %s after %d",
			d.State, d.AttemptCount, deref(d.LastStatus), deref(d.LastError), state, attemptCount)
	}
	return d
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func wantFault(t testing.TB, err error, code fault.Code) *fault.Error {
	t.Helper()
	fe := fault.As(err)
	if fe == nil || fe.Code != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
	return fe
}

// eventually polls cond every 10 ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-poll.C
	}
}

// received is one request a receiver got.
type received struct {
	Header http.Header
	Body   []byte
	Path   string
}

// receiver is a real HTTP endpoint (httptest) that records every request and answers with handle.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	handle func(n int, w http.ResponseWriter, r *http.Request)
}

// newReceiver starts a receiver. handle gets the request's 1-based number; nil answers 204. Handlers that
// block must return when r.Context() is done, or the test's cleanup waits for them.
func newReceiver(t testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{handle: handle}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{Header: r.Header.Clone(), Body: body, Path: r.URL.Path})
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.handle == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		rc.handle(n, w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// statuses answers the listed statuses in turn, repeating the last one.
func statuses(codes ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(codes[min(n, len(codes))-1])
	}
}

func (rc *receiver) URL() string  { return rc.srv.URL + "/hook" }
func (rc *receiver) Addr() string { return rc.srv.Listener.Addr().String() }

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) hits() int { return len(rc.requests()) }

// hang blocks until the client gives up (or the test ends).
func hang(_ int, _ http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(30 * time.Second):
	}
}

// setPolicy replaces the retry policy of the publisher, the service and workers made afterwards.
func (e *env) setPolicy(p delivery.RetryPolicy) {
	e.policy = p
	e.pub = publish.NewPublisher(e.pool, p, e.clock.Now)
	e.svc = deliveries.NewService(e.pool, p, e.clock.Now, 3, 100)
}
