package demo_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/demo"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "demo", func(u string) { dbURL = u }) }

// sharedKey is the tests' HOOKLINE_SECRET_KEY: they share one database (and its demo tenants, sealed
// under the key of whichever test seeded them) but not a data directory, whose secret-key file would
// differ.
var sharedKey = secretbox.NewKey()

// make run's secret key: made once under the data directory, kept across runs, never overriding a
// configured one, and a damaged file is an error rather than a new key (the old one sealed the database).
func TestPrepareCredentialsKeepsOneSecretKey(t *testing.T) {
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

// make run's path: credentials prepared, the demo receiver allowed through the SSRF guard (private
// networks stay refused), the tenant seeded twice without duplicates, and demo events really delivered.
func TestSeedDeliversThroughTheGuardedSender(t *testing.T) {
	rcv, err := demo.StartReceiver()
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
	srv, base := servertest.Start(t, cfg, nil, server.Options{AllowAddrs: []string{rcv.Addr()}})
	ctx := context.Background()

	first, err := demo.Seed(ctx, srv, rcv)
	if err != nil {
		t.Fatal(err)
	}
	again, err := demo.Seed(ctx, srv, rcv)
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Fatalf("seeding twice made new objects: %+v then %+v", first, again)
	}
	subs, err := srv.Subscriptions.List(ctx, first.TenantID)
	if err != nil || len(subs) != 2 {
		t.Fatalf("demo subscriptions: %d, %v", len(subs), err)
	}
	if _, err := srv.Tenants.CheckLogin(ctx, "demo@hookline.localhost", demo.DemoPassword()); err != nil {
		t.Fatalf("the printed demo login does not work: %v", err)
	}

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go demo.Trickle(tctx, srv, first, srv.Log)
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, err := srv.Deliveries.List(ctx, first.TenantID, delivery.Filter{SubscriptionID: &first.Healthy, States: []string{"delivered"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no demo event was delivered to the healthy demo endpoint")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r, err := http.Get(base + "/login"); err != nil || r.StatusCode != 200 {
		t.Fatalf("dashboard login page: %v %v", r, err)
	}
}

// The played-back outage: two tenants' shipping endpoints, every delivery in yesterday's window dead with
// real attempts (503, then 404) at yesterday's times; once per database; and a replay of the window
// delivers them, because the endpoints answer 200 now.
func TestSeedOutagePlaysBackYesterday(t *testing.T) {
	rcv, err := demo.StartReceiver()
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
	ctx := context.Background()
	// Not started: the outage is played back before the server's workers run, as make run does.
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{AllowAddrs: []string{rcv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	seeded, err := demo.Seed(ctx, srv, rcv)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := demo.SeedOutage(ctx, srv, rcv, seeded); err != nil {
			t.Fatal(err)
		}
	}
	from, to := demo.OutageWindow(time.Now())
	page, err := srv.Replays.DeadLetters(ctx, delivery.DeadFilter{CreatedFrom: &from, CreatedTo: &to}, 100, "", 0)
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

	r, err := srv.Replays.Start(ctx, delivery.ReplayRequest{Filter: delivery.DeadFilter{CreatedFrom: &from, CreatedTo: &to},
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := srv.Replays.Deliveries(ctx, r.ID, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		delivered := 0
		for _, d := range p.Items {
			if d.State == delivery.Delivered {
				delivered++
			}
		}
		if delivered == 60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 60 replayed outage deliveries delivered", delivered)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The demo receiver's /hang never answers, so an operator can watch a circuit open with `make run`.
func TestReceiverHangs(t *testing.T) {
	rcv, err := demo.StartReceiver()
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
	rcv, err := demo.StartReceiver()
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
