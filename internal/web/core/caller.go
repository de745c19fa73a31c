package core

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
)

type userKey struct{}

// WithUser is ctx carrying the signed-in user (requireUser).
func WithUser(ctx context.Context, u tenants.User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// currentUser is the signed-in user (requireUser put it in the context).
func CurrentUser(r *http.Request) tenants.User {
	u, _ := r.Context().Value(userKey{}).(tenants.User)
	return u
}

// tenantOf returns the tenant whose pages the user sees; ok is false for an operator without one.
func TenantOf(u tenants.User) (uuid.UUID, bool) {
	if u.TenantID == nil {
		return uuid.Nil, false
	}
	return *u.TenantID, true
}

type portalKey struct{}

// WithPortal is ctx carrying the request's portal session.
func WithPortal(ctx context.Context, s portal.Session) context.Context {
	return context.WithValue(ctx, portalKey{}, s)
}

// currentPortal is the request's portal session; ok is false for a password user.
func CurrentPortal(r *http.Request) (portal.Session, bool) {
	s, ok := r.Context().Value(portalKey{}).(portal.Session)
	return s, ok
}

// readOnly reports whether the request's session may only look (a view portal session).
func (h *Handler) ReadOnly(r *http.Request) bool {
	s, ok := CurrentPortal(r)
	return ok && !s.CanChange()
}

// brandedHeaders leaves the user-agent out of a request's headers shown to a customer (in a portal session
// or signed in with a password) under a platform's brand: its value names Hookline, which such pages do
// not. Operators see it. (Receivers still get it, as the contract asks; leaving a header out of the page is
// not saying something untrue about what was sent.)
func (h *Handler) BrandedHeaders(r *http.Request, hd []templates.KV) []templates.KV {
	if CurrentUser(r).Admin || !h.Brand.Custom() {
		return hd
	}
	out := hd[:0:0]
	for _, kv := range hd {
		if !strings.EqualFold(kv.Key, "user-agent") {
			out = append(out, kv)
		}
	}
	return out
}
