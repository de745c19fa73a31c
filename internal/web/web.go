// Package web is the customer dashboard: server-rendered pages (templ, web/templates) over the same domain
// services as the JSON API. Handlers parse, authorize, call a service and render a view model.
//
// This package owns the router, the middleware every page passes (security headers, cookies, forms, the
// cross-origin check), signing in and out, and portal sessions; the pages themselves live in the area
// packages (endpoints, deliveries, eventtypes, activitylog, admin) on the shared core.
//
// Safety: sessions live in PostgreSQL (scs, with the store in package session), renewed at sign-in, with idle and absolute timeouts;
// cookies are HttpOnly, SameSite=Lax and Secure under TLS; failed sign-ins are throttled per email and per
// address; every state-changing form is guarded by http.CrossOriginProtection; each customer sees only
// their tenant, and another tenant's ids are a 404.
package web

import (
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/web/activitylog"
	"github.com/hookline/hookline/internal/web/admin"
	"github.com/hookline/hookline/internal/web/core"
	deliverypages "github.com/hookline/hookline/internal/web/deliveries"
	"github.com/hookline/hookline/internal/web/endpoints"
	"github.com/hookline/hookline/internal/web/eventtypes"
	"github.com/hookline/hookline/internal/web/session"
	"github.com/hookline/hookline/web"
)

// Options are the dashboard's dependencies and settings. The services are the server's own, built once:
// the dashboard builds none of its own from a pool.
type Options struct {
	Tenants       *tenants.Service
	Subscriptions *subscriptions.Service
	Deliveries    *deliveries.Service
	Replays       *replays.Replays
	Publisher     *publish.Publisher
	// Activity is the activity log the Activity pages read.
	Activity *activity.Log
	// LoginThrottle counts failed sign-ins per email and per client address.
	LoginThrottle *tenants.LoginThrottle
	// Sessions is the session store (PostgreSQL's sessions table).
	Sessions *session.Store
	// Catalogue, when set, is the event catalogue the Event types page shows and the subscription forms
	// offer (nil: an empty one).
	Catalogue *catalogue.Service
	// Incidents, when set, puts a banner on every page of a tenant with an open incident and lists a
	// subscription's incidents on its page.
	Incidents *incidents.Service
	// Portal, when set, lets customers in by single-use portal links (GET /portal/{token}).
	Portal *portal.Service
	// History, when set, is the delivery history /admin shows (partitions, retention).
	History *history.Monitor
	// Polling, when set, lists polling subscriptions' consumers on their pages.
	Polling *polling.Service
	// Policy is the server's retry schedule, told to customers in plain words.
	Policy delivery.RetryPolicy
	// AttemptTimeout and MaxManualRetries complete the delivery contract shown on pages.
	AttemptTimeout   time.Duration
	MaxManualRetries int
	Now              func() time.Time
	Log              *slog.Logger
	// IdleTimeout signs a session out after this long without a request (default 2 h);
	// Lifetime after this long in any case (default 12 h).
	IdleTimeout time.Duration
	Lifetime    time.Duration
	// PublicURL is the dashboard's public base URL; with https the session cookie is always Secure and
	// every answer carries Strict-Transport-Security (the server may sit behind a TLS-terminating proxy).
	PublicURL string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed;
	// from anyone else those headers are ignored.
	TrustedProxies []netip.Prefix
	// Brand is the platform's name, logo and accent colour (zero: Hookline's own).
	Brand brand.Brand
	// FrameAncestors are the origins allowed to show the dashboard in a frame (the customer portal
	// embedded in the platform's app); none: no framing. They need an https PublicURL (config checks).
	FrameAncestors []string
}

// Handler serves the dashboard: sign-in and sessions here, each area's pages in its own package.
type Handler struct {
	*core.Handler
	throttle  *tenants.LoginThrottle
	proxies   []netip.Prefix
	httpsOnly bool // the public URL is https

	endpoints   *endpoints.Handler
	deliveries  *deliverypages.Handler
	eventTypes  *eventtypes.Handler
	activityLog *activitylog.Handler
	admin       *admin.Handler
}

