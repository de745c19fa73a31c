package web

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/principal"
)

// Session keys.
const (
	keyUserID = "user_id"
	// keyPasswordStamp is the signed-in user's password stamp at sign-in: a new password ends the session.
	keyPasswordStamp = "password_stamp"
)

// requireUser loads the session's user; without one it leads to /login, remembering the page.
func (h *Handler) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pid := h.Sessions.GetString(r.Context(), keyPortalID); pid != "" {
			ctx, handled := h.portalUser(w, r, pid)
			if !handled {
				next.ServeHTTP(w, r.WithContext(ctx))
			}
			return
		}
		id, err := uuid.Parse(h.Sessions.GetString(r.Context(), keyUserID))
		if err != nil {
			// A portal session that ended in this browser: say so, not a sign-in form its user cannot use.
			if why := h.Sessions.GetString(r.Context(), keyPortalEnded); why != "" {
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
			u, err := h.Tenants.GetUser(r.Context(), id)
			if err == nil && h.Sessions.GetString(r.Context(), keyPasswordStamp) != u.PasswordStamp {
				err = fault.Missing("user") // signed in with a password since replaced
			}
			switch {
			case err == nil:
				ctx := principal.NewContext(r.Context(), principal.User(u.ID, u.TenantID, u.Email, u.Admin))
				next.ServeHTTP(w, r.WithContext(ctx))
				return
			case !fault.Is(err, fault.NotFound):
				h.Fail(w, r, err)
				return
			}
			_ = h.Sessions.Destroy(r.Context()) // the user is gone, or their password changed
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
