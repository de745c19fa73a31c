package demo_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/demo"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) {
	testdb.Main(m, "demo", func(u string) { dbURL = u })
}

// sharedKey is the tests' HOOKLINE_SECRET_KEY: they share one database (and its demo tenants, sealed
// under the key of whichever test seeded them) but not a data directory, whose secret-key file would
// differ.
var sharedKey = secretbox.NewKey()

// make run's secret key: made once under the data directory, kept across runs, never overriding a
// configured one, and a damaged file is an error rather than a new key (the old one sealed the database).
func TestPrepareCredentialsKeepsOneSecretKey(t *testing.T) {
	// Not parallel: PrepareCredentials sets the package's credentials, which PrintWelcome reads.
	dir := t.TempDir()
	var first, second config.Config
	first.DataDir, second.DataDir = dir, dir
	if err := demo.PrepareCredentials(&first); err != nil {
		t.Fatal(err)
	}
	if b, err := secretbox.Parse(first.SecretKey); err != nil || !b.Enabled() {
		t.Fatalf("no usable key prepared: %q %v", first.SecretKey, err)
	}
	fi, err := os.Stat(filepath.Join(dir, demo.SecretKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if err := demo.PrepareCredentials(&second); err != nil || second.SecretKey != first.SecretKey {
		t.Fatalf("second run: key changed (%v)", err)
	}
	mine := config.Config{DataDir: dir, SecretKey: sharedKey}
	if err := demo.PrepareCredentials(&mine); err != nil || mine.SecretKey != sharedKey {
		t.Fatalf("a configured key was replaced (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(dir, demo.SecretKeyFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := demo.PrepareCredentials(&config.Config{DataDir: dir}); err == nil || !strings.Contains(err.Error(), "restore it") {
		t.Fatalf("damaged key file: %v", err)
	}
}

// services are the server's services the demo works through, as cmd/server hands them over.
func services(srv *server.Server) demo.Services {
	return demo.Services{Tenants: srv.Tenants, Subscriptions: srv.Subscriptions, Deliveries: srv.Deliveries,
		Publisher: srv.Publisher, Catalogue: srv.Catalogue, Portal: srv.Portal,
		EnginePool: srv.EnginePool, Policy: srv.Policy, Open: srv.Keys.Open, Brand: srv.Brand.Name}
}

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// make run's path: credentials prepared, the demo receiver allowed through the SSRF guard (private
// networks stay refused), the tenant seeded twice without duplicates, and demo events really delivered.
// Not parallel: the demo's credentials are the package's (PrepareCredentials), as are its tenants' names.
func TestSeedDeliversThroughTheGuardedSender(t *testing.T) {
	rcv, err := demo.StartReceiver(demo.ReceiverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	cfg := servertest.Config(t, dbURL)
	cfg.AllowPrivateNetworks = false
	cfg.DataDir = t.TempDir()
	cfg.SecretKey = sharedKey
	cfg.RetryBase = 50 * time.Millisecond
	if err := demo.PrepareCredentials(&cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.AdminToken, "hl_admin_") || cfg.AdminEmail == "" || cfg.AdminPassword == "" {
		t.Fatalf("credentials not prepared: %+v", cfg)
	}
	srv, base := servertest.StartWithBackground(t, cfg, nil, server.Options{AllowAddrs: []string{rcv.Addr()}})
	ctx := context.Background()
	first := seedTwice(t, srv, rcv)
	checkSeeded(t, srv, first)

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go demo.Trickle(tctx, srv.Publisher, first, slog.New(slog.DiscardHandler))
	eventually(t, 20*time.Second, "a demo event delivered to the healthy demo endpoint", func() bool {
		page, err := srv.Deliveries.List(ctx, first.TenantID, deliveries.Filter{SubscriptionID: &first.Healthy, States: []string{"delivered"}})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Items) > 0
	})
	if r, err := http.Get(base + "/login"); err != nil || r.StatusCode != 200 {
		t.Fatalf("dashboard login page: %v %v", r, err)
	} else {
		r.Body.Close()
	}
}

// seedTwice seeds the demo twice and checks that the second found what the first made.
func seedTwice(t *testing.T, srv *server.Server, rcv *demo.Receiver) demo.Seeded {
	t.Helper()
	ctx := context.Background()
	first, err := demo.Seed(ctx, services(srv), rcv)
	if err != nil {
		t.Fatal(err)
	}
	again, err := demo.Seed(ctx, services(srv), rcv)
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Fatalf("seeding twice made new objects: %+v then %+v", first, again)
	}
	return first
}

// checkSeeded checks the seeded tenant: two subscriptions, the printed login working, and every change
// recorded, the seed's (made outside any request) as the system's.
func checkSeeded(t *testing.T, srv *server.Server, s demo.Seeded) {
	t.Helper()
	ctx := context.Background()
	subs, err := srv.Subscriptions.List(ctx, s.TenantID)
	if err != nil || len(subs) != 2 {
		t.Fatalf("demo subscriptions: %d, %v", len(subs), err)
	}
	if _, err := srv.Tenants.CheckLogin(ctx, "demo@hookline.localhost", demo.DemoPassword()); err != nil {
		t.Fatalf("the printed demo login does not work: %v", err)
	}
	created, err := srv.Activity.List(ctx, s.TenantID, activity.Filter{Action: activity.SubscriptionCreated})
	if err != nil || len(created.Items) != 2 {
		t.Fatalf("the seed's subscription.created entries: %d (%v), want 2", len(created.Items), err)
	}
	for _, e := range created.Items {
		if e.Actor.Kind != activity.ActorSystem || e.Actor.Name != "demo seed" {
			t.Errorf("seeded subscription %s recorded as made by %+v, want the system's demo seed", e.Object.ID, e.Actor)
		}
	}
}

// The played-back outage: two tenants' shipping endpoints, every delivery in yesterday's window dead with
// real attempts (503, then 404) at yesterday's times; once per database; and a replay of the window
// delivers them, because the endpoints answer 200 now. Not parallel, as TestSeedDeliversThroughTheGuardedSender.
func TestSeedOutagePlaysBackYesterday(t *testing.T) {
	rcv, err := demo.StartReceiver(demo.ReceiverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	cfg := servertest.Config(t, dbURL)
	cfg.AllowPrivateNetworks = false
	cfg.DataDir = t.TempDir()
	cfg.SecretKey = sharedKey
	if err := demo.PrepareCredentials(&cfg); err != nil {
		t.Fatal(err)
	}
	ctx := activity.System(context.Background(), "test setup")
	// Not started: the outage is played back before the server's workers run, as make run does.
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{AllowAddrs: []string{rcv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	seeded, err := demo.Seed(ctx, services(srv), rcv)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := demo.SeedOutage(ctx, services(srv), rcv, seeded); err != nil {
			t.Fatal(err)
		}
	}
	from, to := demo.OutageWindow(time.Now())
	checkOutageDeadLetters(t, srv, from, to)
	// The banner invites the replay while the outage's dead letters are dead, naming the day it happened.
	o, err := demo.OutageNow(ctx, services(srv))
	if err != nil {
		t.Fatal(err)
	}
	if o.Dead != 60 || o.Queued != 0 || !o.Played || !o.Day.Equal(from.Truncate(24*time.Hour)) {
		t.Fatalf("outage before the replay: %+v, want 60 dead on %s", o, from.Format(time.DateOnly))
	}
	banner := welcome(cfg, seeded, o)
	for _, want := range []string{"on " + from.Format("Mon 2 Jan 2006") + " from 14:00 to 14:30 UTC", "60 of the deliveries it hit are still dead letters", "/admin/dead and replay them"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner before the replay lacks %q:\n%s", want, banner)
		}
	}
	replayOutage(t, srv, from, to)
	// At the next start the replay has been done: the banner says so and invites nothing.
	if o, err = demo.OutageNow(ctx, services(srv)); err != nil {
		t.Fatal(err)
	}
	if o.Dead != 0 || o.Queued != 0 || !o.Played {
		t.Fatalf("outage after the replay: %+v, want nothing dead or queued", o)
	}
	banner = welcome(cfg, seeded, o)
	if strings.Contains(banner, "replay them") || strings.Contains(banner, "/admin/dead") || !strings.Contains(banner, "no dead letters left") {
		t.Errorf("banner after the replay:\n%s", banner)
	}
}

// checkOutageDeadLetters checks the outage window's dead letters: 60, in both tenants, each failed for a
// permanent status after a 503 and a 404 at the outage's times.
func checkOutageDeadLetters(t *testing.T, srv *server.Server, from, to time.Time) {
	t.Helper()
	ctx := context.Background()
	page, err := srv.Replays.DeadLetters(ctx, replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}, 100, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 60 {
		t.Fatalf("dead letters in the outage window: %d, want 60 (2 tenants × 30 minutes)", page.Total)
	}
	tenants := map[string]bool{}
	for _, d := range page.Items {
		tenants[d.TenantName] = true
		if d.State != delivery.Failed || d.DeadReason == nil || *d.DeadReason != delivery.ReasonPermanentStatus {
			t.Fatalf("delivery %s is %s (%v), want failed for a permanent status", d.ID, d.State, d.DeadReason)
		}
		det, err := srv.Deliveries.Get(ctx, d.TenantID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(det.Attempts) != 2 || *det.Attempts[0].Status != 503 || *det.Attempts[1].Status != 404 {
			t.Fatalf("attempts of %s: %+v, want 503 then 404", d.ID, det.Attempts)
		}
		for _, a := range det.Attempts {
			if a.StartedAt.Before(from) || a.StartedAt.After(to.Add(10*time.Minute)) {
				t.Fatalf("attempt at %s, outside the played-back outage %s–%s", a.StartedAt, from, to)
			}
		}
	}
	if !tenants[demo.DemoTenant] || !tenants[demo.OutageTenant] {
		t.Fatalf("outage tenants: %v", tenants)
	}
}

// replayOutage replays the outage window, starts the server and waits for the 60 replayed deliveries to
// be delivered.
func replayOutage(t *testing.T, srv *server.Server, from, to time.Time) {
	t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	r, err := srv.Replays.Start(ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to},
		Spread: time.Second, Actor: "test"})
	if err != nil || r.Matched != 60 {
		t.Fatalf("replay: %+v, %v", r, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		t.Fatal(err)
	}
	delivered := 0
	eventually(t, 30*time.Second, "the 60 replayed outage deliveries delivered", func() bool {
		p, err := srv.Replays.Deliveries(ctx, r.ID, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		delivered = 0
		for _, d := range p.Items {
			if d.State == delivery.Delivered {
				delivered++
			}
		}
		return delivered == 60
	})
}

// welcome is the start-up banner as make run prints it.
func welcome(cfg config.Config, s demo.Seeded, o demo.Outage) string {
	var b strings.Builder
	demo.PrintWelcome(&b, cfg, s, "http://127.0.0.1:8081", o)
	return b.String()
}

// The banner in each state of the outage: dead letters (invite the replay), a replay under way (follow
// it), all done (where to see it), and no outage deliveries at all (retention deleted them: say nothing).
func TestWelcomeFollowsTheOutage(t *testing.T) {
	t.Parallel()
	cfg := config.Config{Addr: ":8080", DataDir: ".data", AdminToken: "hl_admin_x"}
	day := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		o         demo.Outage
		want, not string
	}{
		{demo.Outage{Dead: 60, Day: day, Played: true}, "on Tue 24 Nov 2026 from 14:00 to 14:30 UTC", "/admin/replays"},
		{demo.Outage{Queued: 12, Played: true}, "back in the queue (12 still to deliver)", "replay them"},
		{demo.Outage{Played: true}, "no dead letters left", "replay them"},
		{demo.Outage{}, "Demo receiver  http://127.0.0.1:8081", "Operators"},
	} {
		b := welcome(cfg, demo.Seeded{}, tc.o)
		if !strings.Contains(b, tc.want) || strings.Contains(b, tc.not) {
			t.Errorf("%+v: want %q and not %q in\n%s", tc.o, tc.want, tc.not, b)
		}
	}
}

// The receiver listens where it is told, the same address at every start, so a subscription pointed at it
// survives a restart; a port already taken is a clear error naming the setting that moves it.
func TestReceiverKeepsItsAddress(t *testing.T) {
	t.Parallel()
	// A free port, found by listening and closing: another process may take it in between, so a few tries.
	var first *demo.Receiver
	var addr string
	for try := 0; first == nil; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		ln.Close()
		if first, err = demo.StartReceiver(demo.ReceiverOptions{Addr: addr, NoLatency: true}); err != nil && try == 2 {
			t.Fatal(err)
		}
	}
	if first.Addr() != addr || first.URL("/flaky") != "http://"+addr+"/flaky" {
		t.Fatalf("receiver at %s, want %s", first.Addr(), addr)
	}
	_, err := demo.StartReceiver(demo.ReceiverOptions{Addr: addr})
	if err == nil || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), "HOOKLINE_DEMO_RECEIVER_ADDR") {
		t.Fatalf("second receiver on %s: %v", addr, err)
	}
	first.Close()
	again, err := demo.StartReceiver(demo.ReceiverOptions{Addr: addr, NoLatency: true})
	if err != nil {
		t.Fatalf("restart on %s: %v", addr, err)
	}
	defer again.Close()
	res, err := http.Post(again.URL("/healthy"), "application/json", strings.NewReader(`{}`))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/healthy after the restart: %v %v", res, err)
	}
	res.Body.Close()
}

