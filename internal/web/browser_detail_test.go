package web_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// axe-core (MPL-2.0, testdata/axe/LICENSE), injected into pages by the accessibility check.
//
//go:embed testdata/axe/axe.min.js
var axeSource string

// awaitPromise makes an evaluation wait for the promise it returns.
func awaitPromise(p *runtime.EvaluateParams) { p.AwaitPromise = new(true) }

// axeCheck runs axe-core's WCAG 2 A and AA rules on the page and reports every violation. Runtime.evaluate
// is not subject to the page's CSP, so the page itself keeps script-src 'self'.
func (b *browser) axeCheck(page string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](axeSource+";true")); err != nil {
		b.t.Fatalf("%s: inject axe: %v", page, err)
	}
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})
		.then(r => JSON.stringify(r.violations.map(v => ({id: v.id, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + n.failureSummary)}))))`, awaitPromise))
	if err != nil {
		b.t.Fatalf("%s: run axe: %v", page, err)
	}
	var violations []struct {
		ID, Help string
		Nodes    []string
	}
	if err := json.Unmarshal([]byte(raw), &violations); err != nil {
		b.t.Fatalf("%s: axe result %q: %v", page, raw, err)
	}
	for _, v := range violations {
		b.t.Errorf("%s: axe %s (%s):\n  %s", page, v.ID, v.Help, strings.Join(v.Nodes, "\n  "))
	}
}

// TestBrowserAccessibility runs axe-core on every page the dashboard's router serves, customer and
// operator, at laptop and phone width and in the dark colour scheme: any WCAG 2 A/AA violation fails. A GET route without a page here
// fails too, so a new page is checked from the start.
func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, withAdmin)
	pages := everyPage(t, e)

	for _, size := range []struct {
		name   string
		w, h   int64
		mobile bool
		scheme string
	}{{"laptop", 1366, 900, false, "light"}, {"phone", 390, 844, true, "light"}, {"laptop-dark", 1366, 900, false, "dark"}} {
		var opts []chromedp.EmulateViewportOption
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		b.run("viewport", chromedp.EmulateViewport(size.w, size.h, opts...))
		b.run("colour scheme", chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: size.scheme}},
			})
			return chromedp.Void{}, err
		}))
		b.run("login page", chromedp.Navigate(e.base+"/login"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
		if dark := eval[bool](b, `matchMedia('(prefers-color-scheme: dark)').matches`); dark != (size.scheme == "dark") {
			t.Fatalf("%s: the page sees dark scheme %v", size.name, dark)
		}
		b.axeCheck(size.name + " /login")
		b.login(e.base, pages.customerEmail)
		check := func(path string) {
			b.run("open "+path, chromedp.Navigate(e.base+path), chromedp.WaitReady(chromedp.CSS(`footer`)))
			b.axeCheck(size.name + " " + path)
		}
		for _, paths := range pages.customer {
			for _, p := range paths {
				check(p)
			}
		}
		check("/logout")
		b.signOut(e.base)
		b.login(e.base, adminEmail)
		for _, paths := range pages.admin {
			for _, p := range paths {
				check(p)
			}
		}
		check(pages.operatorOnCustomer)
		b.signOut(e.base)
	}
}

// TestBrowserRetryNow: a delivery waits an hour for its retry; the endpoint is fixed; Retry now delivers
// it at once, and the page follows it to delivered without a reload.
func TestBrowserRetryNow(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	tn := e.newTenant("browser-retry-now")
	_, id := e.retrying(tn, "browser-retry-now")
	want := fmt.Sprintf("Delivered in %d attempts", e.attemptsOf(tn, id)+1)
	b.login(e.base, tn.Email)
	b.run("open delivery", chromedp.Navigate(e.base+"/deliveries/"+id.String()), chromedp.WaitVisible(chromedp.CSS(`[data-testid=summary]`)))
	if got := b.text(`[data-testid=summary-headline]`); got != "Retrying" {
		t.Errorf("headline %q", got)
	}
	if got := b.text(`[data-testid=summary-at]`); !regexp.MustCompile(`^next attempt in (59 min|1 h)$`).MatchString(got) {
		t.Errorf("next attempt %q", got)
	}
	b.screenshot("retrying")
	e.recv.fixed.Store(true)
	b.run("retry now", chromedp.Click(chromedp.CSS(`[data-testid=retry-now]`)))
	b.waitJS("flash", `document.querySelector('[data-testid=flash]')?.textContent.startsWith('Retrying now')`)
	eval[bool](b, `window.hooklineMark = true`)
	b.waitJS("delivered", `document.querySelector('[data-testid=summary-headline]')?.textContent.trim() === '`+want+`'`)
	if !eval[bool](b, `window.hooklineMark === true`) {
		t.Error("the page was reloaded")
	}
	if eval[bool](b, `document.querySelector('#delivery').hasAttribute('data-live')`) {
		t.Error("a delivered page still follows")
	}
	e.recv.waitHits(t, "/fixable/browser-retry-now", 2)
	b.screenshot("delivered")
}

// TestBrowserLiveUpdate: a waiting delivery's page updates itself when it is delivered; relative times
// carry the exact local and UTC time in their title; copy buttons copy.
func TestBrowserLiveUpdate(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	tn := e.newTenant("browser-live")
	sub := e.newSubscription(tn, "/good/browser-live", "live endpoint")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	id := e.publishTo(tn, sub.ID, "order.paid", map[string]any{"order": "live"})
	d, err := e.srv.Deliveries.Get(context.Background(), tn.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	b.login(e.base, tn.Email)
	b.run("open delivery", chromedp.Navigate(e.base+"/deliveries/"+id.String()), chromedp.WaitVisible(chromedp.CSS(`[data-testid=summary]`)))
	if got := b.text(`[data-testid=request-heading]`); got != "Request to be sent" {
		t.Errorf("request heading %q", got)
	}
	eval[bool](b, `window.hooklineMark = true`)

	// Times: relative text, exact local and UTC time in the title.
	title := eval[string](b, `document.querySelector('time[data-rel]').title`)
	if !strings.Contains(title, "UTC") || !strings.Contains(title, "\n") {
		t.Errorf("time title %q", title)
	}
	if got := eval[string](b, `document.querySelector('time[data-rel]').textContent`); !regexp.MustCompile(`^(just now|\d+ s ago)$`).MatchString(got) {
		t.Errorf("relative time %q", got)
	}

	checkCopyEventID(t, b, e.base, d.EventID.String())

	// Resume: the page follows the delivery to delivered without a reload.
	if _, err := e.srv.Subscriptions.Resume(setupCtx(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	b.waitJS("delivered", `document.querySelector('[data-testid=summary-headline]')?.textContent.trim() === 'Delivered on the first attempt'`)
	if !eval[bool](b, `window.hooklineMark === true`) {
		t.Error("the page was reloaded")
	}
	if got := b.text(`[data-testid=request-heading]`); got != "Request as sent" {
		t.Errorf("request heading after delivery %q", got)
	}
	// The swapped-in part is enhanced too.
	if eval[bool](b, `document.querySelector('[data-testid=copy-event-id]').hidden`) {
		t.Error("copy button hidden after the live update")
	}
}

// checkCopyEventID checks the delivery page's copy button shows with script, carries the event id and
// copies it when the clipboard allows.
func checkCopyEventID(t *testing.T, b *browser, base, eventID string) {
	t.Helper()
	// Copy: the button shows with script, carries the event id, and copies it when the clipboard allows.
	grant := chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			_, err := cdp.Call(ctx, tg, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: base,
			})
			if err != nil {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, nil
	})
	if err := chromedp.Do(b.ctx, grant); err != nil {
		t.Logf("clipboard permission: %v", err)
	}
	if eval[bool](b, `document.querySelector('[data-testid=copy-event-id]').hidden`) {
		t.Fatal("copy button hidden with script")
	}
	if got := eval[string](b, `document.querySelector('[data-testid=copy-event-id]').dataset.copy`); got != eventID {
		t.Errorf("copy button carries %q", got)
	}
	b.run("copy", chromedp.Click(chromedp.CSS(`[data-testid=copy-event-id]`)))
	b.waitJS("copied", `document.querySelector('[data-testid=copy-event-id]').dataset.copied`)
	switch state := eval[string](b, `document.querySelector('[data-testid=copy-event-id]').dataset.copied`); state {
	case "yes":
		if got := b.text(`[data-testid=copy-event-id] .copy-label`); got != "Copied" {
			t.Errorf("copied label %q", got)
		}
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, awaitPromise))
		if err != nil || got != eventID {
			t.Errorf("clipboard holds %q (%v)", got, err)
		}
		b.waitJS("announced", `document.querySelector('[data-testid=announcer]')?.textContent === 'Copied to the clipboard'`)
	default:
		t.Logf("this chromium refused the clipboard write (%s): the label says so", state)
		if got := b.text(`[data-testid=copy-event-id] .copy-label`); got != "Copy failed" {
			t.Errorf("failed copy label %q", got)
		}
	}
}

// TestBrowserHealthPanel: the outcome counts link to the filtered list, the range switch changes the chart,
// and at phone width the panel folds above the list.
func TestBrowserHealthPanel(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	s := seed(e, "browser-health", 2)
	b.login(e.base, s.tn.Email)
	b.run("viewport", chromedp.EmulateViewport(1366, 900))
	b.run("open subscription", chromedp.Navigate(e.base+"/subscriptions/"+s.bad.String()), chromedp.WaitVisible(chromedp.CSS(`[data-testid=health-chart]`)))
	if got := b.text(`#health-h`); got != "Health, last 24 hours" {
		t.Errorf("heading %q", got)
	}
	labels := b.text(`[data-testid=health-card] figcaption`)
	if !strings.Contains(labels, "successful attempts") || !strings.Contains(labels, "failed attempts") {
		t.Errorf("chart legend %q", labels)
	}
	if got := b.text(`[data-testid=dead-count]`); got != "2 dead" {
		t.Errorf("dead count %q", got)
	}
	b.run("last hour", chromedp.Click(chromedp.CSS(`[data-testid=health-ranges] [data-range="1h"]`)))
	b.waitJS("1 h", `location.search.includes('range=1h') && document.querySelectorAll('[data-testid=chart-bar]').length === 60`)
	if got := b.text(`#health-h`); got != "Health, last hour" {
		t.Errorf("heading %q", got)
	}
	if got := b.text(`[data-testid=health-ranges] [aria-current]`); got != "1 hour" {
		t.Errorf("current range %q", got)
	}
	b.run("7 days", chromedp.Click(chromedp.CSS(`[data-testid=health-ranges] [data-range="7d"]`)))
	b.waitJS("7 d", `location.search.includes('range=7d') && document.querySelectorAll('[data-testid=chart-bar]').length === 7`)
	b.screenshot("health-7d")
	b.run("dead deliveries", chromedp.Click(chromedp.CSS(`[data-testid=dead-count]`)))
	b.waitJS("filtered", `location.search.includes('state=dead') && document.querySelector('[data-testid=state-tab][data-state=dead][aria-current]') && document.querySelector('footer')`)
	if got := eval[[]string](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => r.dataset.state)`); len(got) != 2 {
		t.Errorf("dead list: %v", got)
	}

	// At phone width the panel is one line until opened.
	b.run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch),
		chromedp.Navigate(e.base+"/subscriptions/"+s.bad.String()), chromedp.WaitReady(chromedp.CSS(`footer`)))
	visible := `document.querySelector('[data-testid=health-chart]').checkVisibility()`
	if eval[bool](b, visible) {
		t.Error("health chart open at phone width")
	}
	if got := b.text(`[data-testid=health-brief]`); !strings.Contains(got, "of attempts succeeded") {
		t.Errorf("folded health says %q", got)
	}
	b.screenshot("phone-folded")
	b.run("open health", chromedp.Click(chromedp.CSS(`[data-testid=health-fold] > summary`)))
	b.waitJS("opened", visible)
	b.screenshot("phone-open")
}
