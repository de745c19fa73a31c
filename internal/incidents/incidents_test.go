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
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "incidents", func(u string) { dbURL = u }) }

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
	ctx := activity.System(context.Background(), "test setup")
	pool, err := server.Connect(ctx, dbURL, 8, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
	t0 := clk.Now()
	policy := delivery.RetryPolicy{Base: time.Hour, MaxDelay: 12 * time.Hour, MaxAttempts: 30, Window: 48 * time.Hour}
	ts := tenants.NewService(pool, "")
	subs := subscriptions.NewService(pool, clk.Now, true)
	pub := publish.NewPublisher(pool, policy, clk.Now)

	var status atomic.Int32
	status.Store(500)
	customer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(int(status.Load()))
	}))
	defer customer.Close()
	opRecv := &operatorReceiver{secret: delivery.NewSecret()}
	opSrv := httptest.NewServer(opRecv)
	defer opSrv.Close()

	tn, err := ts.CreateTenant(ctx, "incident tenant")
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"ops@example.com", "dev@example.com"} {
		if _, err := ts.CreateUser(ctx, tn.ID, email, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
	}
	url := customer.URL + "/hook"
	sub, _, err := subs.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	operator, err := incidents.EnsureOperator(ctx, pool, subs, pub, opSrv.URL+"/ops", opRecv.secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	inc := incidents.New(pool, incidents.Options{After: time.Hour, PublicURL: "https://hooks.example.com", Now: clk.Now,
		Log: slog.New(slog.DiscardHandler), Operator: operator})
	w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 5 * time.Second}), policy,
		delivery.WorkerOptions{Now: clk.Now, Logger: slog.New(slog.DiscardHandler), Jitter: func() float64 { return 0.5 },
			Breaker: delivery.Breaker{Threshold: 1000}})
	q := db.New(pool)
	drain := func() {
		t.Helper()
		for {
			n, err := w.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
	}
	check := func() {
		t.Helper()
		if err := inc.Check(ctx); err != nil {
			t.Fatal(err)
		}
		drain() // the operator's notifications are deliveries too
	}
	queued := func(kind string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM notifications WHERE kind = $1 AND tenant_id = $2", kind, tn.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Three events fail at t0; the first attempts open the run of failures.
	for range 3 {
		if _, err := pub.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "order.created", Payload: json.RawMessage(`{"secret_field":"do-not-mail"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	drain()
	clk.Set(t0.Add(59 * time.Minute))
	check()
	if n := queued(incidents.KindOpened); n != 0 {
		t.Fatalf("an incident opened after 59 min of failures (after is 1 h): %d emails", n)
	}

	clk.Set(t0.Add(61 * time.Minute))
	check()
	check() // a second check tells nothing again
	if n := queued(incidents.KindOpened); n != 2 {
		t.Fatalf("opened: %d emails queued, want one per dashboard user (2)", n)
	}
	open, err := inc.OpenOf(ctx, tn.ID)
	if err != nil || len(open) != 1 || open[0].Waiting != 3 || open[0].FirstExpiry == nil || !open[0].FailingSince.Equal(t0) {
		t.Fatalf("open incidents: %+v, %v; want one, failing since %s, with 3 waiting", open, err, t0)
	}
	var data map[string]any
	var raw []byte
	if err := pool.QueryRow(ctx, "SELECT data FROM notifications WHERE kind = $1 LIMIT 1", incidents.KindOpened).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &data)
	if data["link"] != "https://hooks.example.com/subscriptions/"+sub.ID.String() || strings.Contains(string(raw), "do-not-mail") {
		t.Fatalf("email data %s: want the subscription's link and no payload", raw)
	}

	// A day after it opened, with two checks racing: one day step, one email per user.
	clk.Set(t0.Add(26 * time.Hour))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := inc.Check(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	drain()
	if n := queued(incidents.KindDay); n != 2 {
		t.Fatalf("24 h step: %d emails, want 2", n)
	}
	if n := queued(incidents.KindExpiring); n != 0 {
		t.Fatalf("the expiry warning came %s before the first expiry", policy.Window-26*time.Hour)
	}

	// Less than 12 h before the first delivery expires (created t0, window 48 h).
	clk.Set(t0.Add(37 * time.Hour))
	check()
	if n := queued(incidents.KindExpiring); n != 2 {
		t.Fatalf("expiring step: %d emails, want 2", n)
	}

	// Past the window: the deliveries expire at their next attempt; the summary comes once they settled.
	clk.Set(t0.Add(49 * time.Hour))
	drain()
	var expired int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'expired'", sub.ID).Scan(&expired); err != nil || expired != 3 {
		t.Fatalf("%d expired, want 3 (%v)", expired, err)
	}
	check()
	if n := queued(incidents.KindExpired); n != 0 {
		t.Fatal("the summary of what was lost came before the expiries settled")
	}
	clk.Set(t0.Add(49*time.Hour + incidents.ExpiredSettle + time.Minute))
	check()
	check()
	if n := queued(incidents.KindExpired); n != 2 {
		t.Fatalf("expired step: %d emails, want 2", n)
	}
	if err := pool.QueryRow(ctx, "SELECT data FROM notifications WHERE kind = $1 LIMIT 1", incidents.KindExpired).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &data)
	if data["expired"] != float64(3) || len(data["last_events"].([]any)) != 3 {
		t.Fatalf("summary %s: want 3 expired with their event ids", raw)
	}

	// The endpoint recovers: a 2xx ends the incident.
	status.Store(200)
	if _, err := pub.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "order.created", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	drain()
	check()
	if n := queued(incidents.KindEnded); n != 2 {
		t.Fatalf("ended: %d emails, want 2", n)
	}
	if open, _ := inc.OpenOf(ctx, tn.ID); len(open) != 0 {
		t.Fatalf("%d incidents still open after a 2xx", len(open))
	}
	all, err := inc.OfSubscription(ctx, tn.ID, sub.ID, 10)
	if err != nil || len(all) != 1 || all[0].EndedAt == nil || all[0].DayToldAt == nil || all[0].ExpiringToldAt == nil || all[0].ExpiredCount != 3 {
		t.Fatalf("incident history %+v, %v", all, err)
	}

	// The operator heard each moment once, signed (checked here with an independent verifier), and
	// deliveries.exhausted with the count.
	clk.Set(t0.Add(50 * time.Hour))
	check()
	got := opRecv.types()
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
	if opRecv.bad != 0 {
		t.Errorf("%d operator notifications failed the signature check", opRecv.bad)
	}
	for _, m := range opRecv.got {
		d := m["data"].(map[string]any)
		if d["tenant_id"] != tn.ID.String() || d["subscription_id"] != sub.ID.String() || d["url"] != url {
			t.Errorf("operator notification %v lacks tenant_id, subscription_id or url", m)
		}
		if m["type"] == incidents.EventExhausted && d["expired"] != float64(3) {
			t.Errorf("deliveries.exhausted %v: want expired 3", d)
		}
	}
	// The internal tenant is nobody's customer: no dashboard users, and its deliveries are ordinary ones.
	if users, _ := q.TenantUserEmails(ctx, ptr(operator.TenantID())); len(users) != 0 {
		t.Errorf("the operator tenant has users: %v", users)
	}
}

// A 410 disables the subscription; the operator is told once.
func TestOperatorToldOfDisabledSubscription(t *testing.T) {
	ctx := activity.System(context.Background(), "test setup")
	pool, err := server.Connect(ctx, dbURL, 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
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
