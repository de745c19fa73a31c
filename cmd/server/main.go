// Command server is Hookline: API, dashboard, metrics and delivery workers in one process.
// `server migrate` only migrates the database; `server reencrypt` re-encrypts every stored secret under
// the first HOOKLINE_SECRET_KEY key; `server version` (or -version) prints the build; `server healthcheck`
// asks a running server's /readyz (the container image has no shell or curl for a health check to run);
// `server -h` lists the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/demo"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/migrate"
	"github.com/hookline/hookline/internal/pgdev"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/sleep"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/version"
	"github.com/jackc/pgx/v5/pgxpool"

	// Time zone data inside the binary: the image is built from scratch and has no /usr/share/zoneinfo.
	_ "time/tzdata"
)

// defaultGCPercent is the server's GOGC unless the environment sets one (see run).
const defaultGCPercent = 400

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "hookline:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	// Before the configuration is read: printing the build must work without a database or valid settings.
	if len(args) == 1 && (args[0] == "version" || args[0] == "-version" || args[0] == "--version") {
		fmt.Println(version.Get())
		return nil
	}
	if len(args) > 0 && args[0] == "healthcheck" {
		return healthcheck(args[1:], os.Getenv)
	}
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if cfg.DatabaseURL == "" {
		if cfg.DatabaseURL, err = projectDatabase(ctx, cfg, log); err != nil {
			return err
		}
	}
	switch cfg.Command {
	case config.CommandMigrate:
		if err := migrate.Up(ctx, cfg.DatabaseURL); err != nil {
			return err
		}
		if err := makeHistoryPartitions(ctx, cfg, log); err != nil {
			return err
		}
		log.Info("database migrated")
		return nil
	case config.CommandReencrypt:
		return reencrypt(ctx, cfg, log)
	}
	// The server keeps little alive (tens of MiB) and allocates with every request and attempt, so at
	// Go's default (GOGC=100) it collected garbage many times a second: 400 took ingest from 1,913-2,021 to
	// 2,276-2,476 events/s on 2 cores, for a peak of about 60 MiB instead of 45. GOGC set in the
	// environment wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	return serve(ctx, cfg, log)
}

// newLogger is the process's logger (HOOKLINE_LOG_FORMAT), also slog's default.
func newLogger(cfg config.Config) *slog.Logger {
	var handler slog.Handler = slog.NewJSONHandler(os.Stderr, nil)
	if cfg.LogFormat == "text" {
		handler = slog.NewTextHandler(os.Stderr, nil)
	}
	log := slog.New(handler)
	slog.SetDefault(log)
	return log
}

// projectDatabase starts (or finds running) the project-managed PostgreSQL under the data directory and
// returns its URL: DATABASE_URL was left empty.
func projectDatabase(ctx context.Context, cfg config.Config, log *slog.Logger) (string, error) {
	dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "postgres"))
	if err != nil {
		return "", err
	}
	log.Info("DATABASE_URL is empty: starting the project-managed PostgreSQL", "dir", dir)
	return pgdev.Ensure(ctx, dir, log)
}

// serve runs the server (with the demo, under HOOKLINE_DEMO) until ctx ends or it fails, then stops it.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	var opts server.Options
	var receiver *demo.Receiver
	if cfg.Demo {
		var err error
		if receiver, err = startDemoReceiver(&cfg, &opts, log); err != nil {
			return err
		}
		defer receiver.Close()
	}
	srv, err := newServer(ctx, cfg, log, opts)
	if err != nil {
		return err
	}
	var d *demoRun
	if cfg.Demo {
		// Seeded before the workers start: the outage is played back on yesterday's clock.
		if d, err = seedDemo(ctx, srv, receiver); err != nil {
			return err
		}
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	log.Info("hookline serving", "addr", cfg.Addr)
	if d != nil {
		d.welcome(ctx, cfg, log)
	}
	select {
	case <-ctx.Done():
	case err := <-srv.Err():
		if err != nil {
			return err
		}
	}
	log.Info("shutting down: no new claims; finishing or releasing in-flight attempts")
	// The grace for running attempts, then time to record them: inside the contract's 30 s + the attempt
	// timeout, and kept even when the database has stopped answering (every step gives up at the deadline).
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.AttemptTimeout+10*time.Second)
	defer cancel()
	if err := srv.Stop(shutdownCtx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	log.Info("stopped")
	return nil
}

// startDemoReceiver starts the demo receiver and prepares the configuration and options for the demo:
// its credentials, its operator endpoint, its brand, and the receiver let through the SSRF guard.
func startDemoReceiver(cfg *config.Config, opts *server.Options, log *slog.Logger) (*demo.Receiver, error) {
	receiver, err := demo.StartReceiver(demo.ReceiverOptions{Addr: cfg.DemoReceiverAddr})
	if err != nil {
		return nil, err
	}
	// The SSRF guard lets the sender reach this exact loopback address and nothing else, which is why
	// the receiver has a listener of its own rather than a path on HOOKLINE_ADDR: the guard refuses
	// the server's own addresses, and an exception for them would let any subscription call the API.
	opts.AllowAddrs = []string{receiver.Addr()}
	if err := demo.PrepareCredentials(cfg); err != nil {
		receiver.Close()
		return nil, err
	}
	receiver.ConfigureOperator(cfg, log.With("component", "demo-operator"))
	demo.UseBrand(cfg)
	return receiver, nil
}

