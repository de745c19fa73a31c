package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/subscriptions"
)

// viewport is a screen size the dashboard is checked at.
type viewport struct {
	name   string
	w, h   int64
	mobile bool
}

var laptopAndPhone = []viewport{{"laptop", 1366, 900, false}, {"phone", 390, 844, true}}

func (b *browser) emulate(v viewport) {
	b.t.Helper()
	var opts []chromedp.EmulateViewportOption
	if v.mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	b.run("viewport "+v.name, chromedp.EmulateViewport(v.w, v.h, opts...))
}

// open shows path and checks what every page of this test must: assets loaded, nothing wider than the
// screen, and who is signed in visible in the header; then it keeps a screenshot.
func (b *browser) open(base, path, shot string, v viewport) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS(`footer`)))
	b.assetsLoaded(path)
	if overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); overflow > 1 {
		b.t.Errorf("%s at %s: %d px wider than the screen", path, v.name, overflow)
	}
	if user := b.visible(`[data-testid=user]`); user != "" && !strings.HasPrefix(path, "/portal/") {
		b.t.Errorf("%s at %s: who is signed in is not visible: %s", path, v.name, user)
	}
	b.screenshot(v.name + "-" + shot)
}

// visible says why the element sel is not visible on the screen ("" when it is): missing, not displayed,
// of no size, or outside the viewport.
func (b *browser) visible(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		if (!el) return "missing";
		const s = getComputedStyle(el);
		if (s.display === "none" || s.visibility === "hidden") return "not displayed";
		const r = el.getBoundingClientRect();
		if (r.width < 1 || r.height < 1) return "no size";
		if (r.left < 0 || r.right > innerWidth + 1 || r.top < 0 || r.bottom > innerHeight) return "outside the screen: " + JSON.stringify(r);
		return "";
	})()`, sel))
}

// Issue 28, items 17, 18 and 20 as a browser shows them, at laptop and phone width: the endpoint form's
// wildcards (ticking "Every … event" covers its types), a view-only session's settings and dead delivery
// (marked view only in the header), the recover preview's pace, the used portal link's page, and who is
// signed in visible in the header at 390 px.
func TestBrowserEndpointFormAndViewOnly(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	prefix, _ := e.wildcardCatalogue("browser")
	pattern := prefix + ".*"
	tn := e.newTenant("browser forms")
	s := e.newSubscription(tn, "/wild/browser", "Billing hook", pattern)
	headers := map[string]string{"X-Api-Key": "stored-key-value"}
	rate := 25
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, s.ID, subscriptions.Input{Headers: &headers, RateLimitPerSecond: &rate}); err != nil {
		t.Fatal(err)
	}
	failing := e.newSubscription(tn, "/bad/browser-forms", "Failing hook")
	dead := e.deadOf(tn, failing.ID, "order.paid", 2)
	edit := "/subscriptions/" + s.ID.String() + "/edit"

	b.login(e.base, tn.Email)
	for _, v := range laptopAndPhone {
		b.emulate(v)
		b.open(e.base, edit, "edit-wildcard", v)
		covered := fmt.Sprintf(`[...document.querySelectorAll('input[data-testid=event-type][value^="%s."]')]`, prefix)
		notes := covered + `.map(i => i.parentElement.querySelector('[data-testid=covered-by]'))`
		if !eval[bool](b, covered+`.length === 2 && `+covered+`.every(i => i.checked && i.disabled) && `+notes+`.every(n => !n.hidden && n.textContent.includes("`+pattern+`"))`) {
			t.Errorf("%s: %s's types are not shown checked and covered by it", v.name, pattern)
		}
		if v.name == "laptop" {
			// Unticking the wildcard frees its types (as they were: not chosen); ticking it covers them again.
			wild := fmt.Sprintf(`input[data-testid=event-wildcard][value="%s"]`, pattern)
			b.run("untick the wildcard", chromedp.Click(chromedp.CSS(wild)))
			if !eval[bool](b, covered+`.every(i => !i.checked && !i.disabled) && `+notes+`.every(n => n.hidden)`) {
				t.Error("unticking the wildcard leaves its types covered")
			}
			b.screenshot(v.name + "-edit-wildcard-unticked")
			b.run("tick the wildcard", chromedp.Click(chromedp.CSS(wild)))
			if !eval[bool](b, covered+`.every(i => i.checked && i.disabled) && `+notes+`.every(n => !n.hidden)`) {
				t.Error("ticking the wildcard does not cover its types")
			}
			b.axeCheck("endpoint form")
		}

		// The recover preview tells the pace the card promises.
		b.open(e.base, "/subscriptions/"+failing.ID.String(), "subscription", v)
		b.run("preview a recover", chromedp.Click(chromedp.CSS(`[data-testid=recover-preview]`)))
		b.waitJS("preview", `document.querySelector('[data-testid=recover-preview-result]')`)
		if got := b.text(`[data-testid=recover-preview-result] p`); !strings.Contains(got, "spread over 1 second") {
			t.Errorf("%s: the recover preview says %q", v.name, got)
		}
		b.run("scroll to the preview", chromedp.ScrollIntoView(chromedp.CSS(`[data-testid=recover-preview-result]`)))
		b.screenshot(v.name + "-recover-preview")

		// A used (or unknown) portal link's page.
		b.open(e.base, "/portal/used-or-unknown", "portal-link-used", v)
		if title := eval[string](b, `document.title`); title != "Link expired or already used · Hookline" {
			t.Errorf("%s: the used link's page is titled %q", v.name, title)
		}
	}

	checkViewOnlyPages(t, b, e, tn, edit, dead)
}

// checkViewOnlyPages opens a view-only portal session's settings page and dead delivery (edit, dead[0]) on
// a laptop and a phone: the header marks it, nothing can be changed, nothing offers Resend.
func checkViewOnlyPages(t *testing.T, b *browser, e *env, tn tenant, edit string, dead []uuid.UUID) {
	t.Helper()
	// A view-only portal session: the header marks it; settings and a dead delivery say what is true for
	// someone who may only look.
	for _, v := range laptopAndPhone {
		b.emulate(v)
		link := e.portalLink(tn, portal.LinkRequest{Role: portal.RoleView, User: portal.User{Name: "Vera Viewer"}})
		b.run("open a view link", chromedp.Navigate(e.base+link), chromedp.WaitReady(chromedp.CSS(`footer`)))
		b.open(e.base, edit, "settings-view-only", v)
		if why := b.visible(`[data-testid=view-only]`); why != "" {
			t.Errorf("%s: the view-only mark is not visible: %s", v.name, why)
		}
		if got := b.text(`main h1`); got != "Endpoint settings" {
			t.Errorf("%s: heading %q", v.name, got)
		}
		if n := eval[int](b, `[...document.querySelectorAll('[data-testid=endpoint-form] input')].filter(i => !i.matches(':disabled')).length`); n != 0 {
			t.Errorf("%s: %d inputs can be changed", v.name, n)
		}
		b.open(e.base, "/deliveries/"+dead[0].String(), "delivery-dead-view-only", v)
		if got := b.text(`[data-testid=summary-note]`); strings.Contains(got, "Resend") {
			t.Errorf("%s: a viewer's dead delivery says %q", v.name, got)
		}
		if v.name == "laptop" {
			b.axeCheck("view-only delivery")
			b.open(e.base, edit, "settings-view-only", v)
			b.axeCheck("view-only settings")
		}
	}
}
