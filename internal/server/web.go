package server

import (
	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/web"
)

// mountWeb mounts the dashboard at "/". Its cross-origin (CSRF) protection and sessions apply to the
// dashboard's routes only: the API under /api/v1 stays bearer-only.
func (s *Server) mountWeb(r chi.Router) {
	// config.Load has validated the list; a Config built by hand with a bad one trusts no proxy.
	proxies, err := config.ParseTrustedProxies(s.Config.TrustedProxies)
	if err != nil {
		s.log.Error("HOOKLINE_TRUSTED_PROXIES ignored", "err", err)
	}
	// config.Load has validated the origins too.
	origins, err := config.ParseFrameAncestors(s.Config.PortalFrameAncestors)
	if err != nil {
		s.log.Error("HOOKLINE_PORTAL_FRAME_ANCESTORS ignored", "err", err)
	}
	h := web.New(web.Options{
		Tenants: s.Tenants, Subscriptions: s.Subscriptions, Deliveries: s.Deliveries,
		Activity: s.Activity, LoginThrottle: s.LoginThrottle, Sessions: s.Sessions,
		Replays: s.Replays, Incidents: s.Incidents, Portal: s.Portal, Catalogue: s.Catalogue,
		Publisher: s.Publisher, Policy: s.Policy, AttemptTimeout: s.Config.AttemptTimeout,
		MaxManualRetries: s.Config.MaxManualRetries, Now: s.now, Log: s.log.With("component", "dashboard"),
		PublicURL: s.Config.PublicURL, TrustedProxies: proxies, Brand: s.Brand, FrameAncestors: origins,
		History: s.historyMonitor, Polling: s.Polling,
	})
	r.Mount("/", h.Routes())
}
