package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/principal"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/internal/web/session"
	"github.com/hookline/hookline/web/templates"
)

// Session keys of a customer portal session (see package portal).
const (
	keyPortalID    = "portal_id"    // the portal link's id: its session, checked on every request
	keyPortalEnded = "portal_ended" // "ended" or "signed-out": what the next page says instead of a sign-in form
)

// portalMarkCookie marks a browser whose last sign-in was a portal link. It says nothing but that, and
// goes with the browser session (no expiry), like the session cookie, whose attributes it shares.
const portalMarkCookie = "hookline_portal"

// portalMark is the mark, set (on) or removed.
func (h *Handler) portalMark(on bool) *http.Cookie {
	sc := h.Sessions.Cookie
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
	if err != nil || h.Portal == nil {
		h.endedPortal(w, r, "ended")
		return nil, true
	}
	s, err := h.Portal.Session(r.Context(), sid)
	if errors.Is(err, portal.ErrEnded) {
		h.endedPortal(w, r, "ended")
		return nil, true
	}
	if err != nil {
		h.Fail(w, r, err)
		return nil, true
	}
	ctx = principal.NewContext(r.Context(), s.Principal())
	return core.WithPortal(ctx, s), false
}

// endedPortal forgets the portal session in this browser and says it has ended. The mark stays in the
// (fresh) session, so later requests say so too rather than offering a password sign-in the portal
// user does not have.
func (h *Handler) endedPortal(w http.ResponseWriter, r *http.Request, why string) {
	if err := session.Renew(r.Context(), h.Sessions); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Sessions.Remove(r.Context(), keyPortalID)
	h.Sessions.Put(r.Context(), keyPortalEnded, why)
	h.showEnded(w, r, why)
}

func (h *Handler) showEnded(w http.ResponseWriter, r *http.Request, why string) {
	h.Render(w, r, http.StatusUnauthorized, templates.PortalEnded(h.Frame(r, "Session ended"), why == "signed-out"))
}

// changesAllowed refuses every state-changing request of a view-only portal session with 403. It sits on
// the signed-in routes as a whole (not on each handler), so a route added there later is covered too;
// sign-out is outside that group.
func (h *Handler) changesAllowed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if p := core.Caller(r); p.Kind == principal.KindPortal && !p.CanChange() {
				httpx.Logger(r.Context()).Info("change refused to a view-only portal session", "method", r.Method,
					"route", chi.RouteContext(r.Context()).RoutePattern(), "actor", p.AuditName())
				h.Render(w, r, http.StatusForbidden, templates.ReadOnly(h.Layout(r, "Read-only")))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// portalLogout ends a portal session for good (the link's row), not only this browser's cookie.
func (h *Handler) portalLogout(w http.ResponseWriter, r *http.Request, id string) {
	if sid, err := uuid.Parse(id); err == nil && h.Portal != nil {
		if err := h.Portal.End(r.Context(), sid); err != nil {
			h.Fail(w, r, err)
			return
		}
	}
	if err := session.Renew(r.Context(), h.Sessions); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Sessions.Remove(r.Context(), keyPortalID)
	h.Sessions.Put(r.Context(), keyPortalEnded, "signed-out")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
