package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// Browser tests drive Debian's chromium, headless. Without chromium they skip, unless CI=true or
// HOOKLINE_BROWSER_TESTS=1, where they fail. HOOKLINE_SCREENSHOTS=dir keeps a screenshot of every page.

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is a headless chromium tab for one test.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		msg := "chromium is not installed: the dashboard's browser tests need Debian's chromium (apt-get install -y chromium, or make browser)"
		if os.Getenv("CI") == "true" || os.Getenv("HOOKLINE_BROWSER_TESTS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	b := &browser{t: t, ctx: ctx, dir: dir}
	if err := chromedp.Do(ctx); err != nil {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot("failure")
		}
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	return b
}

// screenshot saves the page under the test's temporary directory (and HOOKLINE_SCREENSHOTS when set).
func (b *browser) screenshot(name string) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := strings.ReplaceAll(b.t.Name(), "/", "_") + "-" + name + ".png"
	dirs := []string{b.dir}
	if d := os.Getenv("HOOKLINE_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, file)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.t.Logf("screenshot %s: %v", name, err)
			continue
		}
		b.t.Logf("screenshot: %s", p)
	}
}

func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until a JavaScript expression is true, across the navigation a click starts.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	var err error
	eventually(b.t, 15*time.Second, 50*time.Millisecond, func() bool {
		var ok bool
		ok, err = chromedp.Run(b.ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
		return err == nil && ok
	}, func() string { return fmt.Sprintf("%s: still false after 15 s (%v): %s", what, err, expr) })
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// assetsLoaded checks that every stylesheet and image of the page loaded.
func (b *browser) assetsLoaded(page string) {
	b.t.Helper()
	broken := eval[[]string](b, `(() => {
		const bad = [];
		for (const l of document.querySelectorAll('link[rel=stylesheet]')) {
			try { if (!l.sheet || l.sheet.cssRules.length === 0) bad.push(l.href); } catch (e) { bad.push(l.href + ': ' + e); }
		}
		for (const i of document.querySelectorAll('img')) {
			if (!i.complete || i.naturalWidth === 0) bad.push(i.src);
		}
		if (document.querySelectorAll('link[rel=stylesheet]').length === 0) bad.push('no stylesheet');
		return bad;
	})()`)
	if len(broken) > 0 {
		b.t.Errorf("%s: assets that did not load: %v", page, broken)
	}
}

func (b *browser) login(base, email string) {
	b.t.Helper()
	b.run("sign in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.SendKeys(chromedp.CSS(`#password`), password),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button[type=submit]`)),
		chromedp.WaitReady(chromedp.CSS(`[data-testid=user]`)),
	)
}

func TestBrowserDeadDeliveryResendPauseResume(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, func(c *config.Config) { c.MaxManualRetries = 1 })
	s := seed(e, "browser", 2)

	// A wrong password stays on /login and says so.
	b.run("wrong password",
		chromedp.Navigate(e.base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), s.tn.Email),
		chromedp.SendKeys(chromedp.CSS(`#password`), "not it"),
		chromedp.Click(chromedp.CSS(`[data-testid=login-form] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-error]`)),
	)
	if got := b.text(`[data-testid=login-error]`); got != "Invalid email or password." {
		t.Errorf("login error %q", got)
	}

	b.login(e.base, s.tn.Email)
	b.assetsLoaded("home")
	n := eval[int](b, `document.querySelectorAll('[data-testid=subscription]').length`)
	if n != 2 {
		t.Fatalf("home lists %d subscriptions", n)
	}
	n = eval[int](b, `document.querySelectorAll('[data-testid=health-chart] svg').length`)
	if n != 2 {
		t.Errorf("%d charts", n)
	}

	// Open the bad endpoint and filter its deliveries to the dead ones.
	b.run("open subscription",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-id="%s"] [data-testid=subscription-link]`, s.bad))),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=filter-form]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=state-tab][data-state=dead]`)),
	)
	b.waitJS("filtered to dead", `location.search.includes('state=dead') && document.querySelector('footer')`)
	b.assetsLoaded("subscription")
	states := eval[[]string](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => r.dataset.state)`)
	if len(states) != 2 || states[0] != "failed" || states[1] != "failed" {
		t.Fatalf("dead deliveries: %v", states)
	}

	// Open one and read its timeline.
	b.run("open delivery",
		chromedp.Click(chromedp.CSS(`[data-testid=delivery-row] [data-testid=delivery-link]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=timeline]`)),
	)
	b.assetsLoaded("delivery")
	statuses := eval[[]string](b, `[...document.querySelectorAll('[data-testid=attempt]')].map(a => a.dataset.status)`)
	if len(statuses) != 1 || statuses[0] != "400" {
		t.Fatalf("timeline statuses %v", statuses)
	}
	if got := b.text(`[data-testid=state-text]`); !strings.HasPrefix(got, "failed: the endpoint answered 400") {
		t.Errorf("state text %q", got)
	}
	loc := eval[string](b, `location.pathname`)
	id := loc[strings.LastIndex(loc, "/")+1:]

	checkResendOnce(t, b, e, s, id)

	checkPauseResume(t, b, e, s)
}

// checkPauseResume pauses and resumes the failing subscription from its page, each with its message.
func checkPauseResume(t *testing.T, b *browser, e *env, s seeded) {
	t.Helper()
	// Pause and Resume from the subscription page.
	b.run("back to subscription",
		chromedp.Click(chromedp.CSS(`[data-testid=subscription-link]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=pause]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=pause]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=resume]`)),
	)
	if got := b.text(`[data-testid=flash]`); !strings.HasPrefix(got, "Paused.") {
		t.Errorf("pause flash %q", got)
	}
	b.run("resume",
		chromedp.Click(chromedp.CSS(`[data-testid=resume]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=pause]`)),
	)
	if got := b.text(`[data-testid=flash]`); !strings.HasPrefix(got, "Resumed.") {
		t.Errorf("resume flash %q", got)
	}
	if st, _ := e.srv.Subscriptions.Get(context.Background(), s.tn.ID, s.bad); st.State != "active" {
		t.Errorf("subscription %s after resume", st.State)
	}
}

// checkResendOnce resends the open dead delivery: the receiver gets it again, the timeline shows the new
// attempt, and the limit (one resend) disables Resend, saying why.
func checkResendOnce(t *testing.T, b *browser, e *env, s seeded, id string) {
	t.Helper()
	// Resend: the receiver gets it again and the timeline shows the new attempt.
	hits := e.recv.count("/bad/browser")
	b.run("resend", chromedp.Click(chromedp.CSS(`[data-testid=resend]`)))
	b.waitJS("resend flash", `document.querySelector('[data-testid=flash]')?.textContent.startsWith('Queued')`)
	e.recv.waitHits(t, "/bad/browser", hits+1)
	for _, d := range append(s.dead, s.delivered...) {
		if d.String() == id {
			e.waitState(s.tn, d, delivery.Failed)
		}
	}
	b.run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid=timeline]`)))
	statuses := eval[[]string](b, `[...document.querySelectorAll('[data-testid=attempt]')].map(a => a.dataset.status)`)
	if len(statuses) != 2 || statuses[1] != "400" {
		t.Errorf("timeline after resend: %v", statuses)
	}
	n := eval[int](b, `document.querySelectorAll('[data-testid=attempt-gap]').length`)
	if n != 1 {
		t.Errorf("%d gaps drawn", n)
	}

	// The limit: one manual resend per delivery here. Resend is disabled and says why.
	if !eval[bool](b, `document.querySelector('[data-testid=resend]').disabled`) {
		t.Error("Resend still enabled at the cap")
	}
	if got := b.text(`[data-testid=action-reason]`); !strings.HasPrefix(got, "Retried by hand 1 of 1 times, the most allowed") {
		t.Errorf("cap reason %q", got)
	}
	b.screenshot("delivery")
}

