package web_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
)

// A customer adds an endpoint that takes the events of one ordering key in order and holds a key whose
// delivery dies. Four events of one order are published; the endpoint refuses the second (422): the
// endpoint page lists the key as blocked, with the dead delivery and the two waiting behind it; the third's
// page says it waits for the second (linked) until that one is resent or skipped, with no attempt time and
// no Retry now. Skip discards the dead one and the third and fourth are delivered, in order; then no key is
// blocked. At 390 px wide nothing scrolls sideways; axe finds nothing on the form, the endpoint page and
// the parked delivery's page.
func TestBrowserOrderedDeliveryStory(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	tn := e.newTenant("ordered story")
	rc := newOrderReceiver(t)
	key := "order-" + uuid.NewString()[:8]

	b.login(e.base, tn.Email)
	b.run("add endpoint",
		chromedp.Click(chromedp.CSS(`[data-testid=add-endpoint]`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoint-url`)),
	)
	if eval[bool](b, `document.querySelector('#ordering-ordered').checked || !document.querySelector('#on-dead-skip').checked`) {
		t.Error("a new endpoint's form does not start unordered, skipping")
	}
	b.run("fill the form",
		chromedp.SendKeys(chromedp.CSS(`#endpoint-url`), rc.URL+"/orders"),
		chromedp.SendKeys(chromedp.CSS(`#endpoint-description`), "Shipping (in order)"),
		chromedp.ScrollIntoView(chromedp.CSS(`[data-testid=ordering-section]`)),
		chromedp.Click(chromedp.CSS(`label[for=ordering-ordered]`)),
		chromedp.Click(chromedp.CSS(`label[for=on-dead-block]`)),
	)
	if !eval[bool](b, `document.querySelector('#ordering-ordered').checked && document.querySelector('#on-dead-block').checked`) {
		t.Fatal("the labels do not tick ordered and block")
	}
	b.axeCheck("endpoint form with ordering")
	b.screenshot("form-ordering")
	b.run("save",
		chromedp.ScrollIntoView(chromedp.CSS(`[data-testid=save-endpoint]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=save-endpoint]`)),
	)
	b.waitJS("saved", `/^\/subscriptions\/[0-9a-f-]{36}$/.test(location.pathname) && document.querySelector('[data-testid=ordering-line]')`)
	subPath := eval[string](b, `location.pathname`)
	subID := uuid.MustParse(strings.TrimPrefix(subPath, "/subscriptions/"))
	if got := b.text(`[data-testid=ordering-line]`); !strings.Contains(got, "one at a time, in order. A dead delivery holds its key until it is resent or skipped.") {
		t.Errorf("the ordering line says %q", got)
	}
	if got := b.text(`[data-testid=no-blocked-keys]`); got != "No key is blocked." {
		t.Errorf("a new endpoint's blocked keys say %q", got)
	}

	// Four events of one order; the endpoint refuses the second.
	first := e.publishKeyed(tn, subID, key, 1, false)
	dead := e.publishKeyed(tn, subID, key, 2, true)
	third := e.publishKeyed(tn, subID, key, 3, false)
	fourth := e.publishKeyed(tn, subID, key, 4, false)
	e.waitState(tn, first, delivery.Delivered)
	e.waitState(tn, dead, delivery.Failed)

	b.run("the endpoint page", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid=blocked-key]`)))
	row := `[data-testid=blocked-key][data-key="` + key + `"]`
	if got := b.text(row + ` [data-testid=blocked-key-waiting]`); got != "2 deliveries" {
		t.Errorf("waiting behind the dead one: %q", got)
	}
	if got := eval[string](b, `document.querySelector('`+row+` [data-testid=blocked-key-head]').getAttribute('href')`); got != "/deliveries/"+dead.String() {
		t.Errorf("the blocked key's dead delivery links %q", got)
	}
	b.axeCheck("endpoint page with a blocked key")
	b.screenshot("blocked-key")

	// The third waits for the second, which must be resent or skipped.
	b.run("the parked delivery", chromedp.Navigate(e.base+"/deliveries/"+third.String()), chromedp.WaitVisible(chromedp.CSS(`[data-testid=parked-note]`)))
	if got := b.text(`[data-testid=parked-note]`); !strings.Contains(got, "It waits for the earlier delivery of its ordering key") ||
		!strings.Contains(got, "waits until it is resent and delivered, or skipped on the endpoint's page") {
		t.Errorf("the parked note says %q", got)
	}
	if got := b.text(`[data-testid=ordering-key]`); got != key {
		t.Errorf("the ordering key shown %q", got)
	}
	if eval[bool](b, `!!document.querySelector('[data-testid=retry-now], [data-testid=resend], [data-testid=next-attempt] time')`) {
		t.Error("the parked delivery offers Retry now or Resend, or shows an attempt time")
	}
	b.axeCheck("parked delivery")
	b.screenshot("parked-delivery")
	b.run("follow the link to what it waits for",
		chromedp.Click(chromedp.CSS(`[data-testid=waiting-for]`)),
	)
	b.waitJS("the dead delivery's page", `location.pathname === '/deliveries/`+dead.String()+`' && document.querySelector('[data-testid=summary-headline]')`)
	if got := b.text(`[data-testid=summary-headline]`); !strings.HasPrefix(got, "Dead") {
		t.Errorf("the head's page says %q", got)
	}

	// 390 px: the form, the endpoint page with its blocked key, the parked delivery.
	b.run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	for _, p := range []struct{ name, path string }{
		{"edit form", subPath + "/edit"},
		{"endpoint page", subPath},
		{"parked delivery", "/deliveries/" + third.String()},
	} {
		b.run("open "+p.name, chromedp.Navigate(e.base+p.path), chromedp.WaitReady(chromedp.CSS(`footer`)))
		if overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); overflow > 1 {
			t.Errorf("the %s at 390 px is %d px wider than the screen", p.name, overflow)
		}
		b.axeCheck("phone " + p.name)
		b.screenshot("phone-" + strings.ReplaceAll(p.name, " ", "-"))
	}

	// Skip (on the phone): the dead one is discarded, the rest go, in order.
	b.run("skip",
		chromedp.Navigate(e.base+subPath),
		chromedp.WaitVisible(chromedp.CSS(row+` [data-testid=skip-key]`)),
		chromedp.ScrollIntoView(chromedp.CSS(row+` [data-testid=skip-key]`)),
		chromedp.Click(chromedp.CSS(row+` [data-testid=skip-key]`)),
	)
	b.waitJS("skipped", `document.querySelector('.flash') && document.querySelector('.flash').textContent.includes('Skipped key')`)
	if got := b.text(`.flash`); !strings.Contains(got, "its dead delivery "+dead.String()[:8]) || !strings.Contains(got, "being sent, in order") {
		t.Errorf("after Skip the page says %q", got)
	}
	b.screenshot("phone-skipped")
	e.waitState(tn, third, delivery.Delivered)
	e.waitState(tn, fourth, delivery.Delivered)
	if got := rc.arrived(key); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("the order's events arrived as %v, want [1 2 3 4]", got)
	}
	b.run("phone endpoint page after Skip", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid=no-blocked-keys]`)))
	if got := b.text(`[data-testid=no-blocked-keys]`); got != "No key is blocked." {
		t.Errorf("after Skip the card says %q", got)
	}
	b.run("desktop", chromedp.EmulateViewport(1280, 900))
	b.run("the third, delivered", chromedp.Navigate(e.base+"/deliveries/"+third.String()), chromedp.WaitVisible(chromedp.CSS(`[data-testid=summary-headline]`)))
	if got := b.text(`[data-testid=summary-headline]`); got != "Delivered on the first attempt" {
		t.Errorf("the third after Skip: %q", got)
	}
	b.screenshot("third-delivered")
}