// What /flaky does to deliveries, measured: 2,000 deliveries through real HTTP, each retried after a 500
// and ended by a 200 or a 400, as the engine does, on a seeded source. The README's sentence about it is
// written from these figures: a quarter of attempts 500, about 1 in 25 a 400, about 1 delivery in 19 dead.
func TestFlakySplit(t *testing.T) {
	t.Parallel()
	rcv, err := demo.StartReceiver(demo.ReceiverOptions{Rand: rand.New(rand.NewPCG(16, 2026)), NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	const deliveries = 2000
	attempts := map[int]int{}
	dead, retried := 0, 0
	for range deliveries {
		for n := 1; ; n++ {
			res, err := http.Post(rcv.URL("/flaky"), "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			attempts[res.StatusCode]++
			if res.StatusCode == http.StatusInternalServerError {
				continue
			}
			if res.StatusCode == http.StatusBadRequest {
				dead++
			} else if n > 1 {
				retried++
			}
			break
		}
	}
	total := attempts[200] + attempts[400] + attempts[500]
	if len(attempts) != 3 {
		t.Fatalf("answers other than 200, 400 and 500: %v", attempts)
	}
	share := func(n, of int) float64 { return float64(n) / float64(of) }
	t.Logf("%d attempts: %.1f%% 500, %.1f%% 400; %d deliveries: %.1f%% dead (400), %.1f%% of the delivered after a retry",
		total, 100*share(attempts[500], total), 100*share(attempts[400], total), deliveries,
		100*share(dead, deliveries), 100*share(retried, deliveries-dead))
	check := func(what string, got, lo, hi float64) {
		if got < lo || got > hi {
			t.Errorf("%s: %.3f, want between %.3f and %.3f", what, got, lo, hi)
		}
	}
	check("attempts answered 500", share(attempts[500], total), 0.22, 0.28)
	check("attempts answered 400", share(attempts[400], total), 0.03, 0.05)
	check("deliveries dead", share(dead, deliveries), 0.04, 0.07)
	check("delivered ones retried first", share(retried, deliveries-dead), 0.22, 0.28)
}

// The demo receiver's /hang never answers, so an operator can watch a circuit open with `make run`.
func TestReceiverHangs(t *testing.T) {
	t.Parallel()
	rcv, err := demo.StartReceiver(demo.ReceiverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	client := &http.Client{Timeout: 300 * time.Millisecond}
	res, err := client.Post(rcv.URL("/hang"), "application/json", strings.NewReader(`{}`))
	if err == nil {
		res.Body.Close()
		t.Fatalf("/hang answered %d", res.StatusCode)
	}
}

// The demo's operator endpoint accepts notifications signed with the secret ConfigureOperator chose, and
// refuses a tampered one; /always-fail always fails.
func TestReceiverOperatorEndpoint(t *testing.T) {
	t.Parallel()
	rcv, err := demo.StartReceiver(demo.ReceiverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	var cfg config.Config
	rcv.ConfigureOperator(&cfg, slog.New(slog.DiscardHandler))
	if cfg.OperatorWebhookURL != rcv.URL("/operator") || !strings.HasPrefix(cfg.OperatorWebhookSecret, "whsec_") {
		t.Fatalf("operator endpoint not configured: %q", cfg.OperatorWebhookURL)
	}
	body := []byte(`{"type":"subscription.failing","timestamp":"2026-01-01T00:00:00Z","data":{}}`)
	post := func(b []byte) int {
		sig, err := delivery.Sign([]string{cfg.OperatorWebhookSecret}, "msg_1", 1700000000, body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", cfg.OperatorWebhookURL, strings.NewReader(string(b)))
		req.Header.Set("webhook-id", "msg_1")
		req.Header.Set("webhook-timestamp", "1700000000")
		req.Header.Set("webhook-signature", sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(body); got != http.StatusOK {
		t.Fatalf("signed notification: %d", got)
	}
	if got := post(append([]byte(nil), append(body[:len(body)-1], []byte(`,"x":1}`)...)...)); got != http.StatusBadRequest {
		t.Fatalf("tampered notification: %d, want 400", got)
	}
	res, err := http.Post(rcv.URL("/always-fail"), "application/json", strings.NewReader(`{}`))
	if err != nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/always-fail: %v %v", res, err)
	}
	res.Body.Close()
}
