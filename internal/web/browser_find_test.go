package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/hookline/hookline/internal/delivery"
)

// TestBrowserFindAndLists: a customer pastes an event id into the header's search and lands on the event
// with both of its deliveries, pastes a delivery id and lands on the delivery; on the Deliveries page the
// state tabs show counts and filter, the subscription and event-type choices filter; at phone width a row
// is two lines and a tap anywhere on it (or Enter on its link) opens the delivery.
func TestBrowserFindAndLists(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	s := seed(e, "bfind", 2) // two order.paid events: each delivered to good, failed at bad
	other := e.newSubscription(s.tn, "/good/bfind-other", "bfind invoices", "invoice.paid", "invoice.failed")
	for _, typ := range []string{"invoice.paid", "invoice.failed"} {
		e.waitState(s.tn, e.publishTo(s.tn, other.ID, typ, map[string]any{"t": typ}), delivery.Delivered)
	}
	ev := e.eventOf(s.tn, s.dead[0])
	b.run("viewport", chromedp.EmulateViewport(1366, 900))
	b.login(e.base, s.tn.Email)

	search := func(q string) {
		t.Helper()
		b.run("search "+q, chromedp.WaitVisible(chromedp.CSS(`#site-q`)))
		eval[bool](b, `(document.querySelector('#site-q').value = '') === ''`)
		b.run("search "+q, chromedp.SendKeys(chromedp.CSS(`#site-q`), q+"\r"))
	}
	search(" " + ev.String() + " ")
	b.waitJS("event page", `location.pathname === '/events/`+ev.String()+`' && document.querySelector('footer')`)
	rows := eval[[]string](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => r.dataset.id + ' ' + r.dataset.state).sort()`)
	if len(rows) != 2 || !strings.Contains(strings.Join(rows, " "), s.dead[0].String()+" failed") {
		t.Errorf("event page rows %v", rows)
	}
	if got := eval[string](b, `document.querySelector('[data-testid=event-id]').textContent`); got != ev.String() {
		t.Errorf("event page shows %q", got)
	}
	// The copy button is there, shown by app.js, and carries the id.
	if got := eval[string](b, `(() => { const c = document.querySelector('.id-line [data-copy]'); return c && !c.hidden ? c.dataset.copy : '' })()`); got != ev.String() {
		t.Errorf("the event id's copy button carries %q", got)
	}
	b.screenshot("laptop-event")

	search(s.delivered[1].String())
	b.waitJS("delivery page", `location.pathname === '/deliveries/`+s.delivered[1].String()+`' && document.querySelector('footer')`)

	search("no-such-thing")
	b.waitJS("search page", `location.pathname === '/find' && document.querySelector('[data-testid=find-message]') && document.querySelector('footer')`)

	// The Deliveries page: counts on the tabs, and the Dead tab filters.
	b.run("deliveries page", chromedp.Click(chromedp.CSS(`[data-testid=nav-deliveries]`)))
	b.waitJS("deliveries page", `location.pathname === '/deliveries' && document.querySelector('[data-testid=state-tabs]') && document.querySelector('footer')`)
	counts := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll('[data-testid=state-tab]')].map(a => [a.dataset.state, (a.querySelector('[data-testid=tab-count]') || {}).textContent || '']))`)
	if counts["all"] != "6" || counts["delivered"] != "4" || counts["dead"] != "2" || counts["retrying"] != "0" {
		t.Errorf("tab counts %v", counts)
	}
	b.screenshot("laptop-deliveries")
	// Each row's event id: a link to the event and a copy button (shown by app.js) that carries it.
	pairs := eval[[]string](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => {
		const c = r.querySelector('[data-copy]'), a = r.querySelector('[data-testid=event-link]');
		return (c && !c.hidden ? c.dataset.copy : 'no copy') + ' ' + (a ? a.getAttribute('href') : 'no link') + ' ' + r.dataset.event;
	})`)
	for _, p := range pairs {
		f := strings.Fields(p)
		if len(f) != 3 || f[0] != f[2] || f[1] != "/events/"+f[2] {
			t.Errorf("row's event id copy and link: %q", p)
		}
	}
	b.run("dead tab", chromedp.Click(chromedp.CSS(`[data-testid=state-tab][data-state=dead]`)))
	b.waitJS("dead tab", `location.search.includes('state=dead') && document.querySelector('[data-testid=state-tab][data-state=dead][aria-current]') && document.querySelector('footer')`)
	states := eval[[]string](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => r.dataset.state)`)
	if len(states) != 2 || states[0] != "failed" || states[1] != "failed" {
		t.Errorf("dead tab rows %v", states)
	}
	checkListFilterForm(t, b, s)

	checkPhoneRows(t, b, e.base)
}

