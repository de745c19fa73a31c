package api_test

import "testing"

// Every API answer, errors included, carries the security headers: JSON never runs script, is framed or
// is sniffed as HTML.
func TestSecurityHeadersOnAPIAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	for _, r := range []reply{
		e.call("GET", "/tenants", adminToken, nil),
		e.call("GET", "/tenants", "", nil),
		e.call("GET", "/no/such/route", adminToken, nil),
	} {
		for name, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := r.header.Get(name); got != want {
				t.Errorf("%d answer: %s = %q, want %q", r.status, name, got, want)
			}
		}
	}
}
