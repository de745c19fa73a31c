package delivery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		want   Outcome
	}{
		{200, OutcomeDelivered}, {204, OutcomeDelivered}, {299, OutcomeDelivered},
		{301, OutcomeFailed}, {302, OutcomeFailed}, {304, OutcomeFailed}, {307, OutcomeFailed},
		{400, OutcomeFailed}, {401, OutcomeFailed}, {404, OutcomeFailed}, {410, OutcomeFailed}, {422, OutcomeFailed},
		{408, OutcomeRetry}, {425, OutcomeRetry}, {429, OutcomeRetry},
		{500, OutcomeRetry}, {502, OutcomeRetry}, {503, OutcomeRetry}, {504, OutcomeRetry},
		{0, OutcomeRetry}, // no response: timeout, connection or TLS error
	}
	for _, c := range cases {
		if got := Classify(c.status); got != c.want {
			t.Errorf("Classify(%d) = %s, want %s", c.status, got, c.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Base: 5 * time.Second, MaxDelay: 10 * time.Minute, MaxAttempts: 24, Window: 72 * time.Hour}

	t.Run("doubles", func(t *testing.T) {
		want := 5 * time.Second
		for n := 1; n <= 7; n++ { // 5 s … 320 s, under the cap
			if got := p.Backoff(n, 0.5); got != want {
				t.Errorf("Backoff(%d, 0.5) = %s, want %s", n, got, want)
			}
			want *= 2
		}
		if got := p.Backoff(0, 0.5); got != 5*time.Second {
			t.Errorf("Backoff(0) = %s, want the first delay", got)
		}
	})
	t.Run("jitter within ±10%", func(t *testing.T) {
		for n := 1; n <= 6; n++ {
			nominal := p.Backoff(n, 0.5)
			lo, hi := time.Duration(float64(nominal)*0.9), time.Duration(float64(nominal)*1.1)
			if got := p.Backoff(n, 0); got != lo {
				t.Errorf("Backoff(%d, 0) = %s, want %s (-10%%)", n, got, lo)
			}
			if got := p.Backoff(n, 0.999999); got > hi || got < hi-time.Millisecond {
				t.Errorf("Backoff(%d, ~1) = %s, want just under %s (+10%%)", n, got, hi)
			}
			for j := 0.0; j < 1; j += 0.05 {
				if got := p.Backoff(n, j); got < lo || got > hi {
					t.Errorf("Backoff(%d, %.2f) = %s, outside [%s, %s]", n, j, got, lo, hi)
				}
			}
		}
	})
	t.Run("capped", func(t *testing.T) {
		for _, n := range []int{8, 9, 20, 64, 2000} {
			for _, j := range []float64{0, 0.5, 0.999999} {
				if got := p.Backoff(n, j); got > p.MaxDelay || got < time.Duration(float64(p.MaxDelay)*0.9) {
					t.Errorf("Backoff(%d, %v) = %s, want within [0.9, 1] × %s", n, j, got, p.MaxDelay)
				}
			}
		}
		if got := p.Backoff(30, 0.5); got != p.MaxDelay {
			t.Errorf("Backoff(30, 0.5) = %s, want the cap %s", got, p.MaxDelay)
		}
	})
}

func TestDefaultScheduleFitsWindow(t *testing.T) {
	t.Parallel()
	p := DefaultRetryPolicy
	if p.Base != 5*time.Second || p.MaxDelay != 6*time.Hour || p.MaxAttempts != 24 || p.Window != 72*time.Hour {
		t.Fatalf("DefaultRetryPolicy = %+v, want the contract's 5s / 6h / 24 / 72h", p)
	}
	// 24 attempts are separated by 23 delays: the last attempt starts at their sum.
	var nominal, longest time.Duration
	for n := 1; n < p.MaxAttempts; n++ {
		nominal += p.Backoff(n, 0.5)
		longest += p.Backoff(n, 0.999999)
	}
	if nominal < 71*time.Hour || nominal > 72*time.Hour || nominal >= p.Window {
		t.Errorf("nominal schedule of %d attempts spans %s, want 71–72 h and under the %s window", p.MaxAttempts, nominal, p.Window)
	}
	t.Logf("24 attempts: nominal %s, with maximal jitter %s", nominal, longest)
}

func TestDecide(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Base: 10 * time.Second, MaxDelay: time.Hour, MaxAttempts: 5, Window: 24 * time.Hour}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	giveUp := now.Add(20 * time.Hour)
	cases := []struct {
		name     string
		r        Result
		attempt  int
		giveUpAt time.Time
		state    State
		outcome  Outcome
		next     time.Duration // from now, for Pending
		reason   string
	}{
		{"2xx delivered", Result{Status: 200}, 1, giveUp, Delivered, OutcomeDelivered, 0, ""},
		{"204 delivered on the last attempt", Result{Status: 204}, 5, giveUp, Delivered, OutcomeDelivered, 0, ""},
		{"400 failed at once", Result{Status: 400}, 1, giveUp, Failed, OutcomeFailed, 0, ReasonPermanentStatus},
		{"302 failed at once", Result{Status: 302}, 1, giveUp, Failed, OutcomeFailed, 0, ReasonPermanentStatus},
		{"500 retried with backoff", Result{Status: 500}, 1, giveUp, Pending, OutcomeRetry, 10 * time.Second, ""},
		{"third 503 doubles twice", Result{Status: 503}, 3, giveUp, Pending, OutcomeRetry, 40 * time.Second, ""},
		{"no response retried", Result{}, 2, giveUp, Pending, OutcomeRetry, 20 * time.Second, ""},
		{"Retry-After above backoff honoured", Result{Status: 429, RetryAfter: 2 * time.Minute}, 1, giveUp, Pending, OutcomeRetry, 2 * time.Minute, ""},
		{"Retry-After below backoff ignored", Result{Status: 429, RetryAfter: time.Second}, 2, giveUp, Pending, OutcomeRetry, 20 * time.Second, ""},
		{"Retry-After capped at MaxDelay", Result{Status: 503, RetryAfter: 30 * time.Hour}, 1, now.Add(48 * time.Hour), Pending, OutcomeRetry, time.Hour, ""},
		{"max attempts expires", Result{Status: 500}, 5, giveUp, Expired, OutcomeRetry, 0, ReasonMaxAttempts},
		{"past max attempts expires", Result{Status: 429}, 9, giveUp, Expired, OutcomeRetry, 0, ReasonMaxAttempts},
		{"next try past give_up_at expires", Result{Status: 500}, 1, now.Add(5 * time.Second), Expired, OutcomeRetry, 0, ReasonDeadline},
		{"next try exactly at give_up_at expires", Result{Status: 500}, 1, now.Add(10 * time.Second), Expired, OutcomeRetry, 0, ReasonDeadline},
		{"Retry-After past give_up_at expires", Result{Status: 429, RetryAfter: 50 * time.Minute}, 1, now.Add(30 * time.Minute), Expired, OutcomeRetry, 0, ReasonDeadline},
		{"give_up_at passed expires", Result{Status: 500}, 1, now.Add(-time.Minute), Expired, OutcomeRetry, 0, ReasonDeadline},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Decide(c.r, c.attempt, c.giveUpAt, now, 0.5)
			if d.State != c.state || d.Outcome != c.outcome || d.DeadReason != c.reason {
				t.Fatalf("Decide = %+v, want state %s outcome %s reason %q", d, c.state, c.outcome, c.reason)
			}
			want := now
			if c.state == Pending {
				want = now.Add(c.next)
			}
			if !d.NextAttemptAt.Equal(want) {
				t.Errorf("NextAttemptAt = now+%s, want now+%s", d.NextAttemptAt.Sub(now), want.Sub(now))
			}
		})
	}
}

