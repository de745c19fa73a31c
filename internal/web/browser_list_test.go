package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hookline/hookline/internal/delivery"
)

// fieldsCut lists the filter form's inputs and selects whose value does not fit in them: an input's text
// wider than its box (scrollWidth), or a select's chosen option wider than the room its arrow leaves.
const fieldsCut = `(() => {
  const out = [];
  const ctx = document.createElement('canvas').getContext('2d');
  for (const el of document.querySelectorAll('[data-testid=filter-form] input:not([type=hidden]), [data-testid=filter-form] select')) {
    const cs = getComputedStyle(el);
    const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    if (el.tagName === 'SELECT') {
      ctx.font = cs.font;
      const w = ctx.measureText(el.selectedOptions[0]?.textContent || '').width;
      if (w > room - 20) out.push(el.id + ': "' + el.selectedOptions[0].textContent + '" needs ' + Math.ceil(w) + ' px, has ' + Math.floor(room - 20));
    } else if (el.type === 'datetime-local') {
      // Chromium draws its date fields in a shadow tree; 2026-11-25 14:02 in the input's font, plus the
      // picker icon, is what must fit.
      ctx.font = cs.font;
      const w = ctx.measureText('11/25/2026, 02:02 PM').width;
      if (w > room - 24) out.push(el.id + ': date and time need ' + Math.ceil(w + 24) + ' px, has ' + Math.floor(room));
    } else if (el.scrollWidth > el.clientWidth) {
      out.push(el.id + ': scrollWidth ' + el.scrollWidth + ' > clientWidth ' + el.clientWidth);
    }
  }
  return out;
})()`

// TestBrowserListAtLaptopAndPhone: at 1366 px the filter fields show their values in full; at 390 px a
// delivery row keeps its subscription's name, so an event's deliveries to two endpoints tell apart.
func TestBrowserListAtLaptopAndPhone(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	tn := e.newTenant("browser-list-widths")
	billing := e.newSubscription(tn, "/good/widths-billing", "Billing service production endpoint")
	e.newSubscription(tn, "/good/widths-ledger", "Ledger")
	for _, id := range e.publish(tn, "invoice.payment_succeeded", map[string]any{"n": 1}) {
		e.waitState(tn, id, delivery.Delivered)
	}
	b.login(e.base, tn.Email)
	// Every filter field holds a value, From and Until around now (a fixed date would filter today's
	// deliveries out once it has passed).
	now := time.Now().UTC()
	page := e.base + "/deliveries?event_type=invoice.payment_succeeded&range=24h&since=" + now.Add(-time.Hour).Format("2006-01-02T15:04") +
		"&until=" + now.Add(time.Hour).Format("2006-01-02T15:04") + "&status=2xx"

	b.run("laptop", chromedp.EmulateViewport(1366, 900))
	b.run("open list", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-testid=filter-form]`)))
	b.screenshot("laptop")
	if cut := eval[[]string](b, fieldsCut); len(cut) != 0 {
		t.Errorf("at 1366 px filter fields cut their values:\n  %s", strings.Join(cut, "\n  "))
	}

	b.run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.run("open list", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`[data-testid=deliveries]`)))
	b.screenshot("phone")
	names := eval[[]string](b, `[...document.querySelectorAll('[data-testid=delivery-row]')].map(r => {
	  const c = r.querySelector('.c-sub'); const box = c && c.getBoundingClientRect();
	  return c && box.width > 0 && box.height > 0 && box.right <= innerWidth + 1 ? c.innerText.trim() : '';
	})`)
	if len(names) != 2 || names[0] == names[1] || names[0] == "" || names[1] == "" {
		t.Errorf("at 390 px the rows show subscriptions %q, want both names", names)
	}
	if w := eval[float64](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the phone page is %v px wide", w)
	}
	// The subscription page: Send test event says what it sends, beside the button.
	for _, size := range []struct {
		name string
		w    int64
	}{{"subscription-phone", 390}, {"subscription-laptop", 1366}} {
		b.run(size.name, chromedp.EmulateViewport(size.w, 900))
		b.run("open subscription", chromedp.Navigate(e.base+"/subscriptions/"+billing.ID.String()), chromedp.WaitVisible(chromedp.CSS(`[data-testid=send-test]`)))
		b.screenshot(size.name)
		if got := b.text(`[data-testid=test-help]`); got != "Sends hookline.test to this endpoint only" {
			t.Errorf("%s: test help %q", size.name, got)
		}
	}
}

// namesBrokenMidWord lists the deliveries list's event types that wrap other than after a dot, with where
// they broke ("invoice.fail|ed"): each character's line is read from its box.
const namesBrokenMidWord = `(() => {
  const out = [];
  for (const link of document.querySelectorAll('[data-testid=delivery-row] .c-type [data-testid=delivery-link]')) {
    const walker = document.createTreeWalker(link, NodeFilter.SHOW_TEXT);
    let prev = '', prevTop = null, shown = '';
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let i = 0; i < n.length; i++) {
        const r = document.createRange();
        r.setStart(n, i); r.setEnd(n, i + 1);
        const box = r.getClientRects()[0];
        if (!box) continue;
        if (prevTop !== null && box.top > prevTop + 2) {
          if (prev !== '.') out.push(link.textContent + ' broke as ' + shown + '|');
          shown += '|';
        }
        prev = n.data[i]; prevTop = box.top; shown += prev;
      }
    }
  }
  return out;
})()`

// TestBrowserEventTypesStayWhole: the deliveries list keeps an event type's name whole, at laptop and at
// phone width: it may wrap after a dot, never inside a part. At 1366 px the column was squeezed until
// names broke anywhere ("invoice.fail|ed").
func TestBrowserEventTypesStayWhole(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	tn := e.newTenant("browser-event-types-whole")
	e.newSubscription(tn, "/good/whole-billing", "Billing service (flaky demo endpoint)")
	e.newSubscription(tn, "/good/whole-orders", "Order service (healthy demo endpoint)")
	for _, typ := range []string{"invoice.failed", "order.created", "customer.subscription.trial_will_end"} {
		for _, id := range e.publish(tn, typ, map[string]any{"n": 1}) {
			e.waitState(tn, id, delivery.Delivered)
		}
	}
	b.login(e.base, tn.Email)
	for _, size := range []struct {
		name string
		w    int64
	}{{"laptop", 1366}, {"phone", 390}} {
		b.run(size.name, chromedp.EmulateViewport(size.w, 900))
		b.run("open list", chromedp.Navigate(e.base+"/deliveries"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=deliveries]`)))
		b.screenshot(size.name)
		if n := eval[int](b, `document.querySelectorAll('[data-testid=delivery-row]').length`); n != 6 {
			t.Fatalf("%s: %d rows, want 6", size.name, n)
		}
		if broken := eval[[]string](b, namesBrokenMidWord); len(broken) != 0 {
			t.Errorf("at %d px event types break inside a part:\n  %s", size.w, strings.Join(broken, "\n  "))
		}
		if w := eval[float64](b, `document.documentElement.scrollWidth`); w > float64(size.w) {
			t.Errorf("at %d px the page is %v px wide", size.w, w)
		}
	}
}
