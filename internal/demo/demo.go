// Package demo makes `make run` show something real: a built-in receiver with a healthy and a flaky
// endpoint, a demo tenant subscribed to both, a dashboard login, and a trickle of events.
package demo

import (
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/subscriptions"
)

// Receiver is the built-in demo receiver: /healthy always answers 200 after a short delay; /flaky answers
// 500 to a quarter of its attempts and 400 to one in 25 (see flakyStatus), so retries and now and then a
// dead letter show up.
type Receiver struct {
	ln  net.Listener
	srv *http.Server
	// rnd decides /flaky's answers and the simulated response times.
	rndMu sync.Mutex
	rnd   *rand.Rand
	// latency sleeps a simulated response time of at least lo plus up to spread milliseconds.
	latency func(lo, spread int)
	// shippingDown makes /shipping fail, as it did in the outage that SeedOutage plays back.
	shippingDown atomic.Bool
	seen         sync.Map // webhook-ids /shipping has answered while down
	// operatorSecret verifies the operator notifications /operator receives; log prints them.
	operatorSecret atomic.Value
	log            atomic.Pointer[slog.Logger]
	// inspect keeps what /inspect received (see inspect.go).
	inspect inspectBin
}

// ReceiverOptions configure the demo receiver.
type ReceiverOptions struct {
	// Addr is the loopback ip:port to listen on (HOOKLINE_DEMO_RECEIVER_ADDR, 127.0.0.1:8081 by default):
	// fixed, so a subscription pointed at the receiver keeps working after a restart. Empty: a free
	// port (tests).
	Addr string
	// Rand decides /flaky's answers and the response times (default: seeded at random). Tests seed it.
	Rand *rand.Rand
	// NoLatency answers at once instead of after a simulated response time (tests).
	NoLatency bool
}

// Shares of /flaky's answers, in attempts out of 100: a 400 is permanent (the delivery is dead-lettered
// at once), a 500 is retried. With the engine retrying every 500, 4 ÷ (4 + 71) of the deliveries, about
// one in 19, end dead; the rest are delivered, a quarter of them after one or more retries
// (TestFlakySplit measures it).
const (
	flakyBadRequestPct = 4
	flakyServerErrPct  = 25
)

// flakyStatus is /flaky's answer to an attempt, for n drawn uniformly from 0 to 99.
func flakyStatus(n int) int {
	switch {
	case n < flakyBadRequestPct:
		return http.StatusBadRequest
	case n < flakyBadRequestPct+flakyServerErrPct:
		return http.StatusInternalServerError
	}
	return http.StatusOK
}

// intN draws from the receiver's source, which is not safe for concurrent use on its own.
func (r *Receiver) intN(n int) int {
	r.rndMu.Lock()
	defer r.rndMu.Unlock()
	return r.rnd.IntN(n)
}

// StartReceiver listens on o.Addr. A port already taken is an error that says so and how to pick another.
func StartReceiver(o ReceiverOptions) (*Receiver, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("demo receiver: %s is already in use (another make run?): stop what listens there, or set HOOKLINE_DEMO_RECEIVER_ADDR to a free loopback port such as 127.0.0.1:8082", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("demo receiver on %s (HOOKLINE_DEMO_RECEIVER_ADDR): %w", addr, err)
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	mux := http.NewServeMux()
	r := &Receiver{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, rnd: o.Rand}
	r.latency = func(lo, spread int) { time.Sleep(time.Duration(lo+r.intN(spread)) * time.Millisecond) }
	if o.NoLatency {
		r.latency = func(int, int) {}
	}
	r.routes(mux)
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// routes adds the receiver's endpoints to mux.
func (r *Receiver) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /healthy", r.healthy)
	mux.HandleFunc("POST /flaky", r.flaky)
	// /hang never answers (until the sender gives up): point a demo subscription at it to watch the circuit
	// breaker open while the other endpoints keep their pace.
	mux.HandleFunc("POST /hang", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read first: only then does the server notice the client leave
		<-r.Context().Done()
	})
	// /always-fail answers 503: point a demo subscription at it to watch an incident open (after
	// HOOKLINE_INCIDENT_AFTER, 2 minutes under make run) and end when you point it back.
	mux.HandleFunc("POST /always-fail", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, `{"error":"maintenance"}`, http.StatusServiceUnavailable)
	})
	mux.HandleFunc("POST /operator", r.operator)
	mux.HandleFunc("POST /shipping", r.shipping)
	r.serveInspect(mux)
}

