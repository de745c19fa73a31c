package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"golang.org/x/net/html"
)

// failingSubscription makes a subscription of tn that fails (/flaky answers 503) with waiting deliveries:
// one event is tried until it expires (so failing_since is set by the engine itself), then the subscription
// is paused and more events wait, their first expiry set to 50 h from now.
func (e *env) failingSubscription(tn tenant, name string, waiting int) uuid.UUID {
	e.t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	s := e.newSubscription(tn, "/flaky/"+name, name+" endpoint")
	e.waitState(tn, e.publishTo(tn, s.ID, "order.paid", map[string]any{"n": 0}), delivery.Expired)
	if _, err := e.srv.Subscriptions.Pause(ctx, tn.ID, s.ID); err != nil {
		e.t.Fatal(err)
	}
	for i := range waiting {
		e.publishTo(tn, s.ID, "order.paid", map[string]any{"n": i + 1})
	}
	e.exec(`UPDATE webhook_deliveries SET give_up_at = now() + interval '50 hours' WHERE subscription_id = $1 AND state = 'pending'`, s.ID)
	return s.ID
}

// failingSince moves the start of a subscription's run of failures (nil: a 2xx ended it) and runs the
// incident rules, as the maintenance leader does every few seconds.
func (e *env) failingSince(subID uuid.UUID, since *time.Time) {
	e.t.Helper()
	e.exec(`UPDATE subscriptions SET failing_since = $2 WHERE id = $1`, subID, since)
	if err := e.srv.Incidents.Check(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.srv.Pool.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// banner is a page's incident banner lines, or nil without a banner.
func banner(t *testing.T, p *page) []*html.Node {
	t.Helper()
	b := byTestID(p.Doc, "incident-banner")
	switch len(b) {
	case 0:
		return nil
	case 1:
		if r := attr(b[0], "role"); r != "status" && r != "alert" {
			t.Errorf("banner role %q", r)
		}
		return byTestID(b[0], "incident-line")
	}
	t.Fatalf("%s: %d incident banners", p, len(b))
	return nil
}

func TestIncidentBannerOnEveryCustomerPage(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("incident banner")
	other := e.newTenant("incident bystander")
	subID := e.failingSubscription(tn, "banner", 3)
	healthy := e.newSubscription(tn, "/ok/banner", "banner healthy endpoint")
	d := e.publishTo(tn, healthy.ID, "order.paid", map[string]any{"ok": true})
	e.waitState(tn, d, delivery.Delivered)

	c := e.client()
	c.login(tn.Email)
	if lines := banner(t, c.get("/")); lines != nil {
		t.Fatalf("banner before any incident: %d lines", len(lines))
	}

	since := time.Now().UTC().Add(-3*time.Hour - 30*time.Second)
	e.failingSince(subID, &since)
	clock := since.Format("15:04 UTC")
	if now := time.Now().UTC(); now.YearDay() != since.YearDay() {
		clock = since.Format("Jan 2, 15:04 UTC")
	}
	want := "Your endpoint banner endpoint has failed every attempt since " + clock + " (3 h). " +
		"3 deliveries are waiting; the first expires in 2 days."
	pages := map[string]string{
		"home": "/", "subscription": "/subscriptions/" + subID.String(), "other subscription": "/subscriptions/" + healthy.ID.String(),
		"delivery": "/deliveries/" + d.String(), "not found": "/no/such/page",
	}
	for name, path := range pages {
		p := c.get(path)
		lines := banner(t, p)
		if len(lines) != 1 {
			t.Errorf("%s: %d banner lines, want 1", name, len(lines))
			continue
		}
		if got := text(lines[0]); got != want {
			t.Errorf("%s: banner\n got %q\nwant %q", name, got, want)
		}
		links := findAll(lines[0], tag("a"))
		if len(links) != 1 || attr(links[0], "href") != "/subscriptions/"+subID.String() {
			t.Errorf("%s: banner links %v", name, links)
		}
		// The banner comes first in <main>, above the breadcrumb.
		if m := findAll(p.Doc, tag("main")); len(m) != 1 || firstElement(m[0]) == nil || attr(firstElement(m[0]), "data-testid") != "incident-banner" {
			t.Errorf("%s: the banner is not first in <main>", name)
		}
	}
	if strings.Contains(c.get("/").Body, "style=") {
		t.Error("the banner uses an inline style (the CSP forbids them)")
	}

	checkBannerOnlyWhereItBelongs(t, e, tn, other, subID, want)

	// A 2xx ends it: the banner goes.
	e.failingSince(subID, nil)
	for name, path := range pages {
		if lines := banner(t, c.get(path)); lines != nil {
			t.Errorf("%s after the incident ended: %d banner lines", name, len(lines))
		}
	}
}

// checkBannerOnlyWhereItBelongs checks tn's banner is shown nowhere else: not to another tenant, not on the
// sign-in page, and to an operator only on tn's pages.
func checkBannerOnlyWhereItBelongs(t *testing.T, e *env, tn, other tenant, subID uuid.UUID, want string) {
	t.Helper()
	// Another tenant's user sees nothing of it.
	oc := e.client()
	oc.login(other.Email)
	if lines := banner(t, oc.get("/")); lines != nil {
		t.Errorf("another tenant's home shows %d incident lines", len(lines))
	}
	// Signed out, the login page has no banner.
	if lines := banner(t, e.client().get("/login")); lines != nil {
		t.Error("the login page shows a banner")
	}
	// An operator sees the tenant's banner on the tenant's pages, none on the cross-tenant ones.
	ac := e.client()
	ac.login(adminEmail)
	if lines := banner(t, ac.get("/subscriptions/"+subID.String())); len(lines) != 1 || text(lines[0]) != want {
		t.Errorf("operator on the tenant's subscription: %d banner lines", len(lines))
	}
	if lines := banner(t, ac.get("/admin/tenants/"+tn.ID.String())); len(lines) != 1 {
		t.Errorf("operator on the tenant's admin page: %d banner lines", len(lines))
	}
	if lines := banner(t, ac.get("/admin")); lines != nil {
		t.Errorf("the operator overview shows %d banner lines", len(lines))
	}
}

func firstElement(n *html.Node) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			return c
		}
	}
	return nil
}

