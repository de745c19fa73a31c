package httpx

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
)

// CleanPath refuses, through bad, every request whose path holds what no path value may: bytes that are
// not UTF-8 (%FF, the overlong %C0%80) or control characters (%00, %0A). Both routers use it in front of
// their routes, so no handler sees such a path value: handed to PostgreSQL, a NUL or a byte that is not
// UTF-8 is an encoding error, and it would surface as a 500 instead of a clear refusal.
//
// r.URL.Path is the request path decoded once, so every path value chi extracts (decoded by PathValue
// where chi routed on the escaped path) is part of what is checked here.
func CleanPath(bad http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !CleanPathValue(r.URL.Path) {
				bad.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// CleanPathValue reports whether s is valid UTF-8 without control characters.
func CleanPathValue(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// PathValue is the {name} path value decoded exactly once. chi routes on the escaped path when the request
// has one that differs from the decoded path (a value with an escaped slash, a%2Fb), and its values are
// then still escaped; otherwise they are already decoded, and decoding them again would turn a literal
// %00 (sent as %2500) into a NUL.
func PathValue(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if d, err := url.PathUnescape(v); err == nil {
		return d
	}
	return v
}