// healthy always answers 200, after a short delay.
func (r *Receiver) healthy(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.latency(5, 60)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"received":true}`))
}

// flaky answers as flakyStatus draws, after a longer delay.
func (r *Receiver) flaky(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.latency(20, 200)
	switch flakyStatus(r.intN(100)) {
	case http.StatusBadRequest:
		http.Error(w, `{"error":"unknown order id"}`, http.StatusBadRequest)
	case http.StatusInternalServerError:
		http.Error(w, `{"error":"database timeout"}`, http.StatusInternalServerError)
	default:
		_, _ = w.Write([]byte(`{"ok":true}`))
	}
}

// operator is the demo's operator endpoint (HOOKLINE_OPERATOR_WEBHOOK_URL under make run): it checks
// each notification's Standard Webhooks signature and prints it.
func (r *Receiver) operator(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	secret, _ := r.operatorSecret.Load().(string)
	verified := verifySignature(secret, req.Header, body)
	var msg struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(body, &msg)
	if log := r.log.Load(); log != nil {
		log.Warn("operator notification received", "type", msg.Type, "signature_verified", verified, "data", string(msg.Data))
	}
	if !verified {
		http.Error(w, "bad signature", http.StatusBadRequest)
	}
}

// shipping answers 200, except during the played-back outage: 503 to a first attempt, then 404 (a
// broken deploy that lost the route), so each delivery shows a retry and then a permanent failure.
func (r *Receiver) shipping(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	if r.shippingDown.Load() {
		if _, again := r.seen.LoadOrStore(req.Header.Get("webhook-id"), true); again {
			http.Error(w, `{"error":"no route for POST /shipping"}`, http.StatusNotFound)
			return
		}
		http.Error(w, `{"error":"upstream unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte(`{"ok":true}`))
}

// ConfigureOperator points HOOKLINE_OPERATOR_WEBHOOK_URL at the receiver's /operator endpoint with a fresh
// secret when no operator endpoint is configured, so `make run` shows operator notifications in its log.
func (r *Receiver) ConfigureOperator(cfg *config.Config, log *slog.Logger) {
	r.log.Store(log)
	if cfg.OperatorWebhookURL == "" {
		cfg.OperatorWebhookURL, cfg.OperatorWebhookSecret = r.URL("/operator"), delivery.NewSecret()
		r.operatorSecret.Store(cfg.OperatorWebhookSecret)
	}
}

// verifySignature checks a Standard Webhooks signature the way a receiver would, without Hookline's code.
func verifySignature(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || secret == "" {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// Addr is the receiver's ip:port.
func (r *Receiver) Addr() string { return r.ln.Addr().String() }

// URL is the receiver's URL for a path.
func (r *Receiver) URL(path string) string { return "http://" + r.Addr() + path }

// Close stops the receiver and frees its address. The listener is closed here too: the server closes only
// the listeners Serve has begun on, and Serve runs in a goroutine that may not have started yet.
func (r *Receiver) Close() {
	_ = r.srv.Close()
	_ = r.ln.Close()
}

// credentials are generated once per data directory and kept there.
type credentials struct {
	AdminToken    string `json:"admin_token"`
	AdminEmail    string `json:"admin_email"`
	AdminPassword string `json:"admin_password"`
	DemoEmail     string `json:"demo_email"`
	DemoPassword  string `json:"demo_password"`
}

var creds credentials

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// PrepareCredentials fills in an admin token and admin login when the configuration has none, from
// <data dir>/demo-credentials.json (made on first use), so the printed logins stay the same across runs;
// and HOOKLINE_SECRET_KEY, when empty, from <data dir>/secret-key, so `make run` encrypts secrets at rest.
func PrepareCredentials(cfg *config.Config) error {
	if cfg.SecretKey == "" {
		key, err := secretKey(cfg.DataDir)
		if err != nil {
			return err
		}
		cfg.SecretKey = key
	}
	path := filepath.Join(cfg.DataDir, "demo-credentials.json")
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &creds)
	}
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %w", path, err)
		}
		creds = credentials{
			AdminToken: "hl_admin_" + randomString(24), AdminEmail: "admin@hookline.localhost", AdminPassword: randomString(12),
			DemoEmail: "demo@hookline.localhost", DemoPassword: randomString(12),
		}
		b, _ := json.MarshalIndent(creds, "", "  ")
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = creds.AdminToken
	}
	if cfg.AdminEmail == "" && cfg.AdminPassword == "" {
		cfg.AdminEmail, cfg.AdminPassword = creds.AdminEmail, creds.AdminPassword
	}
	return nil
}