// TestEventType is the event type "Send test event" publishes, to one subscription whatever its event types,
// without a brand; under a brand it names no product (brand.Brand.TestEventType).
const TestEventType = brand.DefaultTestEventType

// New builds the dashboard.
func New(o Options) *Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Hour
	}
	if o.Lifetime <= 0 {
		o.Lifetime = 12 * time.Hour
	}
	c := &core.Handler{
		Tenants: o.Tenants, Subs: o.Subscriptions, Dels: o.Deliveries, Replays: o.Replays, Publisher: o.Publisher,
		Policy: o.Policy, Timeout: o.AttemptTimeout, MaxManual: o.MaxManualRetries, Now: o.Now, Log: o.Log,
		Incidents: o.Incidents, Portal: o.Portal, Catalogue: o.Catalogue, Activity: o.Activity, History: o.History,
		Brand: o.Brand, FrameAncestors: o.FrameAncestors, Polling: o.Polling,
	}
	if c.Brand.Name == "" {
		c.Brand.Name = brand.DefaultName
	}
	h := &Handler{Handler: c, throttle: o.LoginThrottle, proxies: o.TrustedProxies}
	if u, err := url.Parse(o.PublicURL); err == nil && u.Scheme == "https" {
		h.httpsOnly = true
	}
	h.Sessions = session.NewManager(o.Sessions, o.IdleTimeout, o.Lifetime, h.sessionError)
	h.Sessions.Cookie.Secure = h.httpsOnly
	h.embeddable()
	h.deliveries = deliverypages.New(c)
	h.endpoints = endpoints.New(c, h.deliveries)
	h.eventTypes = eventtypes.New(c)
	h.activityLog = activitylog.New(c)
	h.admin = admin.New(c, h.endpoints, h.activityLog)
	return h
}

// Routes returns the dashboard's router, to mount at "/". Static assets are public; every other page needs
// a signed-in user and leads to /login otherwise. Cross-origin state-changing requests are refused with 403.
func (h *Handler) Routes() http.Handler {
	r := chi.NewRouter()
	r.Use(h.hsts)
	// A path no page has (bytes that are not UTF-8, control characters) never reaches a handler: it is an
	// unknown page, like a malformed id (signed out it leads to /login, signed in it is the 404 page).
	r.Use(httpx.CleanPath(h.unknownPage()))
	h.brandRoutes(r)
	static := http.StripPrefix("/static/", http.FileServerFS(web.Static))
	r.Get("/static/*", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		static.ServeHTTP(w, r)
	})
	r.Get("/favicon.ico", h.favicon)

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(h.CrossOrigin))

	r.Group(func(r chi.Router) {
		// forms bounds and checks every form once, after the cross-origin check (a refused request is not read).
		r.Use(h.securityHeaders, h.secureCookies, cop.Handler, session.Stale, h.Sessions.LoadAndSave, h.forms)
		r.Get("/login", h.loginPage)
		r.Post("/login", h.login)
		r.Get("/logout", h.logoutPage)
		r.Post("/logout", h.logout)
		r.Get("/portal/{token}", h.redeemPortal)

		r.Group(func(r chi.Router) {
			r.Use(h.requireUser)
			r.Use(h.changesAllowed) // a view-only portal session changes nothing (portal.go)
			h.customerRoutes(r)
			// The operator pages, for operators only: anyone else gets the 404 page, so a customer cannot even
			// tell they exist. One middleware, not a check in each handler.
			r.Group(func(r chi.Router) {
				r.Use(h.admin.RequireAdmin)
				h.adminRoutes(r)
			})
		})
	})
	notFound := h.unknownPage()
	r.NotFound(notFound.ServeHTTP)
	r.MethodNotAllowed(notFound.ServeHTTP)
	return r
}

