package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/api"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves everything: API, dashboard, health and metrics.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(httpx.Middleware(s.log, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			api.RenderPanic(w, r)
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
	}))
	r.Use(baseSecurityHeaders)
	// Inside the logging middleware, which recovers panics: the span still ends (as a 500) when one passes.
	r.Use(s.tracing.Middleware)
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	r.Get("/readyz", s.ready)
	if s.Config.MetricsAddr == "" {
		r.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	} else {
		// On its own (internal) address only: the public one must not tell anyone the process's figures.
		r.Handle("/metrics", http.NotFoundHandler())
	}
	a := &api.API{Tenants: s.Tenants, Subscriptions: s.Subscriptions, Deliveries: s.Deliveries, Replays: s.Replays, Publisher: s.Publisher, Portal: s.Portal,
		Activity: s.Activity, Catalogue: s.Catalogue, Polling: s.Polling,
		Limits: api.NewTokenLimits(s.Config.APIRatePerSecond, s.Config.APIBurst, s.Config.APIRateWait, s.now)}
	r.Mount("/api/v1", a.Routes())
	s.mountWeb(r)
	return r
}

// ready answers /readyz: 200 while the database answers.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain")
	if err := s.Pool.Ping(ctx); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("database unreachable\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// baseSecurityHeaders go on every answer (API, health, metrics); the dashboard sets its own, stricter page
// policy on top. JSON and text answers never need to run script, be framed or be sniffed as HTML.
func baseSecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