// SecretKeyFile is the file under the data directory that holds make run's HOOKLINE_SECRET_KEY.
const SecretKeyFile = "secret-key"

// secretKey reads <data dir>/secret-key, making it with a fresh key on first use. The key must outlive
// the process: the database under the same directory holds values sealed with it.
func secretKey(dataDir string) (string, error) {
	path := filepath.Join(dataDir, SecretKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		key := strings.TrimSpace(string(b))
		if _, err := secretbox.Parse(key); err != nil || key == "" {
			return "", fmt.Errorf("%s: not a HOOKLINE_SECRET_KEY (%v); it encrypts the secrets stored under %s, so restore it rather than delete it", path, err, dataDir)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", err
	}
	key := secretbox.NewKey()
	// O_EXCL: two first starts at once keep one key, not each their own.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return secretKey(dataDir)
	}
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return key, f.Close()
}

// DemoTenant is the demo tenant's name.
const DemoTenant = "Demo Shop"

// Seeded is what Seed made or found.
type Seeded struct {
	TenantID uuid.UUID
	Healthy  uuid.UUID
	Flaky    uuid.UUID
}

// Seed makes (or finds, on later runs) the demo's event types, the demo tenant, its login and two
// subscriptions, pointing them at this run's receiver.
func Seed(ctx context.Context, srv Services, rcv *Receiver) (Seeded, error) {
	ctx = activity.System(ctx, "demo seed") // its subscriptions' creation and changes are recorded as the demo's
	var out Seeded
	// First: with HOOKLINE_EVENT_TYPES=registered, the subscriptions may name only catalogue types.
	if err := RegisterEventTypes(ctx, srv.Catalogue); err != nil {
		return out, err
	}
	t, err := srv.Tenants.TenantByName(ctx, DemoTenant)
	if fault.Is(err, fault.NotFound) {
		nt, err := srv.Tenants.CreateTenant(ctx, DemoTenant)
		if err != nil {
			return out, err
		}
		t.ID = nt.ID
	} else if err != nil {
		return out, err
	}
	out.TenantID = t.ID
	if err := srv.Tenants.EnsureTenantUser(ctx, t.ID, creds.DemoEmail, creds.DemoPassword); err != nil {
		return out, err
	}
	subs, err := srv.Subscriptions.List(ctx, t.ID)
	if err != nil {
		return out, err
	}
	ensure := func(desc, path string, types []string) (uuid.UUID, error) {
		url := rcv.URL(path)
		for _, s := range subs {
			if s.Description == desc {
				_, err := srv.Subscriptions.Update(ctx, t.ID, s.ID, subscriptions.Input{URL: &url})
				return s.ID, err
			}
		}
		s, _, err := srv.Subscriptions.Create(ctx, t.ID, subscriptions.Input{URL: &url, Description: &desc, EventTypes: &types})
		return s.ID, err
	}
	if out.Healthy, err = ensure("Order service (healthy demo endpoint)", "/healthy", []string{}); err != nil {
		return out, err
	}
	if out.Flaky, err = ensure("Billing service (flaky demo endpoint)", "/flaky", []string{"invoice.paid", "invoice.failed", "order.created"}); err != nil {
		return out, err
	}
	return out, nil
}