func TestIncidentBannerOneLinePerIncident(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("incident two")
	a := e.failingSubscription(tn, "two-a", 1)
	b := e.failingSubscription(tn, "two-b", 0)
	since := time.Now().UTC().Add(-90 * time.Minute)
	e.failingSince(a, &since)
	e.failingSince(b, &since)
	c := e.client()
	c.login(tn.Email)
	lines := banner(t, c.get("/"))
	if len(lines) != 2 {
		t.Fatalf("%d banner lines, want 2", len(lines))
	}
	got := text(lines[0]) + " | " + text(lines[1])
	for _, w := range []string{"two-a endpoint has failed", "(1 h). 1 delivery is waiting; it expires in 2 days.",
		"two-b endpoint has failed", "(1 h). No deliveries are waiting."} {
		if !strings.Contains(got, w) {
			t.Errorf("banner %q lacks %q", got, w)
		}
	}
}

func TestSubscriptionPageListsIncidents(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("incident list")
	subID := e.failingSubscription(tn, "list", 2)
	c := e.client()
	c.login(tn.Email)
	path := "/subscriptions/" + subID.String()
	if n := len(byTestID(c.get(path).Doc, "incidents")); n != 0 {
		t.Fatalf("an incident list before any incident (%d)", n)
	}

	// One incident that ended after about 5 h, with every step told...
	first := time.Now().UTC().Add(-6 * time.Hour)
	e.failingSince(subID, &first)
	e.exec(`UPDATE incidents SET day_notified_at = now(), expiring_notified_at = now(), expired_notified_at = now(),
		expired_count = 4 WHERE subscription_id = $1`, subID)
	e.failingSince(subID, nil)
	e.exec(`UPDATE incidents SET ended_at = failing_since + interval '5 hours 12 minutes' WHERE subscription_id = $1`, subID)
	// ... then a new one, ongoing.
	second := time.Now().UTC().Add(-2*time.Hour - 5*time.Minute)
	e.failingSince(subID, &second)

	checkIncidentRows(t, c, path)

	// At most the latest 10, newest first.
	for i := range 10 {
		at := time.Now().Add(-time.Duration(30+i) * 24 * time.Hour)
		e.exec(`INSERT INTO incidents (tenant_id, subscription_id, failing_since, opened_at, ended_at)
			VALUES ($1, $2, $3, $3, $3::timestamptz + interval '1 hour')`, tn.ID, subID, at)
	}
	rows := byTestID(one(t, c.get(path).Doc, "incidents"), "incident-row")
	if len(rows) != 10 || !hasAttr(rows[0], "data-ongoing") {
		t.Errorf("%d rows (want 10), first ongoing %v", len(rows), len(rows) > 0 && hasAttr(rows[0], "data-ongoing"))
	}
}

