package server_test

import (
	"slices"
	"testing"

	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
)

// servertest.StartWithBackground serves everything a process runs; Start (Options.WithoutBackground) the
// HTTP side and the token revocations' listener only, none of the background services.
func TestWithoutBackgroundStartsTheHTTPSideOnly(t *testing.T) {
	t.Parallel()
	background := []string{"replay runner", "event catalogue", "maintenance", "worker"}
	cfg := servertest.Config(t, dbURL)
	cfg.MetricsAddr = "127.0.0.1:0"
	full, _ := servertest.StartWithBackground(t, cfg, nil, server.Options{})
	if got, want := server.Serving(full), append([]string{"http", "metrics", "token listener"}, background...); !slices.Equal(got, want) {
		t.Errorf("StartWithBackground served %v, want %v", got, want)
	}
	httpOnly, base := servertest.Start(t, cfg, nil, server.Options{})
	if got, want := server.Serving(httpOnly), []string{"http", "metrics", "token listener"}; !slices.Equal(got, want) {
		t.Errorf("Start served %v, want %v", got, want)
	}
	if status, _ := get(t, base+"/healthz"); status != 200 {
		t.Errorf("/healthz of the HTTP-only server: %d", status)
	}
}
