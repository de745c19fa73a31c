package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
	"github.com/jackc/pgx/v5"
)

// Session keys of a customer portal session (see package portal).
const (
	keyPortalID    = "portal_id"    // the portal link's id: its session, checked on every request
	keyPortalEnded = "portal_ended" // "ended" or "signed-out": what the next page says instead of a sign-in form
)

type portalKey struct{}

// currentPortal is the request's portal session; ok is false for a password user.
func currentPortal(r *http.Request) (portal.Session, bool) {
	s, ok := r.Context().Value(portalKey{}).(portal.Session)
	return s, ok
}

// redeemPortal is GET /portal/{token}: the link's first use within its 10 minutes starts a portal session
// (a fresh session token, like a sign-in) and leads to the tenant's subscriptions; a used, expired or
// unknown link gets the same 410 page. The session is stored in the transaction that uses the link up:
// a failure to store it leaves the link usable.
func (h *Handler) redeemPortal(w http.ResponseWriter, r *http.Request) {
	if h.portal == nil {
		h.notFound(w, r)
		return
	}
	s, err := h.portal.Redeem(r.Context(), chi.URLParam(r, "token"), func(ctx context.Context, tx pgx.Tx, s portal.Session) error {
		ctx = withTx(ctx, tx)
		if err := h.renewToken(ctx); err != nil {
			return err
		}
		// Whoever was signed in in this browser before is not any more: the link says who this is.
		h.sessions.Remove(ctx, keyUserID)
		h.sessions.Remove(ctx, keyPortalEnded)
		h.sessions.Put(ctx, keyPortalID, s.ID.String())
		// The stored session lasts as long as the portal session may (the check on every request ends it
		// exactly at its time; this only lets the row go).
		h.sessions.SetDeadline(ctx, s.ExpiresAt)
		_, _, err := h.sessions.Commit(ctx)
		return err
	})
	if errors.Is(err, portal.ErrUnusable) {
		// One title for a used, an expired and an unknown link (the same page for all three), true of each
		// that a person can have been given: "Link expired" alone is untrue of a link used a second time.
		h.render(w, r, http.StatusGone, templates.PortalGone(h.frame(r, "Link expired or already used")))
		return
	}
	if err != nil {
		// The link was not used up; this browser's session (under its new token) has no portal session.
		h.sessions.Remove(r.Context(), keyPortalID)
		h.fail(w, r, err)
		return
	}
	// This browser is in a portal session from now on, also once its stored session has gone (its time or
	// its idle timeout ran out): it is then told that its session ended, never offered a password form.
	http.SetCookie(w, h.portalMark(true))
	httpx.Logger(r.Context()).Info("portal session started", "tenant_id", s.TenantID, "portal_session", s.ID,
		"actor", s.Actor(), "role", s.Role)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// portalMarkCookie marks a browser whose last sign-in was a portal link. It says nothing but that, and
// goes with the browser session (no expiry), like the session cookie, whose attributes it shares.
const portalMarkCookie = "hookline_portal"

// portalMark is the mark, set (on) or removed.
func (h *Handler) portalMark(on bool) *http.Cookie {
	sc := h.sessions.Cookie
	c := &http.Cookie{Name: portalMarkCookie, Value: "1", Path: "/", HttpOnly: true, SameSite: sc.SameSite,
		Secure: sc.Secure, Partitioned: sc.Partitioned}
	if !on {
		c.Value, c.MaxAge = "", -1
	}
	return c
}

// portalMarked reports whether the browser's last sign-in was a portal link.
func portalMarked(r *http.Request) bool {
	c, err := r.Cookie(portalMarkCookie)
	return err == nil && c.Value != ""
}

// portalUser resolves a portal session for requireUser. handled is true when it answered the request
// itself (an ended session's page, an error); otherwise ctx carries the session and its user.
func (h *Handler) portalUser(w http.ResponseWriter, r *http.Request, id string) (ctx context.Context, handled bool) {
	sid, err := uuid.Parse(id)
	if err != nil || h.portal == nil {
		h.endedPortal(w, r, "ended")
		return nil, true
	}
	s, err := h.portal.Session(r.Context(), sid)
	if errors.Is(err, portal.ErrEnded) {
		h.endedPortal(w, r, "ended")
		return nil, true
	}
	if err != nil {
		h.fail(w, r, err)
		return nil, true
	}
	u := tenants.User{ID: s.ID, TenantID: &s.TenantID, Email: s.Actor()}
	ctx = activity.WithActor(context.WithValue(r.Context(), userKey{}, u), s.ActivityActor())
	return context.WithValue(ctx, portalKey{}, s), false
}

// endedPortal forgets the portal session in this browser and says it has ended. The mark stays in the
// (fresh) session, so later requests say so too rather than offering a password sign-in the portal
// user does not have.
func (h *Handler) endedPortal(w http.ResponseWriter, r *http.Request, why string) {
	if err := h.renewToken(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	h.sessions.Remove(r.Context(), keyPortalID)
	h.sessions.Put(r.Context(), keyPortalEnded, why)
	h.showEnded(w, r, why)
}

func (h *Handler) showEnded(w http.ResponseWriter, r *http.Request, why string) {
	h.render(w, r, http.StatusUnauthorized, templates.PortalEnded(h.frame(r, "Session ended"), why == "signed-out"))
}

// readOnly reports whether the request's session may only look (a view portal session).
func (h *Handler) readOnly(r *http.Request) bool {
	s, ok := currentPortal(r)
	return ok && !s.CanChange()
}

// changesAllowed refuses every state-changing request of a view-only portal session with 403. It sits on
// the signed-in routes as a whole (not on each handler), so a route added there later is covered too;
// sign-out is outside that group.
func (h *Handler) changesAllowed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if s, ok := currentPortal(r); ok && !s.CanChange() {
				httpx.Logger(r.Context()).Info("change refused to a view-only portal session", "method", r.Method,
					"route", chi.RouteContext(r.Context()).RoutePattern(), "actor", s.Actor())
				h.render(w, r, http.StatusForbidden, templates.ReadOnly(h.layout(r, "Read-only")))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// portalLogout ends a portal session for good (the link's row), not only this browser's cookie.
func (h *Handler) portalLogout(w http.ResponseWriter, r *http.Request, id string) {
	if sid, err := uuid.Parse(id); err == nil && h.portal != nil {
		if err := h.portal.End(r.Context(), sid); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if err := h.renewToken(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	h.sessions.Remove(r.Context(), keyPortalID)
	h.sessions.Put(r.Context(), keyPortalEnded, "signed-out")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// brandedHeaders leaves the user-agent out of a request's headers shown to a customer (in a portal session
// or signed in with a password) under a platform's brand: its value names Hookline, which such pages do
// not. Operators see it. (Receivers still get it, as the contract asks; leaving a header out of the page is
// not saying something untrue about what was sent.)
func (h *Handler) brandedHeaders(r *http.Request, hd []templates.KV) []templates.KV {
	if currentUser(r).Admin || !h.brand.Custom() {
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