// checkListFilterForm filters the Deliveries page by event type prefix and by subscription in its form; the
// Dead tab stays, and the All tab keeps the other filters.
func checkListFilterForm(t *testing.T, b *browser, s seeded) {
	t.Helper()
	// Event type prefix and subscription, chosen in the form; the Dead tab stays.
	b.run("filter by type prefix",
		chromedp.SetValue(chromedp.CSS(`#f-type`), "invoice.*"),
		chromedp.Click(chromedp.CSS(`[data-testid=filter-form] button[type=submit]`)),
	)
	b.waitJS("filtered", `location.search.includes('event_type=invoice.') && document.querySelector('footer')`)
	if n := eval[int](b, `document.querySelectorAll('[data-testid=delivery-row]').length`); n != 0 || !strings.Contains(b.text(`[data-testid=total]`), "0 matching") {
		t.Errorf("dead invoice.* deliveries: %d", n)
	}
	b.run("all tab", chromedp.Click(chromedp.CSS(`[data-testid=state-tab][data-state=all]`)))
	b.waitJS("all tab", `!location.search.includes('state=') && location.search.includes('event_type=invoice.') && document.querySelector('footer')`)
	types := eval[[]string](b, `[...document.querySelectorAll('[data-testid=delivery-row] [data-testid=delivery-link]')].map(a => a.textContent).sort()`)
	if strings.Join(types, ",") != "invoice.failed,invoice.paid" {
		t.Errorf("invoice.* rows %v", types)
	}
	b.run("filter by subscription",
		chromedp.SetValue(chromedp.CSS(`#f-type`), ""),
		chromedp.SetValue(chromedp.CSS(`#f-sub`), s.bad.String()),
		chromedp.Click(chromedp.CSS(`[data-testid=filter-form] button[type=submit]`)),
	)
	b.waitJS("filtered by subscription", `location.search.includes('subscription=`+s.bad.String()+`') && document.querySelector('footer')`)
	if n := eval[int](b, `document.querySelectorAll('[data-testid=delivery-row][data-state=failed]').length`); n != 2 ||
		eval[int](b, `document.querySelectorAll('[data-testid=delivery-row]').length`) != 2 {
		t.Errorf("bad subscription's rows: %d failed", n)
	}
}

// checkPhoneRows checks the Deliveries page at phone width: a row is two lines, nothing overflows, and
// tapping a row anywhere, or Enter on its link, opens the delivery.
func checkPhoneRows(t *testing.T, b *browser, base string) {
	t.Helper()
	// Phone: a row is two lines, and tapping it anywhere opens the delivery.
	b.run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch),
		chromedp.Navigate(base+"/deliveries"), chromedp.WaitReady(chromedp.CSS(`footer`)))
	// Lines: the visible cells' vertical centres, those within 8 px of each other counted as one line.
	lines := eval[[]int](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => {
		const mids = [...r.querySelectorAll('td')].filter(td => td.getClientRects().length > 0 && td.getBoundingClientRect().height > 0)
			.map(td => { const b = td.getBoundingClientRect(); return b.top + b.height / 2; }).sort((a, b) => a - b);
		let n = 0, last = -1e9;
		for (const m of mids) { if (m - last > 8) n++; last = m; }
		return n;
	})`)
	if len(lines) != 6 {
		t.Fatalf("phone rows: %v", lines)
	}
	for i, n := range lines {
		if n != 2 {
			t.Errorf("phone row %d is %d lines", i, n)
		}
	}
	heights := eval[[]float64](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => r.getBoundingClientRect().height)`)
	for i, h := range heights {
		if h < 30 || h > 80 {
			t.Errorf("phone row %d is %.0f px high", i, h)
		}
	}
	if overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); overflow > 1 {
		t.Errorf("deliveries page at 390 px: %d px too wide", overflow)
	}
	b.screenshot("phone-deliveries")
	// Tap the row's status, away from its link text.
	target := eval[string](b, `document.querySelector('[data-testid=delivery-row]').dataset.id`)
	// The filters push the first row below the fold at 390 px: bring it into view before tapping it.
	pt := eval[[]float64](b, `(() => { document.querySelector('[data-testid=delivery-row]').scrollIntoView({block: 'center'}); const r = document.querySelector('[data-testid=delivery-row] [data-testid=last-status]').getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
	b.run("tap row", chromedp.MouseClickXY(pt[0], pt[1]))
	b.waitJS("row opens its delivery", `location.pathname === '/deliveries/`+target+`' && document.querySelector('footer')`)
	// Keyboard: the row's link takes focus and Enter opens it.
	b.run("back", chromedp.Navigate(base+"/deliveries"), chromedp.WaitReady(chromedp.CSS(`footer`)))
	b.run("focus row link", chromedp.Focus(chromedp.CSS(`[data-testid=delivery-row] [data-testid=delivery-link]`)),
		chromedp.KeyEvent("\r"))
	b.waitJS("Enter opens the delivery", `location.pathname === '/deliveries/`+target+`' && document.querySelector('footer')`)
}