// OutageTenant is a second demo tenant, so the operator console shows an outage across tenants.
const OutageTenant = "Northwind Travel"

// outageDescription names the subscriptions the played-back outage hit.
const outageDescription = "Shipping service (down yesterday 14:00-14:30 UTC)"

// OutageWindow is the played-back outage: yesterday 14:00 to 14:30 UTC.
func OutageWindow(now time.Time) (from, to time.Time) {
	y := now.UTC().AddDate(0, 0, -1)
	from = time.Date(y.Year(), y.Month(), y.Day(), 14, 0, 0, 0, time.UTC)
	return from, from.Add(30 * time.Minute)
}

// SeedOutage gives the operator console something to recover from: yesterday from 14:00 to 14:30 UTC the
// shipping endpoints of two demo tenants were down. It plays that half hour back through the real engine
// (publisher, worker, sender, the demo receiver answering 503 then 404) on a clock set to yesterday, so
// every dead delivery has real attempts with yesterday's times, and at 14:45 one event each goes through
// (the endpoints are back). It runs once per database, before the server's own workers start (they would
// otherwise claim the played-back rows on today's clock). The shipping endpoints answer 200 afterwards, so
// a replay of the outage succeeds.
func SeedOutage(ctx context.Context, srv Services, rcv *Receiver, s Seeded) error {
	ctx = activity.System(ctx, "demo seed")
	tenantIDs, played, err := outageSubscriptions(ctx, srv, rcv, s)
	if err != nil || played {
		return err
	}
	from, to := OutageWindow(time.Now())
	p := newPlayback(srv, rcv, from)
	if err := p.publishOutage(ctx, tenantIDs, to); err != nil {
		return err
	}
	rcv.shippingDown.Store(true)
	defer rcv.shippingDown.Store(false)
	// Rewind to the outage's start and let the worker catch up on its clock, 5 s at a time: first attempts
	// (503), then, after the backoff, the second attempts (404) that dead-letter them.
	p.set(from)
	for p.now().Before(to.Add(10 * time.Minute)) {
		if err := p.drain(ctx); err != nil {
			return err
		}
		p.advance(5 * time.Second)
	}
	// At 14:45 the endpoints are back: one event each goes through. Without a success after the outage the
	// subscriptions would read as failing since 14:00 yesterday, and HOOKLINE_AUTO_DISABLE_AFTER (24 h)
	// would disable them at the first start after 14:00 today, so the replay the demo invites would wait.
	rcv.shippingDown.Store(false)
	p.set(to.Add(15 * time.Minute))
	for i, tid := range tenantIDs {
		payload, _ := json.Marshal(map[string]any{"shipment": fmt.Sprintf("shp_%d_back", i), "carrier": "DHL", "status": "delivered"})
		if _, err := p.pub.Publish(ctx, publish.PublishInput{TenantID: tid, EventType: outageTypes[1], Payload: payload}); err != nil {
			return err
		}
	}
	return p.drain(ctx)
}

// outageTypes are the event types of the played-back outage.
var outageTypes = []string{"shipment.created", "shipment.delivered"}

