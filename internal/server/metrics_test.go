package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) {
	testdb.Main(m, "server", func(u string) { dbURL = u })
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// With HOOKLINE_METRICS_ADDR, /metrics is served there and no longer on the main address.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	t.Parallel()
	cfg := servertest.Config(t, dbURL)
	cfg.MetricsAddr = "127.0.0.1:0"
	srv, base := servertest.Start(t, cfg, nil, server.Options{})
	if srv.MetricsAddr() == "" {
		t.Fatal("no metrics listener")
	}
	status, body := get(t, "http://"+srv.MetricsAddr()+"/metrics")
	if status != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("metrics address: %d %.200q", status, body)
	}
	if status, body := get(t, base+"/metrics"); status != http.StatusNotFound || strings.Contains(body, "go_goroutines") {
		t.Errorf("main address still serves /metrics: %d", status)
	}
	if status, _ := get(t, "http://"+srv.MetricsAddr()+"/api/v1/subscriptions"); status != http.StatusNotFound {
		t.Errorf("the metrics address serves the API: %d", status)
	}
	if status, _ := get(t, base+"/healthz"); status != http.StatusOK {
		t.Errorf("healthz: %d", status)
	}
	// Go's profiles are there too, and never on the main address.
	if status, body := get(t, "http://"+srv.MetricsAddr()+"/debug/pprof/"); status != http.StatusOK || !strings.Contains(body, "Types of profiles available") {
		t.Errorf("pprof on the metrics address: %d %.200q", status, body)
	}
	if _, body := get(t, base+"/debug/pprof/"); strings.Contains(body, "Types of profiles available") {
		t.Errorf("the main address serves pprof")
	}
}

// Without it, /metrics stays on the main address.
func TestMetricsOnTheMainAddressByDefault(t *testing.T) {
	t.Parallel()
	cfg := servertest.Config(t, dbURL)
	srv, base := servertest.Start(t, cfg, nil, server.Options{})
	if srv.MetricsAddr() != "" {
		t.Errorf("a metrics listener without HOOKLINE_METRICS_ADDR: %s", srv.MetricsAddr())
	}
	if status, body := get(t, base+"/metrics"); status != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("main address /metrics: %d", status)
	}
}
