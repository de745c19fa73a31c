package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/principal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
)

// API holds the services the handlers call.
type API struct {
	Tenants       *tenants.Service
	Subscriptions *subscriptions.Service
	Deliveries    *deliveries.Service
	Replays       *replays.Replays
	Publisher     *publish.Publisher
	// Limits caps each tenant token's request rate in this process (nil: no limit).
	Limits *TokenLimits
	Portal *portal.Service
	// Activity is the tenants' activity log.
	Activity *activity.Log
	// Catalogue is the event catalogue (global: the admin changes it, any token reads it).
	Catalogue *catalogue.Service
	// Polling serves polling subscriptions' consumers.
	Polling *polling.Service
}

// caller is who is asking (authenticate put them in the context).
func caller(r *http.Request) principal.Principal {
	p, _ := principal.FromContext(r.Context())
	return p
}

// Routes returns the /api/v1 router.
func (a *API) Routes() http.Handler {
	r := chi.NewRouter()
	r.Use(a.authenticate, httpx.CleanPath(http.HandlerFunc(badPath)))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, fault.New(fault.NotFound, "no such route"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, fault.Invalid("method %s is not allowed here", r.Method))
	})

	r.With(adminOnly).Post("/tenants", a.createTenant)
	r.With(adminOnly).Get("/tenants", a.listTenants)
	r.With(adminOnly).Post("/replays", a.startReplay)
	r.With(adminOnly).Get("/replays", a.listReplays)
	r.With(adminOnly).Get("/replays/{replayID}", a.getReplay)
	// Any valid token: who it is (its tenant, scopes and id).
	r.Get("/me", a.me)
	r.Get("/event-types", a.listEventTypes)
	r.With(adminOnly).Post("/event-types", a.createEventType)
	r.With(adminOnly).Post("/event-types/import", a.importEventTypes)
	r.Get("/event-types/{eventType}", a.getEventType)
	r.With(adminOnly).Patch("/event-types/{eventType}", a.updateEventType)
	r.With(adminOnly).Delete("/event-types/{eventType}", a.archiveEventType)
	r.Route("/tenants/{tenantID}", func(r chi.Router) {
		r.Use(a.tenantAccess)
		r.With(adminOnly).Get("/", a.getTenant)
		r.With(adminOnly).Post("/tokens", a.createToken)
		r.With(adminOnly).Get("/tokens", a.listTokens)
		r.With(adminOnly).Delete("/tokens/{tokenID}", a.revokeToken)
		r.With(adminOnly).Post("/users", a.createUser)

		r.With(need(principal.ScopeSubscriptionsWrite)).Post("/subscriptions", a.createSubscription)
		r.With(need(principal.ScopeSubscriptionsRead)).Get("/subscriptions", a.listSubscriptions)
		r.With(need(principal.ScopeSubscriptionsRead)).Post("/filter-test", a.testFilter)
		r.Route("/subscriptions/{subscriptionID}", func(r chi.Router) {
			r.With(need(principal.ScopeSubscriptionsRead)).Get("/", a.getSubscription)
			r.With(need(principal.ScopeSubscriptionsWrite)).Patch("/", a.updateSubscription)
			r.With(need(principal.ScopeSubscriptionsWrite)).Delete("/", a.deleteSubscription)
			r.With(need(principal.ScopeSubscriptionsWrite)).Post("/pause", a.pauseSubscription)
			r.With(need(principal.ScopeSubscriptionsWrite)).Post("/resume", a.resumeSubscription)
			r.With(need(principal.ScopeSubscriptionsWrite)).Post("/rotate-secret", a.rotateSecret)
			// subscriptions:write, not read: whoever may read a secret may sign as Hookline to the endpoint.
			r.With(need(principal.ScopeSubscriptionsWrite)).Get("/secret", a.subscriptionSecrets)
			r.With(need(principal.ScopeSubscriptionsRead)).Get("/health", a.subscriptionHealth)
			r.With(need(principal.ScopeDeliveriesWrite)).Post("/recover", a.recoverSubscription)
			// Polling subscriptions' consumers (polling.go)
			r.With(need(principal.ScopeDeliveriesRead)).Get("/poll", a.pollDeliveries)
			r.With(need(principal.ScopeDeliveriesRead)).Get("/consumers", a.listConsumers)
			r.With(need(principal.ScopeDeliveriesWrite)).Post("/consumers/{consumer}/commit", a.commitCursor)
		})

		r.With(need(principal.ScopeEventsWrite)).Post("/events", a.publish)

		r.With(need(principal.ScopeDeliveriesRead)).Get("/deliveries", a.listDeliveries)
		r.Route("/deliveries/{deliveryID}", func(r chi.Router) {
			r.With(need(principal.ScopeDeliveriesRead)).Get("/", a.getDelivery)
			r.With(need(principal.ScopeDeliveriesWrite)).Delete("/", a.discardDelivery)
			r.With(need(principal.ScopeDeliveriesWrite)).Post("/retry", a.retryDelivery)
			r.With(need(principal.ScopeDeliveriesWrite)).Post("/retry-now", a.retryDeliveryNow)
		})

		r.With(need(principal.ScopeDeliveriesRead)).Get("/replays", a.listTenantReplays)
		r.With(need(principal.ScopeDeliveriesRead)).Get("/replays/{replayID}", a.getTenantReplay)

		r.With(need(principal.ScopePortalWrite)).Post("/portal-links", a.createPortalLink)
		r.With(need(principal.ScopePortalWrite)).Delete("/portal-sessions", a.endPortalSessions)

		r.With(need(principal.ScopeSubscriptionsRead)).Get("/activity", a.listActivity)
	})
	return r
}

