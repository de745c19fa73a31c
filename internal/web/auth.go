package web

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
)

type userKey struct{}

// currentUser is the signed-in user (requireUser put it in the context).
func currentUser(r *http.Request) tenants.User {
	u, _ := r.Context().Value(userKey{}).(tenants.User)
	return u
}

// tenantOf returns the tenant whose pages the user sees; ok is false for an operator without one.
func tenantOf(u tenants.User) (uuid.UUID, bool) {
	if u.TenantID == nil {
		return uuid.Nil, false
	}
	return *u.TenantID, true
}

// requireUser loads the session's user; without one it leads to /login, remembering the page.
func (h *Handler) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pid := h.sessions.GetString(r.Context(), keyPortalID); pid != "" {
			ctx, handled := h.portalUser(w, r, pid)
			if !handled {
				next.ServeHTTP(w, r.WithContext(ctx))
			}
			return
		}
		id, err := uuid.Parse(h.sessions.GetString(r.Context(), keyUserID))
		if err != nil {
			// A portal session that ended in this browser: say so, not a sign-in form its user cannot use.
			if why := h.sessions.GetString(r.Context(), keyPortalEnded); why != "" {
				h.showEnded(w, r, why)
				return
			}
			// Its stored session is gone too (past its session_expires_at, or its idle timeout), but the
			// browser was last let in by a portal link.
			if portalMarked(r) {
				h.showEnded(w, r, "ended")
				return
			}
		}
		if err == nil {
			u, err := h.tenants.GetUser(r.Context(), id)
			if err == nil && h.sessions.GetString(r.Context(), keyPasswordStamp) != u.PasswordStamp {
				err = fault.Missing("user") // signed in with a password since replaced
			}
			switch {
			case err == nil:
				who := activity.Actor{Kind: activity.ActorUser, ID: u.ID.String(), Email: u.Email}
				if u.Admin {
					who.Kind = activity.ActorAdmin
				}
				ctx := activity.WithActor(context.WithValue(r.Context(), userKey{}, u), who)
				next.ServeHTTP(w, r.WithContext(ctx))
				return
			case !fault.Is(err, fault.NotFound):
				h.fail(w, r, err)
				return
			}
			_ = h.sessions.Destroy(r.Context()) // the user is gone, or their password changed
		}
		target := "/login"
		// A target longer than safeNext keeps is dropped here, so a long URL is not copied into Location.
		if r.Method == http.MethodGet && r.URL.Path != "/" && len(r.URL.RequestURI()) <= maxNext {
			target += "?next=" + url.QueryEscape(r.URL.RequestURI())
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
	})
}

// maxNext is the longest post-login target kept.
const maxNext = 2048

// safeNext keeps a post-login target only when it is an absolute path on this site: one leading "/" (a
// second "/" or a "\" would make browsers read a host), and nothing but printable ASCII without "\".
// Browsers drop tabs and newlines from URLs and read "\" as "/", so "/<TAB>/evil.example" is
// "//evil.example" to them; the targets this site makes (RequestURI) are escaped, so nothing is lost.
func safeNext(s string) string {
	if len(s) > maxNext || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return ""
		}
	}
	if u, err := url.Parse(s); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return ""
	}
	return s
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, err := uuid.Parse(h.sessions.GetString(r.Context(), keyUserID)); err == nil || h.sessions.GetString(r.Context(), keyPortalID) != "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	l := h.layout(r, "Sign in")
	notice := l.Flash
	l.Flash = nil
	h.render(w, r, http.StatusOK, templates.Login(templates.LoginPage{
		Layout: l, Notice: notice, Next: safeNext(r.URL.Query().Get("next")),
	}))
}

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
		page := templates.LoginPage{Layout: h.layout(r, "Sign in"), Next: safeNext(r.PostFormValue("next"))}
		page.Error = msgLongEmail
		h.render(w, r, http.StatusBadRequest, templates.Login(page))
		return
	}
	password := r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	page := templates.LoginPage{Layout: h.layout(r, "Sign in"), Email: email, Next: next}

	addr := h.clientAddr(r)
	// The try is spent before bcrypt runs, so parallel wrong passwords cannot all be checked.
	wait, err := h.throttle.Reserve(r.Context(), email, addr)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", itoa(secondsUp(wait)))
		page.Error = sprintf(msgThrottled, secondsUp(wait))
		h.render(w, r, http.StatusTooManyRequests, templates.Login(page))
		return
	}
	u, err := h.tenants.CheckLogin(r.Context(), email, password)
	if errors.Is(err, tenants.ErrBadLogin) || (err == nil && u.TenantID == nil && !u.Admin) {
		h.log.Info("dashboard sign-in failed", "email", email, "addr", addr)
		page.Error = msgBadLogin
		h.render(w, r, http.StatusUnauthorized, templates.Login(page))
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.throttle.Succeeded(r.Context(), email, addr); err != nil {
		h.fail(w, r, err)
		return
	}
	// A fresh token at sign-in, so a token planted before it (session fixation) is worthless.
	if err := h.renewToken(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	h.sessions.Remove(r.Context(), keyPortalID) // a password sign-in replaces a portal session in this browser
	if portalMarked(r) {
		http.SetCookie(w, h.portalMark(false))
	}
	h.sessions.Put(r.Context(), keyUserID, u.ID.String())
	h.sessions.Put(r.Context(), keyPasswordStamp, u.PasswordStamp)
	if next == "" {
		next = "/"
		if u.TenantID == nil {
			next = "/admin"
		}
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logoutPage(w http.ResponseWriter, r *http.Request) {
	_, err := uuid.Parse(h.sessions.GetString(r.Context(), keyUserID))
	if pid := h.sessions.GetString(r.Context(), keyPortalID); pid != "" {
		ctx, handled := h.portalUser(w, r, pid)
		if !handled {
			r = r.WithContext(ctx)
			h.render(w, r, http.StatusOK, templates.Logout(h.layout(r, "Sign out")))
		}
		return
	}
	if err != nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, templates.Logout(h.layout(r, "Sign out")))
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if pid := h.sessions.GetString(r.Context(), keyPortalID); pid != "" {
		h.portalLogout(w, r, pid)
		return
	}
	if err := h.sessions.Destroy(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	h.setFlash(r, "info", "You are signed out.") // in a new, empty session
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// clientAddr is the address of the person signing in: the connection's peer, or, when that peer is one of
// the trusted proxies, the last address in X-Forwarded-For that is not a trusted proxy (the addresses
// left of it were written by the client and prove nothing).
func (h *Handler) clientAddr(r *http.Request) string {
	peer := remoteIP(r)
	if !h.trusted(peer) {
		return peer.String()
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		ip, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a garbled hop: keep the last address a trusted proxy vouched for
		}
		addr = ip.Unmap()
		if !h.trusted(addr) {
			break
		}
	}
	return addr.String()
}

// remoteIP is the connection's peer address.
func remoteIP(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// trusted reports whether ip is one of the trusted reverse proxies.
func (h *Handler) trusted(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	for _, p := range h.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// overHTTPS reports whether the browser reached us over TLS: directly, or through a trusted proxy that
// says so in X-Forwarded-Proto. Anyone else's X-Forwarded-Proto is ignored.
func (h *Handler) overHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !h.trusted(remoteIP(r)) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

func secondsUp(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
