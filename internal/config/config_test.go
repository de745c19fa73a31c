package config

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsMatchTheContract(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"addr", c.Addr, ":8080"},
		{"retry base", c.RetryBase, 5 * time.Second},
		{"retry max delay", c.RetryMaxDelay, 6 * time.Hour},
		{"max attempts", c.RetryMaxAttempts, 24},
		{"window", c.RetryWindow, 72 * time.Hour},
		{"attempt timeout", c.AttemptTimeout, 15 * time.Second},
		{"allow private", c.AllowPrivateNetworks, false},
		{"resend per minute", c.ResendPerMinute, 100},
		{"max manual retries", c.MaxManualRetries, 3},
		{"retention delivered", c.RetentionDelivered, 720 * time.Hour},
		{"retention dead", c.RetentionDead, 2160 * time.Hour},
		{"retention interval", c.RetentionInterval, time.Minute},
		{"auto disable", c.AutoDisableAfter, 24 * time.Hour},
		{"api rate", c.APIRatePerSecond, 0.0},
		{"demo receiver", c.DemoReceiverAddr, "127.0.0.1:8081"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestEnvironmentAndFlags(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"-retry-max-attempts", "7"}, env(map[string]string{
		"HOOKLINE_RETRY_BASE": "200ms", "HOOKLINE_RETRY_MAX_ATTEMPTS": "4", "HOOKLINE_ALLOW_PRIVATE_NETWORKS": "true",
		"DATABASE_URL": "postgres://x@localhost/y",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.RetryBase != 200*time.Millisecond || !c.AllowPrivateNetworks || c.DatabaseURL != "postgres://x@localhost/y" {
		t.Errorf("environment not applied: %+v", c)
	}
	if c.RetryMaxAttempts != 7 {
		t.Errorf("flag should win over the environment: max attempts %d, want 7", c.RetryMaxAttempts)
	}
}

func TestBadValuesAreClearErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []map[string]string{
		{"HOOKLINE_RETRY_BASE": "five seconds"},
		{"HOOKLINE_RETRY_MAX_ATTEMPTS": "0"},
		{"HOOKLINE_ALLOW_PRIVATE_NETWORKS": "maybe"},
		{"HOOKLINE_LOG_FORMAT": "xml"},
		{"HOOKLINE_RETENTION_INTERVAL": "0s"},
	} {
		if _, err := Load(nil, env(tc)); err == nil {
			t.Errorf("%v: no error", tc)
		}
	}
	if _, err := Load([]string{"frobnicate"}, env(nil)); err == nil {
		t.Error("unknown command accepted")
	}
}

// The API limit: off by default, the burst twice the rate unless set, flags mirroring the variables, and
// a negative or non-numeric rate refused.
func TestAPIRateLimitSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env   map[string]string
		args  []string
		rate  float64
		burst int
	}{
		{nil, nil, 0, 1},
		{map[string]string{"HOOKLINE_API_RATE_PER_SECOND": "50"}, nil, 50, 100},
		{map[string]string{"HOOKLINE_API_RATE_PER_SECOND": "0.5"}, nil, 0.5, 1},
		{map[string]string{"HOOKLINE_API_RATE_PER_SECOND": "50", "HOOKLINE_API_BURST": "7"}, nil, 50, 7},
		{nil, []string{"-api-rate-per-second", "10", "-api-burst", "3"}, 10, 3},
	} {
		c, err := Load(tc.args, env(tc.env))
		if err != nil {
			t.Fatalf("%v %v: %v", tc.env, tc.args, err)
		}
		if c.APIRatePerSecond != tc.rate || c.APIBurst != tc.burst {
			t.Errorf("%v %v: rate %v burst %d, want %v and %d", tc.env, tc.args, c.APIRatePerSecond, c.APIBurst, tc.rate, tc.burst)
		}
	}
	for _, bad := range []map[string]string{
		{"HOOKLINE_API_RATE_PER_SECOND": "-1"}, {"HOOKLINE_API_RATE_PER_SECOND": "fast"},
		{"HOOKLINE_API_RATE_PER_SECOND": "NaN"}, {"HOOKLINE_API_BURST": "-2"}, {"HOOKLINE_RETENTION_RATE": "-5"},
	} {
		if _, err := Load(nil, env(bad)); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// The demo receiver listens on loopback only (the SSRF guard lets the sender reach exactly that address).
func TestDemoReceiverAddr(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{"127.0.0.1:8081": true, "[::1]:9000": true, "127.0.0.1:0": true,
		"0.0.0.0:8081": false, "localhost:8081": false, "10.0.0.1:8081": false, ":8081": false} {
		_, err := Load(nil, env(map[string]string{"HOOKLINE_DEMO": "true", "HOOKLINE_DEMO_RECEIVER_ADDR": addr}))
		if (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "HOOKLINE_DEMO_RECEIVER_ADDR") {
			t.Errorf("%s: the error does not name the variable: %v", addr, err)
		}
	}
	if _, err := Load(nil, env(map[string]string{"HOOKLINE_DEMO_RECEIVER_ADDR": "0.0.0.0:1"})); err != nil {
		t.Errorf("checked without HOOKLINE_DEMO: %v", err)
	}
}

func TestMigrateCommandAndHelp(t *testing.T) { // not parallel: it sets flagOutput
	if _, err := Load([]string{"migrate"}, env(nil)); err != nil {
		t.Fatal(err)
	}
	if !MigrateOnly([]string{"-addr", ":1", "migrate"}) || MigrateOnly(nil) {
		t.Error("MigrateOnly")
	}
	flagOutput = io.Discard
	defer func() { flagOutput = nil }()
	if _, err := Load([]string{"-h"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestSecretKeyIsValidated(t *testing.T) {
	t.Parallel()
	good := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // 32 bytes
	other := "HxwdHhsaGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA="
	for _, ok := range []string{"", good, good + "," + other, good + ", " + other} {
		if _, err := Load(nil, env(map[string]string{"HOOKLINE_SECRET_KEY": ok})); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tc := range []struct{ key, want string }{
		{"not-a-key!", "not base64"},
		{"AAECAwQFBgcICQoLDA0ODw==", "16 bytes, want 32"},
		{good + ",", "key 2 is empty"},
		{good + ",xyz!", "key 2 is not base64"},
	} {
		_, err := Load(nil, env(map[string]string{"HOOKLINE_SECRET_KEY": tc.key}))
		if err == nil || !strings.Contains(err.Error(), "HOOKLINE_SECRET_KEY") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming HOOKLINE_SECRET_KEY and %q", tc.key, err, tc.want)
		}
	}
}

func TestReencryptCommand(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"reencrypt"}, env(map[string]string{"HOOKLINE_SECRET_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}))
	if err != nil || c.Command != CommandReencrypt {
		t.Fatalf("reencrypt: %q, %v", c.Command, err)
	}
	if _, err := Load([]string{"reencrypt"}, env(nil)); err == nil || !strings.Contains(err.Error(), "HOOKLINE_SECRET_KEY") {
		t.Fatalf("reencrypt without a key: %v", err)
	}
	if c, _ := Load([]string{"migrate"}, env(nil)); c.Command != CommandMigrate {
		t.Fatalf("migrate: %q", c.Command)
	}
}

func TestEventTypesMode(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{"": EventTypesAny, "any": EventTypesAny, "registered": EventTypesRegistered} {
		c, err := Load(nil, env(map[string]string{"HOOKLINE_EVENT_TYPES": v}))
		if err != nil || c.EventTypes != want {
			t.Errorf("HOOKLINE_EVENT_TYPES=%q: %q, %v; want %q", v, c.EventTypes, err, want)
		}
	}
	for _, v := range []string{"Registered", "all", "strict"} {
		if _, err := Load(nil, env(map[string]string{"HOOKLINE_EVENT_TYPES": v})); err == nil || !strings.Contains(err.Error(), "HOOKLINE_EVENT_TYPES must be any or registered") {
			t.Errorf("HOOKLINE_EVENT_TYPES=%q: %v, want a refusal naming the values", v, err)
		}
	}
	if c, err := Load([]string{"-event-types", "registered"}, env(nil)); err != nil || c.EventTypes != EventTypesRegistered {
		t.Errorf("flag -event-types: %q %v", c.EventTypes, err)
	}
}
