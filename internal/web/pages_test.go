package web_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

// pageSet is every page of the dashboard with data to show, by route pattern: the pages the accessibility
// check and the rendering checks visit.
type pageSet struct {
	customerEmail string
	customer      map[string][]string // as the tenant's user
	admin         map[string][]string // as an operator
	// operatorOnCustomer is a customer's delivery page as an operator sees it.
	operatorOnCustomer string
}

// everyPage seeds a tenant with deliveries in every state, a recover and an expired delivery, and lists a
// page (or several) for each GET route of the router. A GET route without a page here fails the test, so
// a new page is checked from the start.
func everyPage(t *testing.T, e *env) pageSet {
	t.Helper()
	s := seed(e, "a11y", 2)
	_, retrying := e.retrying(s.tn, "a11y")
	flaky := e.newSubscription(s.tn, "/flaky/a11y", "Flaky billing endpoint", "invoice.created")
	if _, err := e.srv.Subscriptions.Update(setupCtx(), s.tn.ID, flaky.ID, subscriptions.Input{
		Headers: &map[string]string{"X-Api-Key": "a11y-header-value"},
	}); err != nil {
		t.Fatal(err)
	}
	expired := e.publishTo(s.tn, flaky.ID, "invoice.created", map[string]any{"invoice": "in_1"})
	e.waitState(s.tn, expired, delivery.Expired)
	dead, err := e.srv.Deliveries.Get(context.Background(), s.tn.ID, s.dead[0])
	if err != nil {
		t.Fatal(err)
	}
	// A recover, so that the replay pages have one to show.
	c := e.client()
	c.login(s.tn.Email)
	c.post("/subscriptions/"+s.bad.String()+"/recover", url.Values{"action": {"confirm"}, "since": {formTimeOf(time.Now().Add(-time.Hour))}})
	var recoverID string
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT id::text FROM replays WHERE subscription_id = $1 AND NOT dry_run`, s.bad).Scan(&recoverID); err != nil {
		t.Fatalf("the recover: %v", err)
	}

	// The catalogue's types: grouped, with fields, an example, a deprecated one and one without a schema.
	types := e.seedCatalogue("a11y")

	// The failing endpoint authenticates with basic auth, presents a client certificate expiring in 10 days
	// (so every page of the tenant's shows the banner), filters and retries on its own schedule: its page,
	// its form and every banner are checked with them. Set last: the filter would keep events seeded above.
	cert := newTestCertificate(t, "a11y.example.com", time.Now().Add(10*24*time.Hour), nil)
	sched := []string{"30s", "5m", "1h"}
	if _, err := e.srv.Subscriptions.Update(setupCtx(), s.tn.ID, s.bad, subscriptions.Input{
		Auth:              &subscriptions.AuthInput{Type: "basic", Username: "a11y", Password: "a11y-password"},
		ClientCertificate: &subscriptions.CertificateInput{Certificate: cert.chain, PrivateKey: cert.key},
		Filter:            []byte(`{"data": {"amount": {"$gte": 100}}}`),
		RetrySchedule:     &sched,
	}); err != nil {
		t.Fatal(err)
	}

	ps := pageSet{customerEmail: s.tn.Email, operatorOnCustomer: "/deliveries/" + s.dead[0].String()}
	ps.customer = map[string][]string{
		"/":                   {"/"},
		"/subscriptions/{id}": {"/subscriptions/" + s.bad.String(), "/subscriptions/" + flaky.ID.String() + "?state=dead&range=1h"},
		// Endpoint self-service: the empty form, a subscription's form with its event types and headers
		// (values never shown), and the delete confirmation of one with deliveries.
		"/subscriptions/new":         {"/subscriptions/new"},
		"/subscriptions/{id}/edit":   {"/subscriptions/" + flaky.ID.String() + "/edit", "/subscriptions/" + s.bad.String() + "/edit"},
		"/subscriptions/{id}/delete": {"/subscriptions/" + flaky.ID.String() + "/delete"},
		"/deliveries":                {"/deliveries", "/deliveries?state=bogus"},
		"/deliveries/{id}":           {"/deliveries/" + s.dead[0].String(), "/deliveries/" + retrying.String(), "/deliveries/" + s.delivered[0].String(), "/deliveries/" + expired.String()},
		"/events/{id}":               {"/events/" + dead.EventID.String()},
		"/find":                      {"/find?q=" + dead.EventID.String()[:8], "/find?q=no-such-thing"},
		"/no/such/page":              {"/no/such/page"},
		"/recovers/{id}":             {"/recovers/" + recoverID},
		"/portal/{token}":            {"/portal/used-or-unknown"}, // the 410 page
		"/activity":                  {"/activity", "/activity?action=recover.started&since=2026-01-01T00:00", "/activity?action=nope"},
		"/event-types":               {"/event-types?q=" + types.marker, "/event-types?q=" + types.marker + "-nothing", "/event-types"},
	}
	ps.admin = map[string][]string{
		"/admin":              {"/admin"},
		"/admin/tenants/{id}": {"/admin/tenants/" + s.tn.ID.String()},
		"/admin/dead":         {"/admin/dead"},
		"/admin/replay":       {"/admin/replay?event_type=order.paid"},
		"/admin/replays":      {"/admin/replays"},
		"/admin/replays/{id}": {firstReplay(t, e)},

		// The operator's tenant administration.
		"/admin/tenants/new":             {"/admin/tenants/new"},
		"/admin/tenants/{id}/users":      {"/admin/tenants/" + s.tn.ID.String() + "/users"},
		"/admin/tenants/{id}/activity":   {"/admin/tenants/" + s.tn.ID.String() + "/activity"},
		"/admin/tenants/{id}/tokens/new": {"/admin/tenants/" + s.tn.ID.String() + "/tokens/new"},

		// The catalogue as an operator without a tenant sees it: no Send forms.
		"/event-types": {"/event-types?q=" + types.marker},
	}
	signedOut := map[string]bool{"/login": true, "/logout": true}
	for _, r := range walkWeb(t, e) {
		if r.method != "GET" || r.pattern == "/static/*" || r.pattern == "/favicon.ico" || signedOut[r.pattern] {
			continue
		}
		if ps.customer[r.pattern] == nil && ps.admin[r.pattern] == nil {
			t.Errorf("GET %s has no page in everyPage: add one", r.pattern)
		}
	}
	return ps
}

// firstReplay is the page of the first replay the operator's list links.
func firstReplay(t *testing.T, e *env) string {
	t.Helper()
	c := e.client()
	c.login(adminEmail)
	for _, a := range findAll(c.get("/admin/replays").Doc, tag("a")) {
		if href := attr(a, "href"); strings.HasPrefix(href, "/admin/replays/") {
			return href
		}
	}
	t.Fatal("no replay listed on /admin/replays")
	return ""
}

// templateCall is a templ call that was written where templ reads text, so it reached the page as is.
var templateCall = regexp.MustCompile(`@[A-Z][A-Za-z]*\(`)

// TestNoTemplateCallShownAsText renders every page and fails when its text shows a template call
// ("created @TimeTag(p.Created, \"\")"), which templ prints verbatim when it follows other text on a line.
func TestNoTemplateCallShownAsText(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	pages := everyPage(t, e)
	check := func(c *client, path string) {
		t.Helper()
		p := c.get(path)
		if m := templateCall.FindString(visibleText(p.Doc)); m != "" {
			t.Errorf("%s shows the template call %q as text", path, m)
		}
		// Attributes too: a call inside a quoted value is just as literal.
		if m := templateCall.FindString(p.Body); m != "" {
			t.Errorf("%s contains the template call %q", path, m)
		}
	}
	c := e.client()
	c.login(pages.customerEmail)
	for _, paths := range pages.customer {
		for _, p := range paths {
			check(c, p)
		}
	}
	a := e.client()
	a.login(adminEmail)
	for _, paths := range pages.admin {
		for _, p := range paths {
			check(a, p)
		}
	}
	check(a, pages.operatorOnCustomer)
}

// visibleText is the page's text outside script and style elements.
func visibleText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}
