package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// TestBrowserCatalogue: the header leads to the catalogue, whose search filters the types as you type;
// Copy copies an example; Send example sends it, as an event of its type, to the chosen endpoint, and
// leads to its delivery. At phone width the fields table stacks and nothing overflows sideways.
func TestBrowserCatalogue(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	s := e.seedCatalogue("catbrowser")
	tn := e.newTenant("catalogue browser")
	e.newSubscription(tn, "/good/catbrowser", "Browser endpoint", "something.else")
	card := func(name string) string { return fmt.Sprintf(`[data-testid=event-type][data-name=%q]`, name) }

	b.login(e.base, tn.Email)
	b.run("open the catalogue",
		chromedp.Click(chromedp.CSS(`[data-testid=nav-event-types]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=catalogue-search]`)),
	)
	b.assetsLoaded("catalogue")
	b.run("only this test's types", chromedp.Navigate(e.base+"/event-types?q="+s.marker), chromedp.WaitReady(chromedp.CSS(`footer`)))
	b.screenshot("laptop-catalogue")
	b.run("the whole catalogue", chromedp.Navigate(e.base+"/event-types"), chromedp.WaitVisible(chromedp.CSS(`#et-q`)))

	// As you type, only the types whose name contains it stay, and groups left empty hide.
	visible := `[...document.querySelectorAll('[data-testid=event-type]')].filter(e => e.offsetParent !== null).map(e => e.dataset.name).join(',')`
	b.run("type a search", chromedp.SendKeys(chromedp.CSS(`#et-q`), s.marker+".ORDER"))
	b.waitJS("filtered as typed", visible+` === '`+s.legacy+`,`+s.placed+`'`)
	if got := b.text(`[data-testid=catalogue-count]`); !strings.HasPrefix(got, "2 of ") || !strings.HasSuffix(got, "match “"+s.marker+".ORDER”.") {
		t.Errorf("count while filtering %q", got)
	}
	groups := eval[[]string](b, `[...document.querySelectorAll('[data-testid=type-group]')].filter(g => !g.hidden).map(g => g.dataset.group).filter(g => g.includes('`+s.marker+`'))`)
	if !reflect.DeepEqual(groups, []string{s.orders}) {
		t.Errorf("groups shown %v, want only %s", groups, s.orders)
	}
	eval[bool](b, `(() => { const i = document.querySelector('#et-q'); i.value = '`+s.marker+`-nothing'; i.dispatchEvent(new Event('input')); return true })()`)
	b.waitJS("nothing matches", `document.querySelector('[data-testid=no-match-live]').offsetParent !== null`)
	eval[bool](b, `(() => { const i = document.querySelector('#et-q'); i.value = ''; i.dispatchEvent(new Event('input')); return true })()`)
	b.waitJS("all again", `document.querySelector('[data-testid=no-match-live]').hidden && document.querySelector('`+card(s.bare)+`').offsetParent !== null`)

	checkCopyExample(t, b, e.base, card(s.placed), s)

	// Send example: to the one subscription, which takes only another type; the receiver gets the example.
	send := card(s.placed) + ` [data-testid=send-example]`
	b.run("send the example", chromedp.ScrollIntoView(chromedp.CSS(send)), chromedp.Click(chromedp.CSS(send)))
	b.waitJS("on the delivery's page", `location.pathname.startsWith('/deliveries/') && document.querySelector('[data-testid=flash]')`)
	if got := b.text(`[data-testid=flash]`); !strings.HasPrefix(got, "Sent the catalogue's example of "+s.placed) {
		t.Errorf("flash %q", got)
	}
	e.recv.waitHits(t, "/good/catbrowser", 1)
	h := e.recv.all()
	for _, x := range h {
		if !strings.HasPrefix(x.Path, "/good/catbrowser") {
			continue
		}
		var body struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal([]byte(x.Body), &body); err != nil || body.Type != s.placed || !reflect.DeepEqual(body.Data, s.example) {
			t.Errorf("the receiver got %s (%v), want %s with the example", x.Body, err, s.placed)
		}
	}

	// Phone width: the fields table stacks (no header row, each cell labelled) and nothing overflows.
	b.run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.run("open the catalogue at phone width", chromedp.Navigate(e.base+"/event-types?q="+s.marker), chromedp.WaitReady(chromedp.CSS(`footer`)))
	if overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); overflow > 1 {
		t.Errorf("the catalogue at 390 px is %d px wider than the screen", overflow)
	}
	if d := eval[string](b, `getComputedStyle(document.querySelector('[data-testid=fields] thead')).display`); d != "none" {
		t.Errorf("at 390 px the fields table's header shows (%s): it does not stack", d)
	}
	b.axeCheck("phone /event-types?q=" + s.marker)
	b.screenshot("phone-catalogue")
}

// checkCopyExample copies the example of typeCard's type: the clipboard holds it when this chromium allows,
// and the button says what happened.
func checkCopyExample(t *testing.T, b *browser, base, typeCard string, s catalogueSeed) {
	t.Helper()
	// Copy the example: the clipboard holds it when this chromium allows, and the button says what happened.
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
	copyButton := typeCard + ` [data-testid=copy-example]`
	b.run("copy the example", chromedp.ScrollIntoView(chromedp.CSS(copyButton)), chromedp.Click(chromedp.CSS(copyButton)))
	b.waitJS("copied", `document.querySelector('`+copyButton+`').dataset.copied`)
	switch state := eval[string](b, `document.querySelector('`+copyButton+`').dataset.copied`); state {
	case "yes":
		if got := b.text(copyButton + ` .copy-label`); got != "Copied" {
			t.Errorf("copied label %q", got)
		}
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, awaitPromise))
		var copied map[string]any
		if err != nil || json.Unmarshal([]byte(got), &copied) != nil || !reflect.DeepEqual(copied, s.example) {
			t.Errorf("clipboard holds %q (%v), want the example", got, err)
		}
	default:
		t.Logf("this chromium refused the clipboard write (%s): the label says so", state)
		if got := b.text(copyButton + ` .copy-label`); got != "Copy failed" {
			t.Errorf("failed copy label %q", got)
		}
	}
}
