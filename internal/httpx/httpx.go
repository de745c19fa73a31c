// Package httpx holds HTTP plumbing shared by the API and the dashboard: correlation ids, request logging
// and panic recovery.
package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

type ctxKey int

const (
	correlationKey ctxKey = iota
	loggerKey
)

// CorrelationHeader carries a request's correlation id in and out.
const CorrelationHeader = "X-Correlation-ID"

var correlationRE = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)

// CorrelationID returns the request's correlation id.
func CorrelationID(ctx context.Context) string {
	s, _ := ctx.Value(correlationKey).(string)
	return s
}

// Logger returns the request's logger, which carries its correlation id.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// WithLogger puts a logger in ctx.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey, l)
}

// LogPath is a request path as logs may show it: a customer portal link's token (/portal/<token>) is a
// credential until used, so logs name its route instead.
func LogPath(path string) string {
	if strings.HasPrefix(path, "/portal/") {
		return "/portal/{token}"
	}
	return path
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Middleware gives every request a correlation id (the caller's own when it sent a sane one), echoes it in
// the response, puts a logger carrying it in the context, logs the request when it ends and turns a panic
// into a 500 (onPanic renders it).
func Middleware(base *slog.Logger, onPanic func(http.ResponseWriter, *http.Request)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get(CorrelationHeader)
			if !correlationRE.MatchString(id) {
				id = newID()
			}
			w.Header().Set(CorrelationHeader, id)
			l := base.With("correlation_id", id)
			ctx := context.WithValue(r.Context(), correlationKey, id)
			ctx = context.WithValue(ctx, loggerKey, l)
			r = r.WithContext(ctx)
			sw := &statusWriter{ResponseWriter: w}
			start := time.Now()
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					l.Error("panic serving request", "panic", p, "method", r.Method, "path", LogPath(r.URL.Path))
					if sw.status == 0 {
						onPanic(sw, r)
					}
				}
				level := slog.LevelInfo
				if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" {
					level = slog.LevelDebug
				}
				l.Log(r.Context(), level, "request", "method", r.Method, "path", LogPath(r.URL.Path), "status", sw.status,
					"bytes", sw.bytes, "duration_ms", time.Since(start).Milliseconds())
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

// RedactURL is a URL fit for errors, logs and the activity log: any user and password are dropped (a
// password in a URL is a mistake, but it is still a password). A string that does not parse is not repeated
// at all: it may be a URL whose malformed part is where its password was.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(not a URL)"
	}
	u.User = nil
	return u.String()
}
