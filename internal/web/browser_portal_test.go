package web_test

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
)

// A portal link's dark theme forces the dark scheme whatever the viewer prefers, and the customer pages
// pass the same axe-core WCAG 2 A/AA checks as TestBrowserAccessibility's (which runs the viewer's own
// light and dark preferences).
func TestBrowserPortalDarkAccessibility(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	s := seed(e, "portal-dark", 2)
	dead, err := e.srv.Deliveries.Get(context.Background(), s.tn.ID, s.dead[0])
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(s.tn, s.delivered[0], delivery.Delivered)
	types := e.seedCatalogue("portal-dark")
	b.run("light preference", chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}},
		})
		return chromedp.Void{}, err
	}))
	link := e.portalLink(s.tn, portal.LinkRequest{Theme: portal.ThemeDark, User: portal.User{Name: "Dana Dark"}})
	b.run("open a dark portal link", chromedp.Navigate(e.base+link), chromedp.WaitReady(chromedp.CSS(`footer`)))
	if bg := eval[string](b, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(16, 19, 26)" {
		t.Errorf("dark portal session under a light preference: body background %s, want the dark scheme's", bg)
	}
	for _, p := range []string{"/", "/subscriptions/" + s.bad.String(), "/deliveries", "/deliveries/" + s.dead[0].String(),
		"/deliveries/" + s.delivered[0].String(), "/events/" + dead.EventID.String(), "/find?q=" + dead.EventID.String()[:8],
		"/event-types?q=" + types.marker, "/no/such/page", "/portal/used-or-unknown", "/logout"} {
		b.run("open "+p, chromedp.Navigate(e.base+p), chromedp.WaitReady(chromedp.CSS(`footer`)))
		b.axeCheck("portal-dark " + p)
	}
}
