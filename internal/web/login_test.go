package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/tenants"
	"golang.org/x/net/html"
)

// fakeClock is a settable clock shared by servers.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// trustLoopback makes the server believe X-Forwarded-* from the test client (on 127.0.0.1), so that each
// test signs in from an address of its own: the per-address buckets live in the database all the
// package's servers share.
func trustLoopback(cfg *config.Config) { cfg.TrustedProxies = "127.0.0.0/8" }

// from returns a client whose requests come, through the trusted proxy, from addr.
func (e *env) from(addr string) *client {
	c := e.client()
	c.header = http.Header{"X-Forwarded-For": {addr}}
	return c
}

// throttleRows counts the sign-in buckets whose key contains s.
func (e *env) throttleRows(s string) int {
	e.t.Helper()
	var n int
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM login_throttle WHERE strpos(key, $1) > 0`, s).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// Parallel wrong passwords cannot all reach bcrypt: a try is reserved in the database before the password
// is checked, so of 40 at once exactly the burst (5 per email) are checked, and the right password is
// refused right after them.
//
// The sign-in throttle tests do not run in parallel with the package's other tests: their buckets live in
// the database every test server shares, and the prune task (run by whichever server is the maintenance
// leader, on its own clock, and by TestLoginThrottleRowsPruned on a clock set ahead) deletes every bucket
// refilled by its clock, another test's half-spent one included.
func TestLoginThrottleHoldsUnderParallelRequests(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	e := setupWith(t, httpOnly, trustLoopback, server.Options{Now: clock.Now})
	tn := e.newTenant("parallel")
	c := e.from("198.51.100.40")

	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			form := url.Values{"email": {tn.Email}, "password": {"wrong" + strconv.Itoa(i)}}
			req, _ := http.NewRequest(http.MethodPost, e.base+"/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", e.base)
			req.Header.Set("X-Forwarded-For", "198.51.100.40")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			mu.Lock()
			statuses[res.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	// 401 is "checked and wrong"; 429 is "refused before the check".
	if statuses[http.StatusUnauthorized] != 5 || statuses[http.StatusTooManyRequests] != 35 {
		t.Errorf("40 parallel wrong passwords: %v, want 5 checked (401) and 35 refused (429)", statuses)
	}
	if p := c.post("/login", url.Values{"email": {tn.Email}, "password": {password}}); p.Status != http.StatusTooManyRequests {
		t.Fatalf("right password after the burst: %s", p)
	}
	// One interval later one more try is allowed, and the right password signs in.
	clock.Add(30 * time.Second)
	c.login(tn.Email)
}

// Every process sees the same buckets: failures on one server count on another.
func TestLoginThrottleSharedByServers(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	a := setupWith(t, httpOnly, trustLoopback, server.Options{Now: clock.Now})
	b := setupWith(t, httpOnly, trustLoopback, server.Options{Now: clock.Now})
	tn := a.newTenant("shared")
	ca, cb := a.from("198.51.100.41"), b.from("198.51.100.42")
	for i := range 5 {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		if p := c.post("/login", url.Values{"email": {tn.Email}, "password": {"wrong"}}); p.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %s", i+1, p)
		}
	}
	for name, c := range map[string]*client{"first server": ca, "second server": cb} {
		p := c.post("/login", url.Values{"email": {tn.Email}, "password": {password}})
		if p.Status != http.StatusTooManyRequests || !strings.Contains(p.text(), "Try again in 30 s") {
			t.Errorf("%s after 5 failures in all: %s %q", name, p, p.text())
		}
	}

	// The per-address bucket too: 20 failures from one address over both servers, with different emails.
	for i := range 20 {
		c := a.from("198.51.100.43")
		if i%2 == 1 {
			c = b.from("198.51.100.43")
		}
		if p := c.post("/login", url.Values{"email": {"nobody" + strconv.Itoa(i) + "@example.com"}, "password": {"x"}}); p.Status != http.StatusUnauthorized {
			t.Fatalf("address failure %d: %s", i+1, p)
		}
	}
	other := a.newTenant("shared-other")
	if p := b.from("198.51.100.43").post("/login", url.Values{"email": {other.Email}, "password": {password}}); p.Status != http.StatusTooManyRequests {
		t.Errorf("an address after 20 failures: %s", p)
	}
	// An interval later the email allows one more try; signing in forgets its failures.
	clock.Add(30 * time.Second)
	b.from("198.51.100.42").login(tn.Email)
	if n := a.throttleRows("email:" + tn.Email); n != 0 {
		t.Errorf("the email's bucket is kept after a sign-in (%d rows)", n)
	}
}

// A refilled bucket is deleted by the maintenance task, and is the same as none.
func TestLoginThrottleRowsPruned(t *testing.T) {
	// The real clock (and not in parallel: see TestLoginThrottleHoldsUnderParallelRequests).
	e := setup(t, httpOnly, trustLoopback)
	c := e.from("198.51.100.44")
	if p := c.post("/login", url.Values{"email": {"prune@example.com"}, "password": {"x"}}); p.Status != http.StatusUnauthorized {
		t.Fatalf("failure: %s", p)
	}
	var full time.Time
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT allowed_at FROM login_throttle WHERE key = 'email:prune@example.com'`).Scan(&full); err != nil {
		t.Fatal(err)
	}
	if err := pruneAt(e, full.Add(-time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if e.throttleRows("prune@example.com") != 1 {
		t.Error("a bucket still refilling was deleted")
	}
	if err := pruneAt(e, full.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n := e.throttleRows("prune@example.com") + e.throttleRows("198.51.100.44"); n != 0 {
		t.Errorf("%d refilled buckets kept", n)
	}
}

// pruneAt deletes the refilled buckets as the maintenance task does, as of now.
func pruneAt(e *env, now time.Time) error {
	_, err := tenants.NewLoginThrottle(e.srv.Pool, func() time.Time { return now }, 0, 0, 0).Prune(context.Background())
	return err
}

// The sign-in form is bounded before anything is read from it: a 5 MB body is a 413, and an email
// longer than 254 bytes a 400 that does not echo it; neither spends a try or stores a bucket.
func TestLoginRefusesOversizedForms(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, trustLoopback)
	c := e.from("198.51.100.45")

	huge := "huge-" + strings.Repeat("x", 5<<20) + "@example.com"
	p := c.post("/login", url.Values{"email": {huge}, "password": {"x"}})
	if p.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("5 MB form: %s", p)
	}
	if len(p.Body) > 64<<10 || strings.Contains(p.Body, "xxxxxxxx") {
		t.Errorf("5 MB form echoed (%d bytes)", len(p.Body))
	}

	long := "long-" + strings.Repeat("y", 300) + "@example.com"
	p = c.post("/login", url.Values{"email": {long}, "password": {"x"}})
	if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "login-error")), "too long") {
		t.Errorf("300-byte email: %s %q", p, p.text())
	}
	if strings.Contains(p.Body, "yyyyyyyy") {
		t.Error("the long email is echoed")
	}
	if n := e.throttleRows("huge-") + e.throttleRows("long-") + e.throttleRows("198.51.100.45"); n != 0 {
		t.Errorf("oversized forms stored %d buckets", n)
	}
	// The address spent nothing: a sign-in right after works.
	c.login(e.newTenant("oversized").Email)
}