// demoRun is the demo as seeded at this start.
type demoRun struct {
	svc      demo.Services
	receiver *demo.Receiver
	seeded   demo.Seeded
	outage   demo.Outage
}

// seedDemo seeds the demo tenant and plays the outage back (once per database).
func seedDemo(ctx context.Context, srv *server.Server, receiver *demo.Receiver) (_ *demoRun, err error) {
	d := &demoRun{svc: demoServices(srv), receiver: receiver}
	if d.seeded, err = demo.Seed(ctx, d.svc, receiver); err != nil {
		return nil, err
	}
	if err := demo.SeedOutage(ctx, d.svc, receiver, d.seeded); err != nil {
		return nil, err
	}
	if d.outage, err = demo.OutageNow(ctx, d.svc); err != nil {
		return nil, err
	}
	return d, nil
}

// welcome prints where to go, and starts the embedding demo and the trickle of events, which run until
// ctx ends.
func (d *demoRun) welcome(ctx context.Context, cfg config.Config, log *slog.Logger) {
	demo.PrintWelcome(os.Stdout, cfg, d.seeded, d.receiver.URL(""), d.outage)
	embedErr := demo.StartEmbed(ctx, d.svc, d.seeded, cfg, log)
	if embedErr != nil {
		log.Warn("embedding demo not started", "err", embedErr)
	}
	demo.PrintPortalWelcome(os.Stdout, cfg, d.seeded, embedErr == nil)
	go demo.Trickle(ctx, d.svc.Publisher, d.seeded, log)
}

// demoServices are the server's services the demo works through.
func demoServices(srv *server.Server) demo.Services {
	return demo.Services{Tenants: srv.Tenants, Subscriptions: srv.Subscriptions, Deliveries: srv.Deliveries,
		Publisher: srv.Publisher, Catalogue: srv.Catalogue, Portal: srv.Portal,
		EnginePool: srv.EnginePool, Policy: srv.Policy, Open: srv.Keys.Open, Brand: srv.Brand.Name}
}

// startRetry is the pause between tries at starting while no database host accepts writes.
const startRetry = 2 * time.Second

// newServer is server.New, tried again every startRetry while no database host accepts writes (all down,
// or a failover under way): a process started then, by a deploy or its supervisor, waits for a primary
// rather than exiting, as a running one does. Any other error (a setting, a migration that fails) ends the
// start at once, as does SIGINT or SIGTERM.
func newServer(ctx context.Context, cfg config.Config, log *slog.Logger, opts server.Options) (*server.Server, error) {
	for {
		srv, err := server.New(ctx, cfg, log, opts)
		if err == nil || !pgfail.Unavailable(err) || ctx.Err() != nil {
			return srv, err
		}
		log.Warn("database unavailable at start (no host accepts writes); retrying", "err", err, "retry_in", startRetry)
		if !sleep.For(ctx, startRetry) {
			return nil, fmt.Errorf("stopped while waiting for the database: %w", err)
		}
	}
}

// reencrypt re-seals every signing secret and custom header value not under the first key (plaintext
// ones too), so the keys after it can be removed from HOOKLINE_SECRET_KEY once it has run. Every running
// instance must already have the first key: values sealed under it are unreadable to one that has not.
func reencrypt(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	box, err := secretbox.Parse(cfg.SecretKey)
	if err != nil {
		return fmt.Errorf("HOOKLINE_SECRET_KEY: %w", err)
	}
	if err := migrate.Up(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	pool, err := server.Connect(ctx, cfg.DatabaseURL, 2, server.PlanPerCall)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := subscriptions.SealStored(ctx, pool, box, subscriptions.SealAll)
	if err != nil {
		return fmt.Errorf("reencrypt: %w (what was re-encrypted so far stays so; add the missing key to HOOKLINE_SECRET_KEY and run it again)", err)
	}
	log.Info("re-encrypted every stored secret under the first key", "key_id", box.KeyIDs()[0],
		"signing_secrets", n.Secrets, "subscriptions_with_headers", n.Subscriptions)
	return nil
}

// healthcheck asks the server listening on HOOKLINE_ADDR (or the URL given) for /readyz and fails unless it
// answers 200: a container health check's command, for images with no shell or HTTP client but this binary.
func healthcheck(args []string, getenv func(string) string) error {
	target := ""
	switch len(args) {
	case 0:
		addr := getenv("HOOKLINE_ADDR")
		if addr == "" {
			addr = ":8080"
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("healthcheck: HOOKLINE_ADDR %q: %w", addr, err)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		target = "http://" + net.JoinHostPort(host, port) + "/readyz"
	case 1:
		target = args[0]
	default:
		return errors.New("usage: server healthcheck [URL]; the URL defaults to HOOKLINE_ADDR's /readyz")
	}
	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Get(target)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", target, res.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// makeHistoryPartitions makes the history's partitions ahead, as a server's start would, so that a
// migrated database takes rows before any server runs on it.
func makeHistoryPartitions(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("history partitions: %w", err)
	}
	defer pool.Close()
	_, err = history.New(pool, history.Options{Interval: cfg.PartitionInterval, Logger: log}).Make(ctx)
	return err
}
