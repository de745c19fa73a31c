package core

import (
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// A certificate's expiry counts whole days down, says "under a day" on its last day, and "expired on"
// from its not_after on.
func TestCertificateExpiry(t *testing.T) {
	t.Parallel()
	notAfter := time.Date(2027, 3, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		before  time.Duration // now is notAfter minus this
		want    string
		expired bool
	}{
		{95*24*time.Hour + 20*time.Hour, "expires 3 Mar 2027 (in 95 days)", false},
		{2 * 24 * time.Hour, "expires 3 Mar 2027 (in 2 days)", false},
		{24*time.Hour + time.Minute, "expires 3 Mar 2027 (in 1 day)", false},
		{23 * time.Hour, "expires 3 Mar 2027 (in under a day)", false},
		{time.Second, "expires 3 Mar 2027 (in under a day)", false},
		{0, "expired on 3 Mar 2027", true},
		{-40 * 24 * time.Hour, "expired on 3 Mar 2027", true},
	} {
		got, expired := CertificateExpiry(notAfter.Add(-tc.before), notAfter)
		if got != tc.want || expired != tc.expired {
			t.Errorf("%s before: %q (expired %v), want %q (%v)", tc.before, got, expired, tc.want, tc.expired)
		}
	}
	// The date is the UTC one, whatever the zone the time is in.
	tokyo := time.FixedZone("JST", 9*3600)
	if got, _ := CertificateExpiry(time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 3, 4, 1, 0, 0, 0, tokyo)); got != "expires 3 Mar 2027 (in 2 days)" {
		t.Errorf("a not_after in JST: %q", got)
	}
}

func TestAuthText(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, tc := range []struct {
		in   *subscriptions.AuthView
		want string
	}{
		{nil, ""},
		{&subscriptions.AuthView{Type: "basic", Username: "billing", PasswordSet: &yes}, "Basic auth as billing, password set"},
		{&subscriptions.AuthView{Type: "basic", Username: "billing", PasswordSet: &no}, "Basic auth as billing, no password set"},
		{&subscriptions.AuthView{Type: "oauth2_client_credentials", TokenURL: "https://auth.example.com:8443/oauth/token?x=1", ClientID: "c1",
			ClientSecretSet: &yes, Scopes: []string{}}, "OAuth 2 client credentials via auth.example.com:8443, client c1"},
		{&subscriptions.AuthView{Type: "oauth2_client_credentials", TokenURL: "https://auth.example.com/token", ClientID: "c1",
			ClientSecretSet: &yes, Scopes: []string{"a:read", "b"}, Audience: "api"}, "OAuth 2 client credentials via auth.example.com, client c1, scopes a:read b, audience api"},
	} {
		if got := AuthText(tc.in); got != tc.want {
			t.Errorf("AuthText(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The standard schedule is the server's policy in words; custom delays are listed, and say so when they
// add up to more than the window that still bounds them.
func TestScheduleText(t *testing.T) {
	t.Parallel()
	h := &Handler{Policy: delivery.RetryPolicy{Base: 5 * time.Second, MaxDelay: time.Hour, MaxAttempts: 24, Window: 72 * time.Hour}}
	for _, tc := range []struct {
		delays []string
		want   string
	}{
		{nil, "Standard: up to 24 attempts in all, the first retry after about 5 seconds, each wait doubling up to 1 hour, for up to 72 hours after the event."},
		{[]string{"30s", "5m", "1h"}, "Custom: 30s → 5m → 1h, then the delivery expires."},
		{[]string{"24h", "24h", "24h"}, "Custom: 24h → 24h → 24h, then the delivery expires (at the latest 72 hours after the event)."},
	} {
		if got := h.ScheduleText(tc.delays); got != tc.want {
			t.Errorf("ScheduleText(%v) = %q, want %q", tc.delays, got, tc.want)
		}
	}
}