// authenticate resolves the bearer token of every API request.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110 §11.1): "Bearer", "bearer" and "BEARER" all work.
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			writeError(w, r, fault.New(fault.Unauthenticated, "send Authorization: Bearer <token>"))
			return
		}
		p, err := a.Tenants.Authenticate(r.Context(), strings.TrimSpace(token))
		if err != nil {
			writeError(w, r, err)
			return
		}
		// After authentication, so only a valid token spends its own budget; the admin token is the
		// operator's and never limited.
		if id, isToken := p.Token(); isToken && !p.Admin {
			wait, cancel, ok := a.Limits.Take(id)
			if !ok {
				writeError(w, r, fault.Limited(wait, "too many requests with this token: at most %s per second (bursts of %d) to this server; retry in %d s",
					a.Limits.Rate(), a.Limits.Burst(), retryAfterSeconds(wait)))
				return
			}
			if wait > 0 && !a.Limits.Sleep(r.Context(), wait) {
				cancel() // the client went away while its request waited for its turn
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	})
}

// badPath answers a path that holds bytes that are not UTF-8 or control characters (httpx.CleanPath):
// NOT_FOUND, as for any malformed id, since no id or name has them.
func badPath(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, fault.New(fault.NotFound, "no such route or object: the path holds bytes that are not UTF-8 or control characters, which no id or name has"))
}

func adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !caller(r).Admin {
			writeError(w, r, fault.New(fault.Forbidden, "this call needs an admin token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

type tenantKey struct{}

func tenantID(r *http.Request) uuid.UUID {
	id, _ := r.Context().Value(tenantKey{}).(uuid.UUID)
	return id
}

// tenantAccess resolves {tenantID}: another tenant's, a malformed or an unknown id is NOT_FOUND.
func (a *API) tenantAccess(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := params.PathID(chi.URLParam(r, "tenantID"), "tenant")
		if err != nil {
			writeError(w, r, err)
			return
		}
		p := caller(r)
		if err := p.Can(id, ""); err != nil {
			writeError(w, r, err)
			return
		}
		if p.Admin {
			if _, err := a.Tenants.GetTenant(r.Context(), id); err != nil {
				writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, id)))
	})
}

// need requires a scope of tenant tokens (admins have every scope).
func need(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := caller(r).Can(tenantID(r), scope); err != nil {
				writeError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// pathID parses an id from the path; a malformed one is NOT_FOUND like an unknown one.
func pathID(r *http.Request, name, what string) (uuid.UUID, error) {
	return params.PathID(chi.URLParam(r, name), what)
}