// outageSubscriptions makes (or finds, pointing them at this run's receiver) the shipping subscriptions
// of the demo tenant and of OutageTenant, and returns the two tenants; played says the outage was played
// back on an earlier run (its subscriptions have deliveries).
func outageSubscriptions(ctx context.Context, srv Services, rcv *Receiver, s Seeded) (tenantIDs []uuid.UUID, played bool, err error) {
	tenantIDs = []uuid.UUID{s.TenantID}
	t, err := srv.Tenants.TenantByName(ctx, OutageTenant)
	if fault.Is(err, fault.NotFound) {
		nt, err := srv.Tenants.CreateTenant(ctx, OutageTenant)
		if err != nil {
			return nil, false, err
		}
		t.ID = nt.ID
	} else if err != nil {
		return nil, false, err
	}
	tenantIDs = append(tenantIDs, t.ID)
	url := rcv.URL("/shipping")
	for _, tid := range tenantIDs {
		subs, err := srv.Subscriptions.List(ctx, tid)
		if err != nil {
			return nil, false, err
		}
		found := false
		for _, sub := range subs {
			if sub.Description == outageDescription {
				found = true
				if _, err := srv.Subscriptions.Update(ctx, tid, sub.ID, subscriptions.Input{URL: &url}); err != nil {
					return nil, false, err
				}
				page, err := srv.Deliveries.List(ctx, tid, deliveries.Filter{SubscriptionID: &sub.ID, Limit: 1})
				if err != nil || len(page.Items) > 0 {
					return nil, err == nil, err // with deliveries: played back on an earlier run
				}
			}
		}
		if !found {
			desc, types := outageDescription, outageTypes
			if _, _, err := srv.Subscriptions.Create(ctx, tid, subscriptions.Input{URL: &url, Description: &desc, EventTypes: &types}); err != nil {
				return nil, false, err
			}
		}
	}
	return tenantIDs, false, nil
}

// playback is the engine the outage is played back through: a publisher and a worker of its own on a
// clock that the playback moves.
type playback struct {
	mu    sync.Mutex
	clock time.Time
	pub   *publish.Publisher
	w     *delivery.Worker
}

func newPlayback(srv Services, rcv *Receiver, from time.Time) *playback {
	p := &playback{clock: from}
	p.pub = publish.NewPublisher(srv.EnginePool, srv.Policy, p.now)
	p.pub.CheckEvent = srv.Catalogue.CheckEvent // its payloads satisfy the demo catalogue, like every publish's
	sender := delivery.NewSender(delivery.SenderOptions{Timeout: 5 * time.Second, AllowAddrs: []string{rcv.Addr()}})
	p.w = delivery.NewWorker(srv.EnginePool, sender, srv.Policy, delivery.WorkerOptions{Now: p.now, Logger: slog.New(slog.DiscardHandler), Open: srv.Open})
	return p
}

func (p *playback) now() time.Time { p.mu.Lock(); defer p.mu.Unlock(); return p.clock }

func (p *playback) set(t time.Time) { p.mu.Lock(); defer p.mu.Unlock(); p.clock = t }

func (p *playback) advance(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock = p.clock.Add(d)
}

// publishOutage publishes one event a minute to each tenant until to.
func (p *playback) publishOutage(ctx context.Context, tenantIDs []uuid.UUID, to time.Time) error {
	for i := 0; p.now().Before(to); i++ {
		for j, tid := range tenantIDs {
			payload, _ := json.Marshal(map[string]any{"shipment": fmt.Sprintf("shp_%d_%d", j, i), "carrier": "DHL", "status": "label_created"})
			if _, err := p.pub.Publish(ctx, publish.PublishInput{TenantID: tid, EventType: outageTypes[i%2], Payload: payload}); err != nil {
				return err
			}
		}
		p.advance(time.Minute)
	}
	return nil
}

