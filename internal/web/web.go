// Package web is the customer dashboard: server-rendered pages (templ, web/templates) over the same domain
// services as the JSON API. Handlers parse, authorize, call a service and render a view model.
//
// Safety: sessions live in PostgreSQL (scs, with the store in session.go), renewed at sign-in, with idle and absolute timeouts;
// cookies are HttpOnly, SameSite=Lax and Secure under TLS; failed sign-ins are throttled per email and per
// address; every state-changing form is guarded by http.CrossOriginProtection; each customer sees only
// their tenant, and another tenant's ids are a 404.
package web

import (
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options are the dashboard's dependencies and settings.
type Options struct {
	Pool          *pgxpool.Pool
	Tenants       *tenants.Service
	Subscriptions *subscriptions.Service
	Deliveries    *deliveries.Service
	Replays       *replays.Replays
	Publisher     *publish.Publisher
	// Catalogue, when set, is the event catalogue the Event types page shows and the subscription forms
	// offer (nil: an empty one).
	Catalogue *catalogue.Service
	// Incidents, when set, puts a banner on every page of a tenant with an open incident and lists a
	// subscription's incidents on its page.
	Incidents *incidents.Service
	// Portal, when set, lets customers in by single-use portal links (GET /portal/{token}).
	Portal *portal.Service
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
	// Login throttling: a burst of failed sign-ins per email and per client address, then one more per
	// interval. Zero values take the defaults (5 per email, 20 per address, one more every 30 s).
	LoginBurstPerEmail int
	LoginBurstPerAddr  int
	LoginInterval      time.Duration
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

// Handler serves the dashboard.
type Handler struct {
	tenants        *tenants.Service
	subs           *subscriptions.Service
	dels           *deliveries.Service
	replays        *replays.Replays
	activity       *activity.Log
	publisher      *publish.Publisher
	catalogue      *catalogue.Service
	incidents      *incidents.Service
	portal         *portal.Service
	policy         delivery.RetryPolicy
	timeout        time.Duration
	maxManual      int
	now            func() time.Time
	log            *slog.Logger
	sessions       *scs.SessionManager
	throttle       *tenants.LoginThrottle
	proxies        []netip.Prefix
	httpsOnly      bool // the public URL is https
	brand          brand.Brand
	frameAncestors []string
}

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
	h := &Handler{
		tenants: o.Tenants, subs: o.Subscriptions, dels: o.Deliveries, replays: o.Replays, publisher: o.Publisher,
		policy: o.Policy, timeout: o.AttemptTimeout, maxManual: o.MaxManualRetries, now: o.Now, log: o.Log,
		incidents: o.Incidents, portal: o.Portal, catalogue: o.Catalogue,
		activity: activity.NewLog(o.Pool),
		throttle: tenants.NewLoginThrottle(o.Pool, o.Now, o.LoginBurstPerEmail, o.LoginBurstPerAddr, o.LoginInterval),
		proxies:  o.TrustedProxies,
		brand:    o.Brand, frameAncestors: o.FrameAncestors,
	}
	if h.brand.Name == "" {
		h.brand.Name = brand.DefaultName
	}
	if u, err := url.Parse(o.PublicURL); err == nil && u.Scheme == "https" {
		h.httpsOnly = true
	}
	h.sessions = newSessionManager(newSessionStore(o.Pool), o.IdleTimeout, o.Lifetime, h.sessionError)
	h.sessions.Cookie.Secure = h.httpsOnly
	h.embeddable()
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
	cop.SetDenyHandler(http.HandlerFunc(h.crossOrigin))

	r.Group(func(r chi.Router) {
		// forms bounds and checks every form once, after the cross-origin check (a refused request is not read).
		r.Use(h.securityHeaders, h.secureCookies, cop.Handler, h.staleSessions, h.sessions.LoadAndSave, h.forms)
		r.Get("/login", h.loginPage)
		r.Post("/login", h.login)
		r.Get("/logout", h.logoutPage)
		r.Post("/logout", h.logout)
		r.Get("/portal/{token}", h.redeemPortal)

		r.Group(func(r chi.Router) {
			r.Use(h.requireUser)
			r.Use(h.changesAllowed) // a view-only portal session changes nothing (portal.go)
			r.Get("/", h.home)
			r.Get("/subscriptions/new", h.newEndpoint)
			r.Post("/subscriptions", h.createEndpoint)
			r.Get("/subscriptions/{id}", h.subscription)
			r.Post("/subscriptions/{id}", h.updateEndpoint)
			r.Get("/subscriptions/{id}/edit", h.editEndpoint)
			r.Get("/subscriptions/{id}/delete", h.deleteEndpointPage)
			r.Post("/subscriptions/{id}/delete", h.deleteEndpoint)
			r.Post("/subscriptions/{id}/secret", h.revealSecret)
			r.Post("/subscriptions/{id}/rotate-secret", h.rotateSecret)
			r.Post("/subscriptions/{id}/pause", h.pause)
			r.Post("/subscriptions/{id}/resume", h.resume)
			r.Post("/subscriptions/{id}/test", h.sendTest)
			r.Get("/find", h.find)
			r.Get("/events/{id}", h.event)
			r.Get("/deliveries", h.deliveriesPage)
			r.Get("/deliveries/{id}", h.delivery)
			r.Post("/deliveries/{id}/resend", h.resend)
			r.Post("/deliveries/{id}/retry-now", h.retryNow)
			r.Post("/subscriptions/{id}/recover", h.recover)
			r.Get("/recovers/{id}", h.recoverPage)
			r.Get("/activity", h.tenantActivity)
			r.Get("/event-types", h.eventTypes)
			r.Post("/event-types/{name}/send", h.sendExample)
			// The operator pages, for operators only: anyone else gets the 404 page, so a customer cannot even
			// tell they exist. One middleware, not a check in each handler.
			r.Group(func(r chi.Router) {
				r.Use(h.requireAdmin)
				r.Get("/admin", h.admin)
				r.Get("/admin/tenants/{id}", h.adminTenant)
				r.Post("/admin/tenants/{id}/tokens/{token}/revoke", h.revokeToken)
				r.Get("/admin/tenants/new", h.newTenant)
				r.Post("/admin/tenants", h.createTenant)
				r.Get("/admin/tenants/{id}/users", h.tenantUsers)
				r.Get("/admin/tenants/{id}/activity", h.adminTenantActivity)
				r.Post("/admin/tenants/{id}/users", h.createUser)
				r.Post("/admin/tenants/{id}/users/{user}/remove", h.removeUser)
				r.Post("/admin/tenants/{id}/users/{user}/password", h.resetPassword)
				r.Get("/admin/tenants/{id}/tokens/new", h.newTokenPage)
				r.Post("/admin/tenants/{id}/tokens", h.createToken)
				r.Get("/admin/dead", h.deadLetters)
				r.Get("/admin/replay", h.bulkReplay)
				r.Post("/admin/replay", h.bulkReplay)
				r.Get("/admin/replays", h.replayLog)
				r.Get("/admin/replays/{id}", h.replayPage)
			})
		})
	})
	notFound := h.unknownPage()
	r.NotFound(notFound.ServeHTTP)
	r.MethodNotAllowed(notFound.ServeHTTP)
	return r
}

// unknownPage answers a path that is no page: signed out it leads to /login like every page; signed in
// it is the 404 page.
func (h *Handler) unknownPage() http.Handler {
	return chain(http.HandlerFunc(h.notFound), h.securityHeaders, h.secureCookies, h.staleSessions, h.sessions.LoadAndSave, h.requireUser)
}

func chain(hd http.Handler, mw ...func(http.Handler) http.Handler) http.Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		hd = mw[i](hd)
	}
	return hd
}

// securityHeaders sets the headers every dashboard page carries: a strict CSP (no inline scripts or
// styles), no framing (or only by HOOKLINE_PORTAL_FRAME_ANCESTORS), no sniffing, and no caching of pages
// that show a tenant's data.
func (h *Handler) securityHeaders(next http.Handler) http.Handler {
	frame := "'none'"
	if len(h.frameAncestors) > 0 {
		frame = strings.Join(h.frameAncestors, " ")
	}
	csp := "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
		"form-action 'self'; frame-ancestors " + frame + "; base-uri 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		if len(h.frameAncestors) > 0 {
			// X-Frame-Options knows no list of origins, and browsers that know CSP ignore it anyway; sent
			// (by the server's base headers, DENY) it would block the frames CSP allows in older ones.
			hd.Del("X-Frame-Options")
		} else {
			hd.Set("X-Frame-Options", "DENY")
		}
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
