package server_test

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"go.uber.org/goleak"
)

// A step of Serve that fails leaves nothing running of what the steps before it started: here the
// maintenance leader's start fails (it was started once already), after the main and metrics listeners,
// the replay runner and the event catalogue's poller have started. Serve returns the error with both
// addresses closed, every goroutine of the server gone and its pools closed; Stop then has nothing left
// to do.
func TestServeUndoesWhatItStartedWhenALaterStepFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := servertest.Config(t, dbURL)
	cfg.MetricsAddr = "127.0.0.1:0"
	ctx := context.Background()
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := server.StartMaintainer(ctx, srv); err != nil {
		t.Fatal(err)
	}
	// Started here, not by Serve: stopped here, before the leak check.
	defer func() { _ = server.StopMaintainer(ctx, srv) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ctx, ln); err == nil {
		_ = srv.Stop(ctx)
		t.Fatal("Serve succeeded though the maintenance leader could not start")
	} else {
		t.Logf("Serve: %v", err)
	}
	if srv.MetricsAddr() == "" {
		t.Fatal("the metrics listener was never opened: Serve failed before the step this test makes fail")
	}
	for _, addr := range []string{ln.Addr().String(), srv.MetricsAddr()} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the failed Serve", addr)
		}
	}
	if err := srv.Pool.Ping(ctx); err == nil {
		t.Error("the pool is still open after the failed Serve")
	}
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("Stop after the failed Serve: %v", err)
	}
}
