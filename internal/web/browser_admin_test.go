package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// signOut ends the browser's session from the sign-out page.
func (b *browser) signOut(base string) {
	b.t.Helper()
	b.run("sign out", chromedp.Navigate(base+"/logout"))
	b.run("sign out", chromedp.Click(chromedp.CSS(`main form button`)), chromedp.WaitVisible(chromedp.CSS(`#email`)))
}

// The operator story: an outage left dead deliveries at two tenants; the operator finds them, previews a
// bulk replay, confirms it and follows it to the end; then a customer recovers their own from their page.
func TestBrowserOperatorReplaysAnOutage(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, withAdmin)
	a := e.newTenant("outage-a")
	bt := e.newTenant("outage-b")
	subA := e.newSubscription(a, "/bad/outage-a", "Orders endpoint")
	subB := e.newSubscription(bt, "/bad/outage-b", "Billing endpoint")
	// Its own event type, so that the replay touches no other test's deliveries.
	const typ = "outage.browser-story"
	from := formTimeOf(time.Now().Add(-time.Hour))
	to := formTimeOf(time.Now().Add(time.Hour))
	deadA := e.deadOf(a, subA.ID, typ, 2)
	e.deadOf(bt, subB.ID, typ, 1)

	b.login(e.base, adminEmail)
	b.waitJS("overview", `location.pathname === '/admin' && document.querySelector('[data-testid=tenants]')`)
	b.assetsLoaded("overview")
	n := eval[int](b, fmt.Sprintf(`document.querySelectorAll('[data-testid=tenant][data-id="%s"], [data-testid=tenant][data-id="%s"]').length`, a.ID, bt.ID))
	if n != 2 {
		t.Fatalf("overview lists %d of the two tenants", n)
	}
	dead := eval[string](b, fmt.Sprintf(`document.querySelector('[data-testid=tenant][data-id="%s"] [data-testid=dead]').textContent.trim()`, a.ID))
	if dead != "2" {
		t.Errorf("overview: tenant a has %q dead", dead)
	}

	checkOutageDeadLetters(t, b, e.base, typ, from, to)

	// Replay these… previews at once: the count and both tenants, nothing changed yet.
	b.run("replay these",
		chromedp.Click(chromedp.CSS(`[data-testid=replay-these]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=replay-preview]`)),
	)
	// Send them at once rather than over the default 5 minutes, and preview again with that.
	b.run("spread",
		chromedp.SetValue(chromedp.CSS(`#f-spread`), "0"),
		chromedp.Click(chromedp.CSS(`[data-testid=preview]`)),
	)
	b.waitJS("preview with spread", `document.querySelector('[data-testid=confirm-form] input[name=spread]')?.value === '0'`)
	if got := eval[string](b, `document.querySelector('[data-testid=matched]').dataset.matched`); got != "3" {
		t.Errorf("preview matched %q", got)
	}
	tenants := eval[[]string](b, `[...document.querySelectorAll('[data-testid=group-tenant]')].map(a => a.textContent.trim()).sort()`)
	if strings.Join(tenants, ",") != "outage-a,outage-b" {
		t.Errorf("preview tenants %v", tenants)
	}
	b.screenshot("replay-preview")

	// Confirm: the replay's page shows the progress bar and refreshes until the replay is finished.
	b.run("confirm", chromedp.Click(chromedp.CSS(`[data-testid=confirm]`)))
	b.waitJS("replay page", `location.pathname.startsWith('/admin/replays/')`)
	replayPath := eval[string](b, `location.pathname`)
	var st string
	eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		var err error
		st, err = chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=replay-head]')?.dataset.state || ''`))
		return err == nil && st == "finished"
	}, func() string { return fmt.Sprintf("replay still %q", st) })
	b.assetsLoaded("replay")
	if got := eval[string](b, `(p => p.value + '/' + p.max)(document.querySelector('[data-testid=progress] progress'))`); got != "3/3" {
		t.Errorf("progress bar at %s", got)
	}
	if n := eval[int](b, `document.querySelectorAll('[data-testid=delivery-row]').length`); n != 3 {
		t.Errorf("replay page lists %d deliveries", n)
	}
	b.screenshot("replay-finished")

	checkAuditLogHas(t, b, replayPath)

	checkCustomerRecovers(t, b, e, a, subA, deadA, from)
}

// checkAuditLogHas checks the replays' audit log lists the replay at replayPath, by the operator.
func checkAuditLogHas(t *testing.T, b *browser, replayPath string) {
	t.Helper()
	// The audit log has it.
	b.run("audit log",
		chromedp.Click(chromedp.CSS(`[data-testid=admin-nav] a[href="/admin/replays"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=replays]`)),
	)
	id := replayPath[strings.LastIndex(replayPath, "/")+1:]
	if got := eval[string](b, fmt.Sprintf(`document.querySelector('[data-testid=replay-row][data-id="%s"]')?.textContent || ''`, id)); !strings.Contains(got, adminEmail) {
		t.Errorf("audit log row %q", got)
	}
	b.screenshot("audit-log")
}

