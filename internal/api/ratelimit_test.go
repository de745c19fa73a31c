package api_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/server"
)

// testClock is a clock the test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// newEnvAt is newEnv with the server on clock, on a database of its own: its worker and maintenance run
// on that clock too, and must not work on the other tests' deliveries.
func newEnvAt(t *testing.T, svc services, clock *testClock, mutate func(*config.Config)) *env {
	t.Helper()
	cfg := testConfig(t)
	ownDatabase(t)(&cfg)
	mutate(&cfg)
	return start(t, svc, cfg, server.Options{Now: clock.Now})
}

// HOOKLINE_API_RATE_PER_SECOND and HOOKLINE_API_BURST: a token past its burst gets 429 RATE_LIMITED with
// Retry-After in the contract's error shape, refused requests do not push it further back, its bucket
// refills on the clock, and nobody else is slowed: another token of the same tenant, another tenant's
// token, the admin token.
func TestAPIRateLimitPerToken(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Now()}
	e := newEnvAt(t, httpOnly, clock, func(c *config.Config) { c.APIRatePerSecond, c.APIBurst, c.APIRateWait = 1, 2, 0 })
	a, b := e.newTenant("limited"), e.newTenant("neighbour")
	noisy, quiet := e.newToken(a, "subscriptions:read"), e.newToken(a, "subscriptions:read")
	other := e.newToken(b, "subscriptions:read")
	list := func(tenantID, token string) reply {
		return e.call("GET", "/tenants/"+tenantID+"/subscriptions", token, nil)
	}

	for i := range 2 {
		if r := list(a, noisy); r.status != 200 {
			t.Fatalf("request %d within the burst: %s", i+1, r)
		}
	}
	for i := range 3 {
		r := list(a, noisy)
		wantError(t, "past the burst", r, "RATE_LIMITED")
		if got := r.header.Get("Retry-After"); got != "1" {
			t.Errorf("refusal %d: Retry-After %q, want 1 (one request a second)", i+1, got)
		}
	}
	if r := list(a, quiet); r.status != 200 {
		t.Errorf("another token of the same tenant: %s", r)
	}
	if r := list(b, other); r.status != 200 {
		t.Errorf("another tenant's token: %s", r)
	}
	for i := range 10 {
		if r := list(a, adminToken); r.status != 200 {
			t.Fatalf("admin request %d: %s", i+1, r)
		}
	}
	clock.Add(time.Second)
	if r := list(a, noisy); r.status != 200 {
		t.Errorf("a second later: %s", r)
	}
	wantError(t, "the refilled request spent", list(a, noisy), "RATE_LIMITED")
}

// A fractional rate still says Retry-After in whole seconds, rounded up.
func TestAPIRateLimitRetryAfterRoundsUp(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Now()}
	e := newEnvAt(t, httpOnly, clock, func(c *config.Config) { c.APIRatePerSecond, c.APIBurst, c.APIRateWait = 0.4, 1, 0 })
	a := e.newTenant("slow")
	tok := e.newToken(a, "subscriptions:read")
	if r := e.call("GET", "/tenants/"+a+"/subscriptions", tok, nil); r.status != 200 {
		t.Fatalf("first request: %s", r)
	}
	r := e.call("GET", "/tenants/"+a+"/subscriptions", tok, nil)
	wantError(t, "second request", r, "RATE_LIMITED")
	if got := r.header.Get("Retry-After"); got != "3" {
		t.Errorf("Retry-After %q, want 3 (2.5 s rounded up)", got)
	}
}

// Off by default: one token's many requests are all served.
func TestAPIRateLimitOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	a := e.newTenant("unlimited")
	tok := e.newToken(a, "subscriptions:read")
	for i := range 50 {
		if r := e.call("GET", "/tenants/"+a+"/subscriptions", tok, nil); r.status != 200 {
			t.Fatalf("request %d: %s", i+1, r)
		}
	}
}

// With HOOKLINE_API_RATE_WAIT a request over the rate is held for its turn instead of refused: concurrent
// requests past the burst all succeed, spaced at the rate; one whose turn is further off than the wait is
// refused with 429.
func TestAPIRateLimitHoldsRequestsForTheirTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly, func(c *config.Config) { c.APIRatePerSecond, c.APIBurst, c.APIRateWait = 20, 1, time.Second })
	a := e.newTenant("held")
	tok := e.newToken(a, "subscriptions:read")
	start := time.Now()
	var wg sync.WaitGroup
	statuses := make([]int, 6)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = e.call("GET", "/tenants/"+a+"/subscriptions", tok, nil).status
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("request %d: %d, want 200 (held for its turn, at most 250 ms)", i+1, s)
		}
	}
	// Six requests at 20/s with a burst of one cannot all be served in less than 5 × 50 ms.
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("six requests took %v: they were not held for their turns", took)
	}

	slow := newEnv(t, httpOnly, func(c *config.Config) { c.APIRatePerSecond, c.APIBurst, c.APIRateWait = 1, 1, 500*time.Millisecond })
	b := slow.newTenant("refused")
	tk := slow.newToken(b, "subscriptions:read")
	if r := slow.call("GET", "/tenants/"+b+"/subscriptions", tk, nil); r.status != 200 {
		t.Fatalf("first request: %s", r)
	}
	r := slow.call("GET", "/tenants/"+b+"/subscriptions", tk, nil)
	wantError(t, "a turn 1 s off with a wait of 500 ms", r, "RATE_LIMITED")
}