// TestBrowserLayouts opens every page at laptop and phone sizes: nothing overflows sideways, every asset
// loads. With HOOKLINE_SCREENSHOTS=dir it keeps a screenshot of each.
func TestBrowserLayouts(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	s := seed(e, "layout", 3)
	flaky := e.newSubscription(s.tn, "/flaky/layout", "Flaky billing endpoint", "invoice.created", "invoice.paid")
	// Custom headers, a rate limit, OAuth 2 and a client certificate that expires in 5 days (the banner on
	// every page), shown on its page.
	headers, rate := map[string]string{"X-Api-Key": "k", "X-Billing-Environment-Name": "production"}, 25
	cert := newTestCertificate(t, "a-rather-long-host-name.billing.layout.example.com", time.Now().Add(5*24*time.Hour), nil)
	if _, err := e.srv.Subscriptions.Update(byOperator(), s.tn.ID, flaky.ID, subscriptions.Input{Headers: &headers, RateLimitPerSecond: &rate,
		Auth: &subscriptions.AuthInput{Type: "oauth2_client_credentials", TokenURL: "https://auth.layout.example.com/oauth2/v1/token",
			ClientID: "0oa1b2c3d4e5f6g7h8i9", ClientSecret: "s", Scopes: []string{"webhooks:write", "ledger:read"}},
		ClientCertificate: &subscriptions.CertificateInput{Certificate: cert.chain, PrivateKey: cert.key}}); err != nil {
		t.Fatal(err)
	}
	expired := e.publishTo(s.tn, flaky.ID, "invoice.created", map[string]any{"invoice": "in_123", "amount": 4200, "currency": "eur"})
	e.waitState(s.tn, expired, delivery.Expired)
	pages := []struct{ name, path string }{
		{"login", "/login"},
		{"home", "/"},
		{"subscription", "/subscriptions/" + s.bad.String()},
		{"subscription-dead", "/subscriptions/" + flaky.ID.String() + "?state=dead"},
		{"delivery-failed", "/deliveries/" + s.dead[0].String()},
		{"delivery-expired", "/deliveries/" + expired.String()},
		{"deliveries", "/deliveries"},
		{"deliveries-filtered", "/deliveries?state=dead&event_type=invoice.*&range=24h"},
		{"event", "/events/" + e.eventOf(s.tn, s.dead[0]).String()},
		{"find-nothing", "/find?q=" + expired.String()[:8]},
		{"not-found", "/no/such/page"},
		{"endpoint-new", "/subscriptions/new"},
		{"endpoint-edit", "/subscriptions/" + flaky.ID.String() + "/edit"},
		{"endpoint-delete", "/subscriptions/" + flaky.ID.String() + "/delete"},
	}
	for _, size := range []struct {
		name   string
		w, h   int64
		mobile bool
	}{{"laptop", 1366, 900, false}, {"phone", 390, 844, true}} {
		if size.name == "laptop" {
			b.login(e.base, s.tn.Email) // so that each pass starts by signing out
		}
		var opts []chromedp.EmulateViewportOption
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		b.run("viewport", chromedp.EmulateViewport(size.w, size.h, opts...))
		for _, p := range pages {
			if p.name == "login" {
				b.run("sign out", chromedp.Navigate(e.base+"/logout"))
				b.run("sign out", chromedp.Click(chromedp.CSS(`main form button`)), chromedp.WaitVisible(chromedp.CSS(`#email`)))
				b.screenshot(size.name + "-login")
				b.assetsLoaded("login")
				b.login(e.base, s.tn.Email)
				continue
			}
			b.run("open "+p.name, chromedp.Navigate(e.base+p.path), chromedp.WaitReady(chromedp.CSS(`footer`)))
			b.assetsLoaded(p.name)
			overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`)
			if overflow > 1 {
				t.Errorf("%s at %s: %d px wider than the screen", p.name, size.name, overflow)
			}
			title := eval[string](b, `document.title`)
			if !strings.HasSuffix(title, " · Hookline") {
				t.Errorf("%s: title %q", p.name, title)
			}
			b.screenshot(size.name + "-" + p.name)
		}
	}
}