// checkOutageDeadLetters filters the dead letters to the outage window (from, to) and its event type: the
// three of both tenants.
func checkOutageDeadLetters(t *testing.T, b *browser, base, typ, from, to string) {
	t.Helper()
	// Dead letters, filtered to the outage window and its event type.
	b.run("dead letters",
		chromedp.Click(chromedp.CSS(`[data-testid=admin-nav] a[href="/admin/dead"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=dead-filter]`)),
		chromedp.SetValue(chromedp.CSS(`#f-type`), typ),
		chromedp.SetValue(chromedp.CSS(`#f-from`), from),
		chromedp.SetValue(chromedp.CSS(`#f-to`), to),
		chromedp.Click(chromedp.CSS(`[data-testid=dead-filter] button[type=submit]`)),
	)
	b.waitJS("filtered", `location.search.includes('event_type=outage.browser-story') && document.querySelector('footer')`)
	b.assetsLoaded("dead letters")
	rows := eval[int](b, `document.querySelectorAll('[data-testid=dead-row]').length`)
	if rows != 3 {
		t.Fatalf("dead letters: %d rows", rows)
	}
	if got := b.text(`[data-testid=total]`); got != "3 matching dead deliveries" {
		t.Errorf("total %q", got)
	}
	b.screenshot("dead-letters")
}

// checkCustomerRecovers has the customer (a) recover their own dead deliveries (deadA, dead again: the
// endpoint still answers 400) from subA's page, since from: a preview, then the recover, which sends
// them again.
func checkCustomerRecovers(t *testing.T, b *browser, e *env, a tenant, subA subscriptions.Subscription, deadA []uuid.UUID, from string) {
	t.Helper()
	// The customer recovers their own dead deliveries from the subscription page (they died again: the
	// endpoint still answers 400).
	for _, id := range deadA {
		e.waitState(a, id, delivery.Failed)
	}
	b.signOut(e.base)
	b.login(e.base, a.Email)
	hits := e.recv.count("/bad/outage-a")
	b.run("subscription",
		chromedp.Navigate(e.base+"/subscriptions/"+subA.ID.String()),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=recover-form]`)),
		chromedp.SetValue(chromedp.CSS(`#r-since`), from),
		chromedp.Click(chromedp.CSS(`[data-testid=recover-preview]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=recover-preview-result]`)),
	)
	if got := b.text(`[data-testid=recover-preview-result] p`); !strings.HasPrefix(got, "2 dead deliveries since") {
		t.Errorf("recover preview %q", got)
	}
	b.screenshot("recover-preview")
	b.run("recover", chromedp.Click(chromedp.CSS(`[data-testid=recover-confirm]`)))
	b.waitJS("recover flash", `document.querySelector('[data-testid=flash]')?.textContent.includes('Recovering 2 dead deliveries')`)
	e.recv.waitHits(t, "/bad/outage-a", hits+2)
	b.screenshot("recovered")
}

// TestBrowserAdminLayouts opens the operator pages and the recover card at laptop and phone sizes: nothing
// overflows sideways, every asset loads. With HOOKLINE_SCREENSHOTS=dir it keeps a screenshot of each.
func TestBrowserAdminLayouts(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, withAdmin)
	s := seed(e, "admin-layout", 2)
	const typ = "outage.browser-layout"
	e.deadOf(s.tn, s.bad, "order.paid", 1)
	other := e.newSubscription(s.tn, "/bad/admin-layout-other", "A long-named billing endpoint for invoices and refunds", typ)
	e.deadOf(s.tn, other.ID, typ, 2)
	from, to := formTimeOf(time.Now().Add(-time.Hour)), formTimeOf(time.Now().Add(time.Hour))
	criteria := "event_type=" + typ + "&tenant=" + s.tn.ID.String() + "&from=" + from + "&to=" + to
	running, release := e.insertRunningReplay("bulk", 10, 4, &s.tn.ID, nil)
	defer release()
	failed := e.insertReplay("bulk", "failed", 8, 3, nil, nil, "replay chunk: connection reset by peer")

	b.login(e.base, adminEmail)
	pages := []struct{ name, path string }{
		{"admin-overview", "/admin?sort=dead"},
		{"admin-tenant", "/admin/tenants/" + s.tn.ID.String()},
		{"admin-dead", "/admin/dead?tenant=" + s.tn.ID.String()},
		{"admin-replay-preview", "/admin/replay?" + criteria},
		{"admin-replay-empty", "/admin/replay"},
		{"admin-replays", "/admin/replays"},
		{"admin-replay-running", "/admin/replays/" + running.String()},
		{"admin-replay-failed", "/admin/replays/" + failed.String()},
		{"admin-delivery", "/deliveries/" + s.dead[0].String()},
		{"admin-subscription", "/subscriptions/" + other.ID.String()},
	}
	for _, size := range []struct {
		name   string
		w, h   int64
		mobile bool
	}{{"laptop", 1366, 900, false}, {"phone", 390, 844, true}} {
		var opts []chromedp.EmulateViewportOption
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		b.run("viewport", chromedp.EmulateViewport(size.w, size.h, opts...))
		for _, p := range pages {
			b.run("open "+p.name, chromedp.Navigate(e.base+p.path), chromedp.WaitReady(chromedp.CSS(`footer`)))
			b.assetsLoaded(p.name)
			overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`)
			if overflow > 1 {
				t.Errorf("%s at %s: %d px wider than the screen", p.name, size.name, overflow)
			}
			b.screenshot(size.name + "-" + p.name)
		}
	}
}
