package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/internal/web/session"
	"github.com/hookline/hookline/web/templates"
)

// Messages of the sign-in form.
const (
	msgBadLogin  = "Invalid email or password."
	msgThrottled = "Too many failed sign-ins. Try again in %d s."
	msgLongEmail = "That email address is too long."
)

// maxEmailBytes bounds the sign-in email, checked before anything else: a longer one gets no throttle
// key, no log line and no echo. (The whole form is bounded, and checked for bytes PostgreSQL refuses, by
// the forms middleware before this handler runs.)
const maxEmailBytes = 254 // the longest address SMTP can carry (RFC 5321 path limit less the brackets)

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	if len(email) > maxEmailBytes {
		page := templates.LoginPage{Layout: h.Layout(r, "Sign in"), Next: safeNext(r.PostFormValue("next"))}
		page.Error = msgLongEmail
		h.Render(w, r, http.StatusBadRequest, templates.Login(page))
		return
	}
	password := r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	page := templates.LoginPage{Layout: h.Layout(r, "Sign in"), Email: email, Next: next}

	addr := h.clientAddr(r)
	// The try is spent before bcrypt runs, so parallel wrong passwords cannot all be checked.
	wait, err := h.throttle.Reserve(r.Context(), email, addr)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(core.SecondsUp(wait)))
		page.Error = fmt.Sprintf(msgThrottled, core.SecondsUp(wait))
		h.Render(w, r, http.StatusTooManyRequests, templates.Login(page))
		return
	}
	u, err := h.Tenants.CheckLogin(r.Context(), email, password)
	if errors.Is(err, tenants.ErrBadLogin) || (err == nil && u.TenantID == nil && !u.Admin) {
		h.Log.Info("dashboard sign-in failed", "email", email, "addr", addr)
		page.Error = msgBadLogin
		h.Render(w, r, http.StatusUnauthorized, templates.Login(page))
		return
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if err := h.throttle.Succeeded(r.Context(), email, addr); err != nil {
		h.Fail(w, r, err)
		return
	}
	// A fresh token at sign-in, so a token planted before it (session fixation) is worthless.
	if err := session.Renew(r.Context(), h.Sessions); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Sessions.Remove(r.Context(), keyPortalID) // a password sign-in replaces a portal session in this browser
	if portalMarked(r) {
		http.SetCookie(w, h.portalMark(false))
	}
	h.Sessions.Put(r.Context(), keyUserID, u.ID.String())
	h.Sessions.Put(r.Context(), keyPasswordStamp, u.PasswordStamp)
	if next == "" {
		next = "/"
		if u.TenantID == nil {
			next = "/admin"
		}
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}