// The page to return to after sign-in is only ever an absolute path on this site. Browsers drop tabs and
// newlines inside URLs and read "\" as "/", so each refused target below would lead to another host.
func TestLoginNextIsOnlyALocalPath(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, trustLoopback)
	cases := []struct {
		next string
		keep bool
	}{
		{"/subscriptions/abc?page=2&state=failed", true},
		{"/admin/dead?tenant=x%2Fy", true},
		{"/", true},
		{"//evil.example/x", false},
		{"/\\evil.example/x", false},
		{"\\\\evil.example", false},
		{"/\t/evil.example/", false},
		{"/\n/evil.example/", false},
		{"/\r/evil.example/", false},
		{"/ /evil.example/", false},
		{"/x\x00y", false},
		{"/x\u00a0y", false},
		{"/x\u3000/", false},
		{"/a\\b", false},
		{"https://evil.example/", false},
		{"javascript:alert(1)", false},
		{"evil.example", false},
		{"", false},
	}
	c := e.client()
	for _, tc := range cases {
		p := c.get("/login?next=" + url.QueryEscape(tc.next))
		got := findAll(p.Doc, func(n *html.Node) bool { return attr(n, "name") == "next" })
		kept := len(got) == 1 && attr(got[0], "value") == tc.next
		if kept != tc.keep || (!kept && len(got) == 1 && attr(got[0], "value") != "") {
			t.Errorf("next=%q: login page carries %d fields %v, want kept=%v", tc.next, len(got), got, tc.keep)
		}
	}

	// Signing in with a refused target lands on the home page of this site.
	tn := e.newTenant("next-tab")
	c2 := e.from("198.51.100.46")
	c2.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, next := range []string{"/\t/evil.example/", "/\\evil.example/"} {
		form := url.Values{"email": {tn.Email}, "password": {password}, "next": {next}}
		req, _ := http.NewRequest(http.MethodPost, e.base+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", "198.51.100.46")
		res, err := c2.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
			t.Errorf("sign-in with next=%q: %d to %q", next, res.StatusCode, res.Header.Get("Location"))
		}
	}
}

// IPv6 clients are counted per /64 (a home or a server is given a whole /64, so each of its addresses
// apart would be 2^64 allowances), IPv4 clients per address: two addresses of one /64 share 20 tries,
// an address of the next /64 has its own.
func TestLoginThrottlePerIPv6Prefix(t *testing.T) {
	// Not in parallel: see TestLoginThrottleSharedByServers. A clock that stands still, so no try comes
	// back while twenty bcrypt checks run on a slow machine.
	clock := &fakeClock{now: time.Now()}
	e := setupWith(t, httpOnly, trustLoopback, server.Options{Now: clock.Now})
	for i := range 20 {
		addr := "2001:db8:16:1::a"
		if i%2 == 1 {
			addr = "2001:db8:16:1:ffff:ffff:ffff:b"
		}
		if p := e.from(addr).post("/login", url.Values{"email": {"v6-" + strconv.Itoa(i) + "@example.com"}, "password": {"x"}}); p.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d from %s: %s", i+1, addr, p)
		}
	}
	tn := e.newTenant("v6")
	if p := e.from("2001:db8:16:1::c").post("/login", url.Values{"email": {tn.Email}, "password": {password}}); p.Status != http.StatusTooManyRequests {
		t.Errorf("a third address of the /64 after 20 failures from two others: %s", p)
	}
	e.from("2001:db8:16:2::a").login(tn.Email)
	if n := e.throttleRows("addr:2001:db8:16:1::/64"); n != 1 {
		t.Errorf("%d buckets for the /64, want 1", n)
	}
	if n := e.throttleRows("addr:2001:db8:16:1::a"); n != 0 {
		t.Errorf("an IPv6 address has a bucket of its own")
	}
}
