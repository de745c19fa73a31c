package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/web/templates"
	"github.com/jackc/pgx/v5"
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

// sessionStore is the dashboard's session store (scs's CtxStore) on PostgreSQL's sessions table, its SQL in
// db/query/sessions.sql. Beyond storing rows it does three things for the dashboard:
//
//   - A session's token renewed (renewToken: at sign-in, on opening a portal link, when a portal session
//     ends) is retired rather than deleted: its row stays for renewGrace with its old data, never written
//     again, so a request the browser sent with the old cookie before it got the new one, to this process
//     or another, is answered as it would have been instead of landing on the sign-in form; and that
//     answer does not hand the old token back as a cookie (staleSessions). The old data is never more than
//     the old token already had, so a token planted before a sign-in (session fixation) gains nothing.
//   - Inside a transaction carried by the context (withTx) it writes in that transaction: opening a portal
//     link stores the session in the transaction that uses the link up.
//   - It has no background goroutine (scs's pgxstore has one per process, outliving the server's pool): the
//     maintenance leader deletes expired rows (tenants.Service.PruneSessions).
type sessionStore struct {
	q *db.Queries
}

// renewGrace is how long a renewed token's old row keeps answering.
const renewGrace = time.Minute

func newSessionStore(pool *pgxpool.Pool) *sessionStore {
	return &sessionStore{q: db.New(pool)}
}

type (
	txKey       struct{} // a pgx.Tx the store writes in
	renewingKey struct{} // the context of a token renewal: the old token is retired, not deleted
	loadedKey   struct{} // *loadedSession, filled by FindCtx for staleSessions
)

// withTx returns ctx whose session writes go to tx.
func withTx(ctx context.Context, tx pgx.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// loadedSession is what FindCtx learnt of the request's session: the token it was found under, when that
// token had been renewed.
type loadedSession struct{ retired string }

func (s *sessionStore) queries(ctx context.Context) *db.Queries {
	if tx, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return s.q.WithTx(tx)
	}
	return s.q
}

// FindCtx returns a live session's data.
func (s *sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	r, err := s.queries(ctx).FindSession(ctx, token)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if l, ok := ctx.Value(loadedKey{}).(*loadedSession); ok && r.Renewed {
		l.retired = token
	}
	return r.Data, true, nil
}

// CommitCtx stores a session's data (never a retired token's).
func (s *sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	return s.queries(ctx).CommitSession(ctx, db.CommitSessionParams{Token: token, Data: b, Expiry: expiry})
}

// DeleteCtx deletes a session (sign-out), or, in a renewal, retires its token.
func (s *sessionStore) DeleteCtx(ctx context.Context, token string) error {
	if ctx.Value(renewingKey{}) != nil {
		return s.queries(ctx).RetireSession(ctx, db.RetireSessionParams{Token: token, GraceSeconds: renewGrace.Seconds()})
	}
	return s.queries(ctx).DeleteSession(ctx, token)
}

// Find, Commit and Delete complete scs.Store; scs calls the Ctx forms.
func (s *sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

func (s *sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

func (s *sessionStore) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }

// renewToken gives the request's session a fresh token (sign-in, a portal link, a portal session ending),
// retiring the old one (sessionStore).
func (h *Handler) renewToken(ctx context.Context) error {
	return h.sessions.RenewToken(context.WithValue(ctx, renewingKey{}, true))
}

// staleSessions sits just outside the session middleware: when the request's cookie names a retired
// token, the answer must not set that cookie again (scs re-sends it with every answer), or the browser,
// which may already hold the new token, would go back to the old one and lose its session when the old
// one runs out.
func (h *Handler) staleSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := &loadedSession{}
		sw := &staleWriter{ResponseWriter: w, loaded: l}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), loadedKey{}, l)))
		sw.strip() // an answer the handler never wrote is sent after this returns
	})
}

type staleWriter struct {
	http.ResponseWriter
	loaded *loadedSession
}

// strip drops a Set-Cookie that would hand the retired token back.
func (w *staleWriter) strip() {
	if w.loaded.retired == "" {
		return
	}
	stale := cookieName + "=" + w.loaded.retired
	hd := w.Header()
	cookies := hd.Values("Set-Cookie")
	kept := cookies[:0:0]
	for _, c := range cookies {
		if c != stale && !strings.HasPrefix(c, stale+";") {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(cookies) {
		return
	}
	hd.Del("Set-Cookie")
	for _, c := range kept {
		hd.Add("Set-Cookie", c)
	}
}

func (w *staleWriter) WriteHeader(code int) {
	w.strip()
	w.ResponseWriter.WriteHeader(code)
}

func (w *staleWriter) Write(b []byte) (int, error) {
	w.strip()
	return w.ResponseWriter.Write(b)
}

func (w *staleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
