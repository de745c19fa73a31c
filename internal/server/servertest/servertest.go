// Package servertest starts real Hookline servers for tests in other packages: the API, the dashboard
// and, when asked, the background services, on a loopback port, stopped when the test ends.
//
// Start starts the HTTP side only (server.Options.WithoutBackground): the API, the dashboard, the
// metrics address. Most tests need no more: they check answers and pages, publish nothing to be
// delivered, or drive the engine by hand, on a database other tests share, where a background service
// would claim, rescue or sweep their rows and they would wait on its intervals.
//
// StartWithBackground starts everything a process runs, as cmd/server does: the HTTP side and the
// background services (the delivery worker, the maintenance leader, the replay runner, the event
// catalogue's poller). A test asks for it when it waits on one of them: a delivery delivered, retried or
// dead-lettered, a replay run, the catalogue reloaded after another process's change, an incident
// opened or a session pruned by the maintenance leader.
package servertest

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/server"
)

// Config is the configuration of a test server: the given database, the contract's defaults otherwise,
// private networks allowed (receivers are httptest servers on 127.0.0.1) and a few workers.
func Config(t testing.TB, databaseURL string) config.Config {
	t.Helper()
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatalf("config defaults: %v", err)
	}
	cfg.DatabaseURL = databaseURL
	cfg.Addr = "127.0.0.1:0"
	cfg.AllowPrivateNetworks = true
	cfg.Workers = 4
	return cfg
}

// Start builds a server with cfg, serves its HTTP side (not the background services, whatever
// opts.WithoutBackground says) on a free loopback port and stops it when the test ends. It returns the
// server and its base URL (http://127.0.0.1:port).
func Start(t testing.TB, cfg config.Config, log *slog.Logger, opts server.Options) (*server.Server, string) {
	t.Helper()
	opts.WithoutBackground = true
	return start(t, cfg, log, opts)
}

// StartWithBackground is Start with the background services running too, as in a real process.
func StartWithBackground(t testing.TB, cfg config.Config, log *slog.Logger, opts server.Options) (*server.Server, string) {
	t.Helper()
	opts.WithoutBackground = false
	return start(t, cfg, log, opts)
}

func start(t testing.TB, cfg config.Config, log *slog.Logger, opts server.Options) (*server.Server, string) {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx := context.Background()
	srv, err := server.New(ctx, cfg, log, opts)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return srv, "http://" + ln.Addr().String()
}
