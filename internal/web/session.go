package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/hookline/hookline/web/templates"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Session keys.
const (
	keyUserID = "user_id"
	keyFlash  = "flash"
	// keyPasswordStamp is the signed-in user's password stamp at sign-in: a new password ends the session.
	keyPasswordStamp = "password_stamp"
	// keyRecoverSince carries a recover form's since value back to the subscription's page.
	keyRecoverSince = "recover_since"
)

// cookieName is the session cookie's name.
const cookieName = "hookline_session"

func newSessionManager(store scs.Store, idle, lifetime time.Duration, onError func(http.ResponseWriter, *http.Request, error)) *scs.SessionManager {
	sm := scs.New()
	sm.Store = store
	sm.IdleTimeout = idle
	sm.Lifetime = lifetime
	sm.Cookie.Name = cookieName
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false // a browser session cookie; the server enforces both timeouts
	sm.Cookie.Secure = false  // set by New for an https public URL, else added per request under TLS by secureCookies
	sm.ErrorFunc = onError
	return sm
}

// sessionStore is scs's PostgreSQL store without its background goroutine (which would run in every
// process and outlive the server's pool): the maintenance leader deletes expired rows
// (tenants.Service.PruneSessions, run by the maintenance leader). now is no longer needed here.
type sessionStore struct {
	*pgxstore.PostgresStore
}

func newSessionStore(pool *pgxpool.Pool, _ func() time.Time) *sessionStore {
	return &sessionStore{PostgresStore: pgxstore.NewWithCleanupInterval(pool, 0)}
}

// secureCookies adds the Secure attribute to every cookie set on a request that came over TLS, directly or
// through a trusted proxy. (With an https public URL every cookie is Secure from the start.)
func (h *Handler) secureCookies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.overHTTPS(r) {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&secureWriter{ResponseWriter: w}, r)
	})
}

// hsts tells browsers to use only https for a year, on every answer when the public URL is https and on
// answers to requests that came over TLS. Over plain http browsers ignore it, and sending it when the
// site is not served over https would only mislead.
func (h *Handler) hsts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.httpsOnly || h.overHTTPS(r) {
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

type secureWriter struct {
	http.ResponseWriter
	done bool
}

func (w *secureWriter) fix() {
	if w.done {
		return
	}
	w.done = true
	cookies := w.Header()["Set-Cookie"]
	for i, c := range cookies {
		if !strings.Contains(strings.ToLower(c), "; secure") {
			cookies[i] = c + "; Secure"
		}
	}
}

func (w *secureWriter) WriteHeader(code int) {
	w.fix()
	w.ResponseWriter.WriteHeader(code)
}

func (w *secureWriter) Write(b []byte) (int, error) {
	w.fix()
	return w.ResponseWriter.Write(b)
}

func (w *secureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setFlash stores a one-time message shown by the next page.
func (h *Handler) setFlash(r *http.Request, kind, msg string) {
	h.sessions.Put(r.Context(), keyFlash, kind+"\n"+msg)
}

// setFlashLink is setFlash with a link after the message (label, to a local path): what an action made.
func (h *Handler) setFlashLink(r *http.Request, kind, msg, href, label string) {
	h.sessions.Put(r.Context(), keyFlash, kind+"\n"+msg+"\n"+href+"\n"+label)
}

// popFlash takes the pending message, if any. A request whose session did not load has none.
func (h *Handler) popFlash(r *http.Request) (f *templates.Flash) {
	defer func() {
		if recover() != nil { // scs panics without session data in the context
			f = nil
		}
	}()
	s := h.sessions.PopString(r.Context(), keyFlash)
	if s == "" {
		return nil
	}
	parts := strings.SplitN(s, "\n", 4)
	f = &templates.Flash{Kind: parts[0]}
	if len(parts) > 1 {
		f.Message = parts[1]
	}
	if len(parts) == 4 {
		f.Href, f.LinkText = parts[2], parts[3]
	}
	return f
}

func (h *Handler) sessionError(w http.ResponseWriter, r *http.Request, err error) {
	h.fail(w, r, err)
}
