package session

import (
	"context"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
)

// CookieName is the session cookie's name.
const CookieName = "hookline_session"

// NewManager is the dashboard's session manager on store: a browser-session cookie (HttpOnly, SameSite=Lax,
// made Secure by the dashboard where it must be) and both timeouts enforced by the server.
func NewManager(store *Store, idle, lifetime time.Duration, onError func(http.ResponseWriter, *http.Request, error)) *scs.SessionManager {
	sm := scs.New()
	sm.Store = store
	sm.IdleTimeout = idle
	sm.Lifetime = lifetime
	sm.Cookie.Name = CookieName
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false // a browser session cookie; the server enforces both timeouts
	sm.Cookie.Secure = false  // set by New for an https public URL, else added per request under TLS by secureCookies
	sm.ErrorFunc = onError
	return sm
}

// Renew gives the request's session a fresh token (sign-in, a portal link, a portal session ending),
// retiring the old one (Store).
func Renew(ctx context.Context, sm *scs.SessionManager) error {
	return sm.RenewToken(context.WithValue(ctx, renewingKey{}, true))
}
