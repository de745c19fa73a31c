package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestPublicURLIsValidated(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://hooks.example.com", "http://localhost:8080/", "https://example.com/hookline"} {
		if _, err := Load(nil, env(map[string]string{"HOOKLINE_PUBLIC_URL": ok})); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"hooks.example.com", "/dashboard", "ftp://example.com", "https://", "https://user:pw@example.com", "http://[::1"} {
		_, err := Load(nil, env(map[string]string{"HOOKLINE_PUBLIC_URL": bad}))
		if err == nil || !strings.Contains(err.Error(), "HOOKLINE_PUBLIC_URL") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestTrustedProxiesAreValidated(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(map[string]string{"HOOKLINE_TRUSTED_PROXIES": " 10.0.0.0/8, 192.168.1.7 ,fd00::/8,"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseTrustedProxies(c.TrustedProxies)
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("fd00::/8")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("parsed %v (%v), want %v", got, err, want)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.internal", "10.0.0.0/8;10.1.0.0/16", "*"} {
		_, err := Load(nil, env(map[string]string{"HOOKLINE_TRUSTED_PROXIES": bad}))
		if err == nil || !strings.Contains(err.Error(), "HOOKLINE_TRUSTED_PROXIES") || !strings.Contains(err.Error(), "CIDR") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// A URL with credentials that Load refuses must not print them back: start-up errors end up in logs.
func TestURLErrorsNeverPrintCredentials(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-pw"
	for _, tc := range []struct{ env, value string }{
		{"HOOKLINE_PUBLIC_URL", "https://admin:" + secret + "@hooks.example.com"},
		{"HOOKLINE_PUBLIC_URL", "https://" + secret + "@hooks.example.com"},
		{"HOOKLINE_PUBLIC_URL", "https://admin:" + secret + "@hooks.example.com:bad"},
		{"HOOKLINE_PUBLIC_URL", "ftp://admin:" + secret + "@hooks.example.com"},
		{"DATABASE_URL", "postgres://hookline:" + secret + "@db.internal:bad/hookline"},
		{"DATABASE_URL", "postgres://hookline:" + secret + "@db.internal:5432/%zz"},
		{"HOOKLINE_SMTP_URL", "smtp://mailer:" + secret + "@mail.example.com"},
		{"HOOKLINE_SMTP_URL", "smtp://mailer:" + secret + "@mail.example.com:99999"},
		{"HOOKLINE_SMTP_URL", "ftp://mailer:" + secret + "@mail.example.com:25"},
		{"HOOKLINE_SMTP_URL", "smtp://mailer:" + secret + "@mail.example.com:bad"},
	} {
		_, err := Load(nil, env(map[string]string{tc.env: tc.value}))
		if err == nil {
			t.Errorf("%s=%q accepted", tc.env, tc.value)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error prints the credentials: %v", tc.env, err)
		}
		if !strings.Contains(err.Error(), tc.env) {
			t.Errorf("%s: the error does not name the variable: %v", tc.env, err)
		}
	}
}
