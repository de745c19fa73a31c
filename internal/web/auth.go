package web

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/web/templates"
	"golang.org/x/time/rate"
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
		id, err := uuid.Parse(h.sessions.GetString(r.Context(), keyUserID))
		if err == nil {
			u, err := h.tenants.GetUser(r.Context(), id)
			switch {
			case err == nil:
				ctx := context.WithValue(r.Context(), userKey{}, u)
				next.ServeHTTP(w, r.WithContext(ctx))
				return
			case !fault.Is(err, fault.NotFound):
				h.fail(w, r, err)
				return
			}
			_ = h.sessions.Destroy(r.Context()) // the user is gone
		}
		target := "/login"
		if r.Method == http.MethodGet && r.URL.Path != "/" {
			target += "?next=" + url.QueryEscape(r.URL.RequestURI())
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
	})
}

// safeNext keeps a post-login target only when it is a path on this site.
func safeNext(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") || strings.ContainsAny(s, "\r\n") {
		return ""
	}
	return s
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, err := uuid.Parse(h.sessions.GetString(r.Context(), keyUserID)); err == nil {
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
)

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, fault.Invalid("the form could not be read"))
		return
	}
	email := strings.TrimSpace(r.PostFormValue("email"))
	password := r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	page := templates.LoginPage{Layout: h.layout(r, "Sign in"), Email: email, Next: next}

	addr := clientAddr(r)
	if wait := h.throttle.wait(email, addr); wait > 0 {
		w.Header().Set("Retry-After", itoa(secondsUp(wait)))
		page.Error = sprintf(msgThrottled, secondsUp(wait))
		h.render(w, r, http.StatusTooManyRequests, templates.Login(page))
		return
	}
	u, err := h.tenants.CheckLogin(r.Context(), email, password)
	if errors.Is(err, tenants.ErrBadLogin) || (err == nil && u.TenantID == nil && !u.Admin) {
		h.throttle.failed(email, addr)
		h.log.Info("dashboard sign-in failed", "email", email, "addr", addr)
		page.Error = msgBadLogin
		h.render(w, r, http.StatusUnauthorized, templates.Login(page))
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.throttle.succeeded(email)
	// A fresh token at sign-in, so a token planted before it (session fixation) is worthless.
	if err := h.sessions.RenewToken(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	h.sessions.Put(r.Context(), keyUserID, u.ID.String())
	if next == "" {
		next = "/"
		if u.TenantID == nil {
			next = "/admin"
		}
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logoutPage(w http.ResponseWriter, r *http.Request) {
	if _, err := uuid.Parse(h.sessions.GetString(r.Context(), keyUserID)); err != nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, templates.Logout(h.layout(r, "Sign out")))
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if err := h.sessions.Destroy(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	h.setFlash(r, "info", "You are signed out.") // in a new, empty session
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// clientAddr is the request's remote IP (no proxy headers are trusted).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func secondsUp(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// loginThrottle limits failed sign-ins per email and per client address, in memory: a burst, then one
// more per interval. Only failures spend tokens; a sign-in refused by it does not reach bcrypt.
type loginThrottle struct {
	now       func() time.Time
	perEmail  int
	perAddr   int
	every     time.Duration
	mu        sync.Mutex
	limiters  map[string]*rate.Limiter
	lastSweep time.Time
}

func newLoginThrottle(now func() time.Time, perEmail, perAddr int, every time.Duration) *loginThrottle {
	if perEmail <= 0 {
		perEmail = 5
	}
	if perAddr <= 0 {
		perAddr = 20
	}
	if every <= 0 {
		every = 30 * time.Second
	}
	return &loginThrottle{now: now, perEmail: perEmail, perAddr: perAddr, every: every, limiters: map[string]*rate.Limiter{}}
}

func (t *loginThrottle) keys(email, addr string) []struct {
	key   string
	burst int
} {
	return []struct {
		key   string
		burst int
	}{{"email:" + strings.ToLower(email), t.perEmail}, {"addr:" + addr, t.perAddr}}
}

// wait returns how long until another attempt is allowed for this email and address (0: now).
func (t *loginThrottle) wait(email, addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var longest time.Duration
	for _, k := range t.keys(email, addr) {
		l := t.limiters[k.key]
		if l == nil {
			continue
		}
		if tokens := l.TokensAt(now); tokens < 1 {
			d := time.Duration((1 - tokens) * float64(t.every))
			longest = max(longest, d)
		}
	}
	return longest
}

// failed spends a token of the email and of the address.
func (t *loginThrottle) failed(email, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, k := range t.keys(email, addr) {
		l := t.limiters[k.key]
		if l == nil {
			l = rate.NewLimiter(rate.Every(t.every), k.burst)
			t.limiters[k.key] = l
		}
		l.AllowN(now, 1)
	}
	t.sweep(now)
}

// succeeded forgets the email's failures (not the address's).
func (t *loginThrottle) succeeded(email string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.limiters, "email:"+strings.ToLower(email))
}

// sweep drops limiters that have refilled, at most once a minute, so the map stays small.
func (t *loginThrottle) sweep(now time.Time) {
	if now.Sub(t.lastSweep) < time.Minute {
		return
	}
	t.lastSweep = now
	for k, l := range t.limiters {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(t.limiters, k)
		}
	}
}
