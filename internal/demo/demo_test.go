package demo_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/demo"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "demo", func(u string) { dbURL = u }) }

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