func TestCanTransition(t *testing.T) {
	t.Parallel()
	allowed := map[[2]State]bool{
		{Pending, InFlight}: true, {Pending, Failed}: true, {Pending, Pending}: true, // retry now
		{InFlight, Delivered}: true, {InFlight, Pending}: true, {InFlight, Failed}: true, {InFlight, Expired}: true,
		{Delivered, Pending}: true, {Failed, Pending}: true, {Expired, Pending}: true,
	}
	for _, from := range States {
		for _, to := range States {
			if got := CanTransition(from, to); got != allowed[[2]State{from, to}] {
				t.Errorf("CanTransition(%s, %s) = %v", from, to, got)
			}
		}
	}
	if CanTransition("bogus", Pending) || CanTransition(Pending, "bogus") {
		t.Error("unknown states must not transition")
	}
	for s, want := range map[State]bool{Pending: false, InFlight: false, Delivered: true, Failed: true, Expired: true} {
		if Retryable(s) != want {
			t.Errorf("Retryable(%s) = %v, want %v", s, !want, want)
		}
	}
	for s, want := range map[State]bool{Pending: false, InFlight: false, Delivered: false, Failed: true, Expired: true} {
		if s.Dead() != want {
			t.Errorf("%s.Dead() = %v, want %v", s, !want, want)
		}
	}
}

