package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestPublicURLIsValidated(t *testing.T) {
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