// drain runs the worker until nothing is due at the playback's time.
func (p *playback) drain(ctx context.Context) error {
	for {
		n, err := p.w.RunOnce(ctx)
		if err != nil {
			return fmt.Errorf("demo outage: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// Outage is what became of the played-back outage's deliveries, so the welcome banner says what is true
// at this start: a replay is worth inviting only while they are dead.
type Outage struct {
	// Dead counts its deliveries that are dead letters (failed or expired); Queued those back in the
	// queue (a replay or retry under way).
	Dead, Queued int64
	// Day is the UTC date of the outage (the day before the first start), from its newest dead letter;
	// zero when none is dead.
	Day time.Time
	// Played says the outage's subscriptions have deliveries at all (retention deletes them after
	// HOOKLINE_RETENTION_DEAD).
	Played bool
}

// OutageNow reads the played-back outage's deliveries in both demo tenants.
func OutageNow(ctx context.Context, srv Services) (Outage, error) {
	var o Outage
	for _, name := range []string{DemoTenant, OutageTenant} {
		t, err := srv.Tenants.TenantByName(ctx, name)
		if fault.Is(err, fault.NotFound) {
			continue
		}
		if err != nil {
			return o, err
		}
		subs, err := srv.Subscriptions.List(ctx, t.ID)
		if err != nil {
			return o, err
		}
		for _, sub := range subs {
			if sub.Description != outageDescription {
				continue
			}
			count := func(states ...string) (deliveries.Page, error) {
				return srv.Deliveries.List(ctx, t.ID, deliveries.Filter{SubscriptionID: &sub.ID, States: states, Limit: 1, WithTotal: true})
			}
			dead, err := count("dead")
			if err != nil {
				return o, err
			}
			queued, err := count(string(delivery.Pending), string(delivery.InFlight))
			if err != nil {
				return o, err
			}
			all, err := count()
			if err != nil {
				return o, err
			}
			o.Dead += *dead.Total
			o.Queued += *queued.Total
			o.Played = o.Played || *all.Total > 0
			if len(dead.Items) > 0 {
				d := dead.Items[0].CreatedAt.UTC()
				o.Day = time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
			}
		}
	}
	return o, nil
}

// PrintWelcome tells the person who ran `make run` where to go.
func PrintWelcome(w io.Writer, cfg config.Config, s Seeded, receiverURL string, o Outage) {
	host := cfg.Addr
	if h, p, err := net.SplitHostPort(cfg.Addr); err == nil && (h == "" || h == "0.0.0.0" || h == "::") {
		host = "localhost:" + p
	}
	fmt.Fprintf(w, `
  Hookline is running.

    Dashboard      http://%[1]s/
    Demo login     %[2]s  /  %[3]s
    Admin login    %[4]s  /  %[5]s
    Admin token    %[6]s
    Demo tenant    %[7]s
    Demo receiver  %[8]s (/healthy, /flaky, /hang, /always-fail, /inspect; same address at every start)

  Try:  curl -H 'Authorization: Bearer %[6]s' http://%[1]s/api/v1/tenants/%[7]s/deliveries?state=dead
`, host, creds.DemoEmail, creds.DemoPassword, cfg.AdminEmail, cfg.AdminPassword, cfg.AdminToken, s.TenantID, receiverURL)
	switch {
	case o.Dead > 0:
		fmt.Fprintf(w, `  Operators: on %[1]s from 14:00 to 14:30 UTC the demo shipping endpoints were down (played back at the
  first start); %[2]d of the deliveries it hit are still dead letters. Sign in as admin, find them at
  http://%[3]s/admin/dead and replay them (the endpoints work now).
`, o.Day.Format("Mon 2 Jan 2006"), o.Dead, host)
	case o.Queued > 0:
		fmt.Fprintf(w, "  Operators: the played-back outage's dead letters are back in the queue (%d still to deliver): follow\n  the replay at http://%s/admin/replays.\n", o.Queued, host)
	case o.Played:
		fmt.Fprintf(w, "  Operators: the played-back outage has no dead letters left (replayed or retried since): its replay is\n  at http://%s/admin/replays.\n", host)
	}
	fmt.Fprintf(w, "  Stop with Ctrl-C. Credentials are kept in %s.\n\n", filepath.Join(cfg.DataDir, "demo-credentials.json"))
}

// Trickle publishes a demo event every few seconds until ctx ends.
func Trickle(ctx context.Context, pub *publish.Publisher, s Seeded, log *slog.Logger) {
	n := 0
	for {
		n++
		typ, payload := trickleEvent(n)
		if _, err := pub.Publish(ctx, publish.PublishInput{TenantID: s.TenantID, EventType: typ, Payload: payload}); err != nil && ctx.Err() == nil {
			log.Warn("demo publish", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(2000+rand.IntN(3000)) * time.Millisecond):
		}
	}
}

// DemoPassword is the demo customer's password, as printed at start.
func DemoPassword() string { return creds.DemoPassword }
