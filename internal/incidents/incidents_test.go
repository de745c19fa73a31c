package incidents_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "incidents", func(u string) { dbURL = u }) }

// ownPool is a pool on a database of the test's own, dropped when it ends: a check opens, tells and
// ends the incidents of the whole database, and the operator's tenant is one per database, so each test
// has its own and the tests run in parallel.
func ownPool(t *testing.T, conns int32) *pgxpool.Pool {
	t.Helper()
	own, drop, err := testdb.Create(context.Background(), "incidents")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	pool, err := server.Connect(context.Background(), own, conns, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// operatorReceiver checks every request's Standard Webhooks signature itself (not with Hookline's code)
// and keeps the notifications that verify.
type operatorReceiver struct {
	secret string
	mu     sync.Mutex
	got    []map[string]any
	bad    int
}

func (o *operatorReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(o.secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	o.mu.Lock()
	defer o.mu.Unlock()
	ok := false
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		ok = ok || hmac.Equal([]byte(sig), []byte(want))
	}
	var msg map[string]any
	if !ok || json.Unmarshal(body, &msg) != nil {
		o.bad++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	o.got = append(o.got, msg)
}

func (o *operatorReceiver) types() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, m := range o.got {
		out = append(out, m["type"].(string))
	}
	return out
}

// The whole life of an incident on an injected clock: nothing before HOOKLINE_INCIDENT_AFTER; then each step
// once (opened, 24 h, before the first expiry, what was lost), an email queued per dashboard user of the
// tenant, signed operator notifications delivered through the engine; two checks at once tell a step once;
// a 2xx ends it and both are told. Nothing is told per event.
func TestIncidentSteps(t *testing.T) {
	t.Parallel()
	e := newIncidentEnv(t)
	e.opens()
	e.daySteps()
	e.expiry()
	e.recovers()
	e.operatorHeard()
}

// incidentEnv is one tenant with two dashboard users and a failing subscription, the operator's
// endpoint, a worker and the incident checks, on an injected clock.
type incidentEnv struct {
	t        *testing.T
	ctx      context.Context
	pool     *pgxpool.Pool
	clk      *clock
	t0       time.Time
	policy   delivery.RetryPolicy
	pub      *publish.Publisher
	inc      *incidents.Service
	w        *delivery.Worker
	q        *db.Queries
	tn       tenants.Tenant
	sub      subscriptions.Subscription
	url      string
	status   *atomic.Int32
	opRecv   *operatorReceiver
	operator *incidents.Operator
}

func newIncidentEnv(t *testing.T) *incidentEnv {
	t.Helper()
	e := &incidentEnv{t: t, status: &atomic.Int32{}}
	e.ctx = activity.System(context.Background(), "test setup")
	e.pool = ownPool(t, 8)
	e.clk = &clock{t: time.Now().UTC().Truncate(time.Second)}
	e.t0 = e.clk.Now()
	e.policy = delivery.RetryPolicy{Base: time.Hour, MaxDelay: 12 * time.Hour, MaxAttempts: 30, Window: 48 * time.Hour}
	ts := tenants.NewService(e.pool, "")
	subs := subscriptions.NewService(e.pool, e.clk.Now, true)
	e.pub = publish.NewPublisher(e.pool, e.policy, e.clk.Now)

	e.status.Store(500)
	customer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(int(e.status.Load()))
	}))
	t.Cleanup(customer.Close)
	e.opRecv = &operatorReceiver{secret: delivery.NewSecret()}
	opSrv := httptest.NewServer(e.opRecv)
	t.Cleanup(opSrv.Close)

	var err error
	e.tn, err = ts.CreateTenant(e.ctx, "incident tenant")
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"ops@example.com", "dev@example.com"} {
		if _, err := ts.CreateUser(e.ctx, e.tn.ID, email, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
	}
	e.url = customer.URL + "/hook"
	e.sub, _, err = subs.Create(e.ctx, e.tn.ID, subscriptions.Input{URL: &e.url})
	if err != nil {
		t.Fatal(err)
	}
	e.operator, err = incidents.EnsureOperator(e.ctx, e.pool, subs, e.pub, opSrv.URL+"/ops", e.opRecv.secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.inc = incidents.New(e.pool, incidents.Options{After: time.Hour, PublicURL: "https://hooks.example.com", Now: e.clk.Now,
		Log: slog.New(slog.DiscardHandler), Operator: e.operator})
	e.w = delivery.NewWorker(e.pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 5 * time.Second}), e.policy,
		delivery.WorkerOptions{Now: e.clk.Now, Logger: slog.New(slog.DiscardHandler), Jitter: func() float64 { return 0.5 },
			Breaker: delivery.Breaker{Threshold: 1000}})
	e.q = db.New(e.pool)
	return e
}

