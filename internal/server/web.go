package server

import (
	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/web"
)

// mountWeb mounts the dashboard at "/". Its cross-origin (CSRF) protection and sessions apply to the
// dashboard's routes only: the API under /api/v1 stays bearer-only.
func (s *Server) mountWeb(r chi.Router) {
	h := web.New(web.Options{
		Pool: s.Pool, Tenants: s.Tenants, Subscriptions: s.Subscriptions, Deliveries: s.Deliveries,
		Replays:   s.Replays,
		Publisher: s.Publisher, Policy: s.Policy, AttemptTimeout: s.Config.AttemptTimeout,
		MaxManualRetries: s.Config.MaxManualRetries, Now: s.Now, Log: s.Log.With("component", "dashboard"),
	})
	r.Mount("/", h.Routes())
}