// checkIncidentRows checks path's page lists the ongoing incident and the ended one, newest first: how long
// each lasted and, for the ended one, every step told.
func checkIncidentRows(t *testing.T, c *client, path string) {
	t.Helper()
	p := c.get(path)
	rows := byTestID(one(t, p.Doc, "incidents"), "incident-row")
	if len(rows) != 2 {
		t.Fatalf("%d incident rows, want 2", len(rows))
	}
	cell := func(row *html.Node, label string) string {
		for _, td := range findAll(row, tag("td")) {
			if attr(td, "data-label") == label {
				return text(td)
			}
		}
		t.Fatalf("no %s cell", label)
		return ""
	}
	// A time cell shows the age; its exact moment (UTC) is the time element's title.
	exact := func(row *html.Node, label string) string {
		for _, td := range findAll(row, tag("td")) {
			if attr(td, "data-label") == label {
				if ts := findAll(td, tag("time")); len(ts) == 1 {
					return attr(ts[0], "title")
				}
			}
		}
		t.Fatalf("no %s time", label)
		return ""
	}
	ongoing, ended := rows[0], rows[1]
	steps := func(row *html.Node) string {
		var out []string
		for _, st := range byTestID(row, "step") {
			out = append(out, text(st))
		}
		return strings.Join(out, "|")
	}
	if !hasAttr(ongoing, "data-ongoing") || cell(ongoing, "Ended") != "ongoing" {
		t.Errorf("newest row is not the ongoing incident: %q", text(ongoing))
	}
	if got := cell(ongoing, "Down for"); got != "2 h 5 min" {
		t.Errorf("ongoing incident down for %q", got)
	}
	if got := steps(ongoing); got != "opened" {
		t.Errorf("ongoing incident's steps %q", got)
	}
	if hasAttr(ended, "data-ongoing") || !strings.Contains(exact(ended, "Ended"), time.Now().UTC().Format("2006-")) {
		t.Errorf("older row: %q", text(ended))
	}
	if got := cell(ended, "Down for"); got != "5 h 12 min" {
		t.Errorf("ended incident down for %q", got)
	}
	if got, want := steps(ended), "opened|after 24 h|before expiry|4 deliveries expired|ended"; got != want {
		t.Errorf("ended incident's steps %q, want %q", got, want)
	}
	if got := exact(ended, "Opened"); !strings.Contains(got, "UTC") {
		t.Errorf("opened %q", got)
	}
}

// TestBrowserIncidentBanner opens the pages with an incident at laptop and phone sizes: the banner and the
// incident list fit the screen. With HOOKLINE_SCREENSHOTS=dir it keeps a screenshot of each.
func TestBrowserIncidentBanner(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	tn := e.newTenant("incident browser")
	other := e.failingSubscription(tn, "https-api-example-com-webhooks-with-a-rather-long-path-that-must-wrap", 1)
	subID := e.failingSubscription(tn, "browser", 214)
	e.exec(`UPDATE subscriptions SET description = '' WHERE id = $1`, other)
	first := time.Now().UTC().Add(-20 * time.Hour)
	e.failingSince(subID, &first)
	e.exec(`UPDATE incidents SET day_notified_at = now(), expired_notified_at = now(), expired_count = 12 WHERE subscription_id = $1`, subID)
	e.failingSince(subID, nil)
	e.exec(`UPDATE incidents SET opened_at = failing_since + interval '1 hour', ended_at = failing_since + interval '16 hours 40 minutes'
		WHERE subscription_id = $1`, subID)
	since := time.Now().UTC().Add(-3 * time.Hour)
	e.failingSince(subID, &since)
	e.failingSince(other, &since)
	b.login(e.base, tn.Email)
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
		for _, p := range []struct{ name, path string }{{"home", "/"}, {"subscription", "/subscriptions/" + subID.String()}} {
			b.run("open "+p.name, chromedp.Navigate(e.base+p.path), chromedp.WaitVisible(chromedp.CSS(`[data-testid=incident-banner]`)))
			b.assetsLoaded(p.name)
			if overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); overflow > 1 {
				t.Errorf("%s at %s: %d px wider than the screen", p.name, size.name, overflow)
			}
			if n := eval[int](b, `document.querySelectorAll('[data-testid=incident-line]').length`); n != 2 {
				t.Errorf("%s at %s: %d banner lines", p.name, size.name, n)
			}
			b.screenshot(size.name + "-" + p.name)
		}
	}
}
