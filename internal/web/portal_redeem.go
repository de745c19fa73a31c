package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/web/session"
	"github.com/hookline/hookline/web/templates"
	"github.com/jackc/pgx/v5"
)

// redeemPortal is GET /portal/{token}: the link's first use within its 10 minutes starts a portal session
// (a fresh session token, like a sign-in) and leads to the tenant's subscriptions; a used, expired or
// unknown link gets the same 410 page. The session is stored in the transaction that uses the link up:
// a failure to store it leaves the link usable.
func (h *Handler) redeemPortal(w http.ResponseWriter, r *http.Request) {
	if h.Portal == nil {
		h.NotFound(w, r)
		return
	}
	s, err := h.Portal.Redeem(r.Context(), chi.URLParam(r, "token"), func(ctx context.Context, tx pgx.Tx, s portal.Session) error {
		ctx = session.WithTx(ctx, tx)
		if err := session.Renew(ctx, h.Sessions); err != nil {
			return err
		}
		// Whoever was signed in in this browser before is not any more: the link says who this is.
		h.Sessions.Remove(ctx, keyUserID)
		h.Sessions.Remove(ctx, keyPortalEnded)
		h.Sessions.Put(ctx, keyPortalID, s.ID.String())
		// The stored session lasts as long as the portal session may (the check on every request ends it
		// exactly at its time; this only lets the row go).
		h.Sessions.SetDeadline(ctx, s.ExpiresAt)
		_, _, err := h.Sessions.Commit(ctx)
		return err
	})
	if errors.Is(err, portal.ErrUnusable) {
		// One title for a used, an expired and an unknown link (the same page for all three), true of each
		// that a person can have been given: "Link expired" alone is untrue of a link used a second time.
		h.Render(w, r, http.StatusGone, templates.PortalGone(h.Frame(r, "Link expired or already used")))
		return
	}
	if err != nil {
		// The link was not used up; this browser's session (under its new token) has no portal session.
		h.Sessions.Remove(r.Context(), keyPortalID)
		h.Fail(w, r, err)
		return
	}
	// This browser is in a portal session from now on, also once its stored session has gone (its time or
	// its idle timeout ran out): it is then told that its session ended, never offered a password form.
	http.SetCookie(w, h.portalMark(true))
	httpx.Logger(r.Context()).Info("portal session started", "tenant_id", s.TenantID, "portal_session", s.ID,
		"actor", s.Actor(), "role", s.Role)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