// drain runs the worker until nothing is due.
func (e *incidentEnv) drain() {
	e.t.Helper()
	for {
		n, err := e.w.RunOnce(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// check runs the incident checks, then the worker: the operator's notifications are deliveries too.
func (e *incidentEnv) check() {
	e.t.Helper()
	if err := e.inc.Check(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.drain()
}

// queued counts the tenant's emails of a kind.
func (e *incidentEnv) queued(kind string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, "SELECT count(*) FROM notifications WHERE kind = $1 AND tenant_id = $2", kind, e.tn.ID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// opens: three events fail at t0; an incident opens after an hour of failures, told once per user.
func (e *incidentEnv) opens() {
	t := e.t
	// Three events fail at t0; the first attempts open the run of failures.
	for range 3 {
		if _, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tn.ID, EventType: "order.created", Payload: json.RawMessage(`{"secret_field":"do-not-mail"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	e.drain()
	e.clk.Set(e.t0.Add(59 * time.Minute))
	e.check()
	if n := e.queued(incidents.KindOpened); n != 0 {
		t.Fatalf("an incident opened after 59 min of failures (after is 1 h): %d emails", n)
	}

	e.clk.Set(e.t0.Add(61 * time.Minute))
	e.check()
	e.check() // a second check tells nothing again
	if n := e.queued(incidents.KindOpened); n != 2 {
		t.Fatalf("opened: %d emails queued, want one per dashboard user (2)", n)
	}
	open, err := e.inc.OpenOf(e.ctx, e.tn.ID)
	if err != nil || len(open) != 1 || open[0].Waiting != 3 || open[0].FirstExpiry == nil || !open[0].FailingSince.Equal(e.t0) {
		t.Fatalf("open incidents: %+v, %v; want one, failing since %s, with 3 waiting", open, err, e.t0)
	}
	var data map[string]any
	var raw []byte
	if err := e.pool.QueryRow(e.ctx, "SELECT data FROM notifications WHERE kind = $1 LIMIT 1", incidents.KindOpened).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &data)
	if data["link"] != "https://hooks.example.com/subscriptions/"+e.sub.ID.String() || strings.Contains(string(raw), "do-not-mail") {
		t.Fatalf("email data %s: want the subscription's link and no payload", raw)
	}
}

// daySteps: a day after it opened, with two checks racing, one day step, one email per user.
func (e *incidentEnv) daySteps() {
	t := e.t
	// A day after it opened, with two checks racing: one day step, one email per user.
	e.clk.Set(e.t0.Add(26 * time.Hour))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := e.inc.Check(e.ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	e.drain()
	if n := e.queued(incidents.KindDay); n != 2 {
		t.Fatalf("24 h step: %d emails, want 2", n)
	}
	if n := e.queued(incidents.KindExpiring); n != 0 {
		t.Fatalf("the expiry warning came %s before the first expiry", e.policy.Window-26*time.Hour)
	}

	// Less than 12 h before the first delivery expires (created t0, window 48 h).
	e.clk.Set(e.t0.Add(37 * time.Hour))
	e.check()
	if n := e.queued(incidents.KindExpiring); n != 2 {
		t.Fatalf("expiring step: %d emails, want 2", n)
	}
}

// expiry: the deliveries expire at their next attempt past the window; the summary comes once they
// settled.
func (e *incidentEnv) expiry() {
	t := e.t
	// Past the window: the deliveries expire at their next attempt; the summary comes once they settled.
	e.clk.Set(e.t0.Add(49 * time.Hour))
	e.drain()
	var expired int
	if err := e.pool.QueryRow(e.ctx, "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'expired'", e.sub.ID).Scan(&expired); err != nil || expired != 3 {
		t.Fatalf("%d expired, want 3 (%v)", expired, err)
	}
	e.check()
	if n := e.queued(incidents.KindExpired); n != 0 {
		t.Fatal("the summary of what was lost came before the expiries settled")
	}
	e.clk.Set(e.t0.Add(49*time.Hour + incidents.ExpiredSettle + time.Minute))
	e.check()
	e.check()
	if n := e.queued(incidents.KindExpired); n != 2 {
		t.Fatalf("expired step: %d emails, want 2", n)
	}
	var data map[string]any
	var raw []byte
	if err := e.pool.QueryRow(e.ctx, "SELECT data FROM notifications WHERE kind = $1 LIMIT 1", incidents.KindExpired).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &data)
	if data["expired"] != float64(3) || len(data["last_events"].([]any)) != 3 {
		t.Fatalf("summary %s: want 3 expired with their event ids", raw)
	}
}

// recovers: a 2xx ends the incident.
func (e *incidentEnv) recovers() {
	t := e.t
	// The endpoint recovers: a 2xx ends the incident.
	e.status.Store(200)
	if _, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tn.ID, EventType: "order.created", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	e.drain()
	e.check()
	if n := e.queued(incidents.KindEnded); n != 2 {
		t.Fatalf("ended: %d emails, want 2", n)
	}
	if open, _ := e.inc.OpenOf(e.ctx, e.tn.ID); len(open) != 0 {
		t.Fatalf("%d incidents still open after a 2xx", len(open))
	}
	all, err := e.inc.OfSubscription(e.ctx, e.tn.ID, e.sub.ID, 10)
	if err != nil || len(all) != 1 || all[0].EndedAt == nil || all[0].DayToldAt == nil || all[0].ExpiringToldAt == nil || all[0].ExpiredCount != 3 {
		t.Fatalf("incident history %+v, %v", all, err)
	}
}

// operatorHeard: the operator heard each moment once, signed, and deliveries.exhausted with the count.
func (e *incidentEnv) operatorHeard() {
	t := e.t
	// The operator heard each moment once, signed (checked here with an independent verifier), and
	// deliveries.exhausted with the count.
	e.clk.Set(e.t0.Add(50 * time.Hour))
	e.check()
	got := e.opRecv.types()
	want := map[string]int{incidents.EventFailing: 1, incidents.EventRecovered: 1, incidents.EventExhausted: 1}
	count := map[string]int{}
	for _, typ := range got {
		count[typ]++
	}
	for typ, n := range want {
		if count[typ] != n {
			t.Errorf("operator got %d %s, want %d (all: %v)", count[typ], typ, n, got)
		}
	}
	if e.opRecv.bad != 0 {
		t.Errorf("%d operator notifications failed the signature check", e.opRecv.bad)
	}
	for _, m := range e.opRecv.got {
		d := m["data"].(map[string]any)
		if d["tenant_id"] != e.tn.ID.String() || d["subscription_id"] != e.sub.ID.String() || d["url"] != e.url {
			t.Errorf("operator notification %v lacks tenant_id, subscription_id or url", m)
		}
		if m["type"] == incidents.EventExhausted && d["expired"] != float64(3) {
			t.Errorf("deliveries.exhausted %v: want expired 3", d)
		}
	}
	// The internal tenant is nobody's customer: no dashboard users, and its deliveries are ordinary ones.
	if users, _ := e.q.TenantUserEmails(e.ctx, ptr(e.operator.TenantID())); len(users) != 0 {
		t.Errorf("the operator tenant has users: %v", users)
	}
}

// A 410 disables the subscription; the operator is told once.
func TestOperatorToldOfDisabledSubscription(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool := ownPool(t, 4)
	policy := delivery.DefaultRetryPolicy
	subs := subscriptions.NewService(pool, time.Now, true)
	pub := publish.NewPublisher(pool, policy, time.Now)
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer gone.Close()
	opRecv := &operatorReceiver{secret: delivery.NewSecret()}
	opSrv := httptest.NewServer(opRecv)
	defer opSrv.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "gone tenant")
	if err != nil {
		t.Fatal(err)
	}
	url := gone.URL + "/hook"
	if _, _, err := subs.Create(ctx, tn.ID, subscriptions.Input{URL: &url}); err != nil {
		t.Fatal(err)
	}
	operator, err := incidents.EnsureOperator(ctx, pool, subs, pub, opSrv.URL+"/ops", opRecv.secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	inc := incidents.New(pool, incidents.Options{Log: slog.New(slog.DiscardHandler), Operator: operator})
	w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), policy,
		delivery.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	if _, err := pub.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "a.b", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if err := inc.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, typ := range opRecv.types() {
		if typ == incidents.EventDisabled {
			n++
		}
	}
	if n != 1 || opRecv.bad != 0 {
		t.Fatalf("subscription.disabled told %d times (bad signatures %d), want once", n, opRecv.bad)
	}
}

func ptr(u uuid.UUID) *uuid.UUID { return &u }
