package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/config"
)

// signIn posts the sign-in form with extra headers and returns the answer without following it.
func signIn(t *testing.T, e *env, email string, header http.Header) *http.Response {
	t.Helper()
	form := url.Values{"email": {email}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, e.base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in as %s: %d", email, res.StatusCode)
	}
	return res
}

// Behind a TLS-terminating proxy (HOOKLINE_PUBLIC_URL on https) the session cookie is Secure although the
// proxy talks plain HTTP to us, and every page asks browsers for https only (HSTS).
func TestHTTPSPublicURLMakesCookiesSecureAndSendsHSTS(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, func(c *config.Config) { c.PublicURL = "https://hooks.example.com" })
	tn := e.newTenant("https-public")
	res := signIn(t, e, tn.Email, nil)
	if set := res.Header.Get("Set-Cookie"); !strings.Contains(set, "hookline_session=") || !strings.Contains(set, "; Secure") {
		t.Errorf("cookie behind an https public URL: %q", set)
	}
	for _, path := range []string{"/login", "/no/such/page", "/static/app.css"} {
		res, err := http.Get(e.base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
			t.Errorf("GET %s: Strict-Transport-Security %q", path, got)
		}
	}
}

// Without an https public URL nothing claims https: no Secure cookie, no HSTS, whatever headers say
// when they come from an address that is not a trusted proxy.
func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	plain := setup(t, httpOnly, nil)
	tn := plain.newTenant("untrusted-proxy")
	spoof := http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-For": {"203.0.113.99"}}
	res := signIn(t, plain, tn.Email, spoof)
	if set := res.Header.Get("Set-Cookie"); strings.Contains(set, "Secure") {
		t.Errorf("an untrusted X-Forwarded-Proto made the cookie Secure: %q", set)
	}
	if res.Header.Get("Strict-Transport-Security") != "" {
		t.Error("HSTS over plain http")
	}
	// The throttle counts the connection's address, not the one claimed.
	sp := plain.client()
	sp.header = spoof
	sp.post("/login", url.Values{"email": {"spoof@example.com"}, "password": {"x"}})
	if plain.throttleRows("203.0.113.99") != 0 || plain.throttleRows("addr:127.0.0.1") != 1 {
		t.Errorf("untrusted X-Forwarded-For: %d rows for the claimed address, %d for the peer",
			plain.throttleRows("203.0.113.99"), plain.throttleRows("addr:127.0.0.1"))
	}

	// From a trusted proxy both are believed: the cookie is Secure, the page sends HSTS, and the
	// throttle counts the client the proxy names (the last hop that is not itself a trusted proxy).
	proxied := setup(t, httpOnly, func(c *config.Config) { c.TrustedProxies = "127.0.0.1/32, 10.0.0.0/8" })
	res = signIn(t, proxied, tn.Email, http.Header{"X-Forwarded-Proto": {"https"}})
	if set := res.Header.Get("Set-Cookie"); !strings.Contains(set, "; Secure") {
		t.Errorf("a trusted X-Forwarded-Proto: https left the cookie without Secure: %q", set)
	}
	if res.Header.Get("Strict-Transport-Security") != "max-age=31536000" {
		t.Errorf("no HSTS behind a trusted https proxy: %q", res.Header.Get("Strict-Transport-Security"))
	}
	c := proxied.client()
	c.header = http.Header{"X-Forwarded-For": {"192.0.2.1, 203.0.113.77, 10.1.2.3"}}
	c.post("/login", url.Values{"email": {"proxied@example.com"}, "password": {"x"}})
	if proxied.throttleRows("addr:203.0.113.77") != 1 || proxied.throttleRows("192.0.2.1") != 0 || proxied.throttleRows("10.1.2.3") != 0 {
		t.Error("the throttle did not count the client named by the trusted proxies")
	}
}
