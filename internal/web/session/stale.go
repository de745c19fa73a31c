package session

import (
	"context"
	"net/http"
	"strings"
)

// Stale sits just outside the session middleware: when the request's cookie names a retired
// token, the answer must not set that cookie again (scs re-sends it with every answer), or the browser,
// which may already hold the new token, would go back to the old one and lose its session when the old
// one runs out.
func Stale(next http.Handler) http.Handler {
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
	stale := CookieName + "=" + w.loaded.retired
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
