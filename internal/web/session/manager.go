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
	// Not scs.New: it starts an in-memory store's cleanup goroutine that this store replaces, which would
	// run for good (its StopCleanup races with its start). What New sets besides is the context key the
	// session data travels under, unique per manager; the zero key serves as well, since a request passes
	// through one manager only.
	return &scs.SessionManager{
		Store:       store,
		Codec:       scs.GobCodec{},
		IdleTimeout: idle,
		Lifetime:    lifetime,
		ErrorFunc:   onError,
		Cookie: scs.SessionCookie{
			Name:     CookieName,
			HttpOnly: true,
			SameSite: http.SameSiteLaxMode,
			Path:     "/",
			Persist:  false, // a browser session cookie; the server enforces both timeouts
			Secure:   false, // set by New for an https public URL, else added per request under TLS by secureCookies
		},
	}
}

// Renew gives the request's session a fresh token (sign-in, a portal link, a portal session ending),
// retiring the old one (Store).
func Renew(ctx context.Context, sm *scs.SessionManager) error {
	return sm.RenewToken(context.WithValue(ctx, renewingKey{}, true))
}