// specSign is the Standard Webhooks signature written from the spec, independently of Sign: the key is the
// base64 after "whsec_", the signed content is "msg_id.timestamp.payload", the value "v1," + base64(HMAC-SHA256).
func specSign(t *testing.T, secret, msgID string, ts int64, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.%s", msgID, ts, body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestSign(t *testing.T) {
	t.Parallel()
	// The Standard Webhooks reference test vector.
	got, err := Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("reference vector: got %s, want %s", got, want)
	}

	secrets := []string{NewSecret(), NewSecret(), NewSecret()}
	body := []byte(`{"type":"a.b","timestamp":"2026-01-01T00:00:00Z","data":{"x":"é<>&"}}`)
	got, err = Sign(secrets, "0190c2a5-0000-7000-8000-000000000000", 1767225600, body)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(got, " ")
	if len(parts) != len(secrets) {
		t.Fatalf("got %d signatures for %d secrets: %q", len(parts), len(secrets), got)
	}
	for i, s := range secrets {
		if want := specSign(t, s, "0190c2a5-0000-7000-8000-000000000000", 1767225600, body); parts[i] != want {
			t.Errorf("signature %d = %s, want %s", i, parts[i], want)
		}
	}
	if !strings.HasPrefix(secrets[0], "whsec_") || secrets[0] == secrets[1] {
		t.Errorf("NewSecret gave %q and %q", secrets[0], secrets[1])
	}
	if _, err := Sign([]string{"not-a-secret"}, "id", 1, body); err == nil {
		t.Error("a secret without whsec_ must be refused")
	}
	if _, err := Sign(nil, "id", 1, body); err == nil {
		t.Error("no secret must be refused")
	}
}

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"127.0.0.1": false, "127.1.2.3": false, "0.0.0.0": false,
		"10.0.0.1": false, "10.255.255.255": false,
		"172.16.0.1": false, "172.31.255.254": false, "172.32.0.1": true,
		"192.168.1.1":     false,
		"169.254.169.254": false, "169.254.0.1": false,
		"100.64.0.1": false, "100.127.255.254": false, "100.128.0.1": true,
		"224.0.0.1": false, "255.255.255.255": false, "198.18.0.1": false,
		"::1": false, "::": false, "fc00::1": false, "fd12:3456::1": false, "fe80::1": false, "ff02::1": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "::ffff:169.254.169.254": false, "64:ff9b::a00:1": false,
		"8.8.8.8": true, "1.1.1.1": true, "93.184.216.34": true, "2606:4700:4700::1111": true, "::ffff:8.8.8.8": true,
		// documentation, benchmarking and reserved ranges, and IPv6 forms that embed or translate IPv4
		"192.0.2.1": false, "198.51.100.7": false, "203.0.113.9": false, "192.0.0.8": false, "240.1.2.3": false,
		"fec0::1": false, "::10.0.0.1": false, "::127.0.0.1": false, "2002:a00:1::1": false, "2002:808:808::1": false,
		"2001::1": false, "2001:db8::1": false, "64:ff9b:1::1": false, "100::1": false, "3fff::1": false,
		"2001:4860:4860::8888": true,
	}
	for s, want := range cases {
		if got := PublicAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", s, got, want)
		}
	}
	if PublicAddr(netip.Addr{}) {
		t.Error("the zero address must not be public")
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"": 0, "120": 2 * time.Minute, " 5 ": 5 * time.Second, "-3": 0, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	}
	for v, want := range cases {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

// Every probe wait, the first included, is capped at HOOKLINE_RETRY_MAX_DELAY (the contract), so a short
// maximum delay shortens the first probe too.
func TestBreakerDefaultsCapTheProbeWait(t *testing.T) {
	t.Parallel()
	b := Breaker{ProbeMax: time.Second}
	b.defaults()
	if b.Threshold != 10 || b.ProbeInterval != time.Second || b.ProbeMax != time.Second {
		t.Fatalf("defaults with a 1 s cap: %+v, want threshold 10 and a 1 s probe", b)
	}
	b = Breaker{}
	b.defaults()
	if b.ProbeInterval != 30*time.Second || b.ProbeMax != 6*time.Hour {
		t.Fatalf("defaults: %+v", b)
	}
}

func TestDeadReasonText(t *testing.T) {
	t.Parallel()
	status := func(n int) *int { return &n }
	for _, tc := range []struct {
		reason string
		status *int
		want   string
	}{
		{ReasonPermanentStatus, status(404), "404 Not Found"},
		{ReasonPermanentStatus, status(302), "302 Found"},
		{ReasonPermanentStatus, status(499), "499"},
		{ReasonPermanentStatus, nil, "permanent error"},
		{ReasonMaxAttempts, status(503), "out of attempts"},
		{ReasonDeadline, nil, "past its deadline"},
		{ReasonSubscriptionDeleted, nil, "subscription deleted"},
	} {
		if got := DeadReasonText(tc.reason, tc.status); got != tc.want {
			t.Errorf("DeadReasonText(%s, %v) = %q, want %q", tc.reason, tc.status, got, tc.want)
		}
	}
}

// With an endpoint's own schedule, retry n waits its n-th delay (jittered ±10 %, not capped by the
// process's MaxDelay), and the delivery expires after the last one, or at its deadline if that is sooner.
func TestDecideWithASchedule(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{Base: time.Second, MaxDelay: time.Minute, MaxAttempts: 24, Window: 72 * time.Hour}.
		WithSchedule([]int32{30, 600, 7200})
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	giveUp := now.Add(72 * time.Hour)
	for attempt, want := range map[int]time.Duration{1: 30 * time.Second, 2: 10 * time.Minute, 3: 2 * time.Hour} {
		d := p.Decide(Result{Status: 503}, attempt, giveUp, now, 0.5)
		if d.State != Pending || d.NextAttemptAt.Sub(now) != want {
			t.Errorf("after attempt %d: %s at +%s, want pending at +%s", attempt, d.State, d.NextAttemptAt.Sub(now), want)
		}
		lo := p.Decide(Result{Status: 503}, attempt, giveUp, now, 0)
		hi := p.Decide(Result{Status: 503}, attempt, giveUp, now, 0.999)
		if lo.NextAttemptAt.Sub(now) != want*9/10 || hi.NextAttemptAt.Sub(now) <= want*109/100 {
			t.Errorf("after attempt %d: jitter range %s..%s, want ±10 %% of %s", attempt, lo.NextAttemptAt.Sub(now), hi.NextAttemptAt.Sub(now), want)
		}
	}
	if d := p.Decide(Result{Status: 503}, 4, giveUp, now, 0.5); d.State != Expired || d.DeadReason != ReasonMaxAttempts {
		t.Errorf("after the last delay's attempt: %+v, want expired (max attempts)", d)
	}
	if d := p.Decide(Result{Status: 503}, 3, now.Add(time.Hour), now, 0.5); d.State != Expired || d.DeadReason != ReasonDeadline {
		t.Errorf("a delay past the deadline: %+v, want expired (deadline)", d)
	}
	if got := DefaultRetryPolicy.WithSchedule(nil); got.MaxAttempts != DefaultRetryPolicy.MaxAttempts || got.Schedule != nil {
		t.Errorf("no schedule changed the policy: %+v", got)
	}
}

// A 401 to an OAuth 2 access token is retried (the token was dropped; the next attempt asks for a new one);
// any other 401 fails at once as before.
func TestDecideTokenRefusedIsTransient(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if d := DefaultRetryPolicy.Decide(Result{Status: 401, TokenRefused: true}, 1, now.Add(time.Hour), now, 0.5); d.Outcome != OutcomeRetry || d.State != Pending {
		t.Errorf("401 to a token: %+v, want a retry", d)
	}
	if d := DefaultRetryPolicy.Decide(Result{Status: 401}, 1, now.Add(time.Hour), now, 0.5); d.Outcome != OutcomeFailed || d.State != Failed {
		t.Errorf("401 without a token: %+v, want failed", d)
	}
}
