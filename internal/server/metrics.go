package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsServer serves /metrics on HOOKLINE_METRICS_ADDR, a service of its own started by Serve; nil
// when the variable is empty (/metrics is then on the main address).
func (s *Server) metricsServer() *httpServer {
	if s.Config.MetricsAddr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	// Go's profiles, for operators diagnosing CPU or memory: only here, on the address that is kept
	// off the public network, never on the main one.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &httpServer{
		name: "listen on HOOKLINE_METRICS_ADDR", addr: s.Config.MetricsAddr,
		srv: &http.Server{
			Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		},
		ended: func(err error) {
			if !errors.Is(err, http.ErrServerClosed) {
				s.serveErr <- fmt.Errorf("metrics: %w", err)
			}
		},
	}
}