// customerRoutes are the pages of a signed-in user (a customer's own tenant; an operator may open any).
func (h *Handler) customerRoutes(r chi.Router) {
	s, d := h.endpoints, h.deliveries
	r.Get("/", s.Home)
	r.Get("/subscriptions/new", s.NewEndpoint)
	r.Post("/subscriptions", s.CreateEndpoint)
	r.Post("/subscriptions/filter-test", s.NewEndpointFilterTest)
	r.Post("/subscriptions/{id}/filter-test", s.EditEndpointFilterTest)
	r.Get("/subscriptions/{id}", s.Subscription)
	r.Post("/subscriptions/{id}", s.UpdateEndpoint)
	r.Get("/subscriptions/{id}/edit", s.EditEndpoint)
	r.Get("/subscriptions/{id}/delete", s.DeleteEndpointPage)
	r.Post("/subscriptions/{id}/delete", s.DeleteEndpoint)
	r.Post("/subscriptions/{id}/secret", s.RevealSecret)
	r.Post("/subscriptions/{id}/rotate-secret", s.RotateSecret)
	r.Post("/subscriptions/{id}/pause", s.Pause)
	r.Post("/subscriptions/{id}/resume", s.Resume)
	r.Post("/subscriptions/{id}/test", s.SendTest)
	r.Post("/subscriptions/{id}/skip-key", s.SkipKey)
	r.Get("/find", d.Find)
	r.Get("/events/{id}", d.Event)
	r.Get("/deliveries", d.DeliveriesPage)
	r.Get("/deliveries/{id}", d.Delivery)
	r.Post("/deliveries/{id}/resend", d.Resend)
	r.Post("/deliveries/{id}/retry-now", d.RetryNow)
	r.Post("/subscriptions/{id}/recover", s.Recover)
	r.Get("/recovers/{id}", s.RecoverPage)
	r.Get("/activity", h.activityLog.TenantActivity)
	r.Get("/event-types", h.eventTypes.EventTypes)
	r.Post("/event-types/{name}/send", h.eventTypes.SendExample)
}

// adminRoutes are the operator console's pages (requireAdmin in front of them).
func (h *Handler) adminRoutes(r chi.Router) {
	a := h.admin
	r.Get("/admin", a.Admin)
	r.Get("/admin/tenants/{id}", a.AdminTenant)
	r.Post("/admin/tenants/{id}/tokens/{token}/revoke", a.RevokeToken)
	r.Get("/admin/tenants/new", a.NewTenant)
	r.Post("/admin/tenants", a.CreateTenant)
	r.Get("/admin/tenants/{id}/users", a.TenantUsers)
	r.Get("/admin/tenants/{id}/activity", a.AdminTenantActivity)
	r.Post("/admin/tenants/{id}/users", a.CreateUser)
	r.Post("/admin/tenants/{id}/users/{user}/remove", a.RemoveUser)
	r.Post("/admin/tenants/{id}/users/{user}/password", a.ResetPassword)
	r.Get("/admin/tenants/{id}/tokens/new", a.NewTokenPage)
	r.Post("/admin/tenants/{id}/tokens", a.CreateToken)
	r.Get("/admin/dead", a.DeadLetters)
	r.Get("/admin/replay", a.BulkReplay)
	r.Post("/admin/replay", a.BulkReplay)
	r.Get("/admin/replays", a.ReplayLog)
	r.Get("/admin/replays/{id}", a.ReplayPage)
}

// unknownPage answers a path that is no page: signed out it leads to /login like every page; signed in
// it is the 404 page.
func (h *Handler) unknownPage() http.Handler {
	return chain(http.HandlerFunc(h.NotFound), h.securityHeaders, h.secureCookies, session.Stale, h.Sessions.LoadAndSave, h.requireUser)
}

func (h *Handler) sessionError(w http.ResponseWriter, r *http.Request, err error) {
	h.Fail(w, r, err)
}
