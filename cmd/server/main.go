// Command server is Hookline: API, dashboard, metrics and delivery workers in one process.
// `server migrate` only migrates the database; `server -h` lists the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/demo"
	"github.com/hookline/hookline/internal/migrate"
	"github.com/hookline/hookline/internal/pgdev"
	"github.com/hookline/hookline/internal/server"
)

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
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	var handler slog.Handler = slog.NewJSONHandler(os.Stderr, nil)
	if cfg.LogFormat == "text" {
		handler = slog.NewTextHandler(os.Stderr, nil)
	}
	log := slog.New(handler)
	slog.SetDefault(log)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if cfg.DatabaseURL == "" {
		dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "postgres"))
		if err != nil {
			return err
		}
		log.Info("DATABASE_URL is empty: starting the project-managed PostgreSQL", "dir", dir)
		if cfg.DatabaseURL, err = pgdev.Ensure(ctx, dir, log); err != nil {
			return err
		}
	}
	if config.MigrateOnly(args) {
		if err := migrate.Up(ctx, cfg.DatabaseURL); err != nil {
			return err
		}
		log.Info("database migrated")
		return nil
	}

	var opts server.Options
	var receiver *demo.Receiver
	if cfg.Demo {
		if receiver, err = demo.StartReceiver(); err != nil {
			return err
		}
		defer receiver.Close()
		opts.AllowAddrs = []string{receiver.Addr()}
		if err := demo.PrepareCredentials(&cfg); err != nil {
			return err
		}
	}
	srv, err := server.New(ctx, cfg, log, opts)
	if err != nil {
		return err
	}
	var seeded demo.Seeded
	if cfg.Demo {
		// Seeded before the workers start: the outage is played back on yesterday's clock.
		if seeded, err = demo.Seed(ctx, srv, receiver); err != nil {
			return err
		}
		if err := demo.SeedOutage(ctx, srv, receiver, seeded); err != nil {
			return err
		}
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	log.Info("hookline serving", "addr", cfg.Addr)
	if cfg.Demo {
		demo.PrintWelcome(os.Stdout, cfg, seeded)
		go demo.Trickle(ctx, srv, seeded, log)
	}

	select {
	case <-ctx.Done():
	case err := <-srv.Err():
		if err != nil {
			return err
		}
	}
	log.Info("shutting down: no new claims; finishing or releasing in-flight attempts")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.AttemptTimeout+10*time.Second)
	defer cancel()
	if err := srv.Stop(shutdownCtx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	log.Info("stopped")
	return nil
}
