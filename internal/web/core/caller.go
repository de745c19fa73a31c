package core

import (
	"context"
	"net/http"
	"strings"

	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/principal"
	"github.com/hookline/hookline/web/templates"
)

// Caller is who is calling: a dashboard user signed in with a password, or a customer in a portal session
// (requireUser put them in the context). A request nobody signed in to has the zero Principal, who may do
// nothing.
func Caller(r *http.Request) principal.Principal {
	p, _ := principal.FromContext(r.Context())
	return p
}

type portalKey struct{}

// WithPortal is ctx carrying the request's portal session.
func WithPortal(ctx context.Context, s portal.Session) context.Context {
	return context.WithValue(ctx, portalKey{}, s)
}

// CurrentPortal is the request's portal session (its theme, its label); ok is false for a password user.
func CurrentPortal(r *http.Request) (portal.Session, bool) {
	s, ok := r.Context().Value(portalKey{}).(portal.Session)
	return s, ok
}

// ReadOnly reports whether the request's session may only look (a view portal session).
func (h *Handler) ReadOnly(r *http.Request) bool {
	p, ok := principal.FromContext(r.Context())
	return ok && !p.CanChange()
}

// BrandedHeaders leaves the user-agent out of a request's headers shown to a customer (in a portal session
// or signed in with a password) under a platform's brand: its value names Hookline, which such pages do
// not. Operators see it. (Receivers still get it, as the contract asks; leaving a header out of the page is
// not saying something untrue about what was sent.)
func (h *Handler) BrandedHeaders(r *http.Request, hd []templates.KV) []templates.KV {
	if Caller(r).Admin || !h.Brand.Custom() {
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
