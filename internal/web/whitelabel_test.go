package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/subscriptions"
)

// namesHookline says where s names Hookline in any case ("Hookline", "hookline.test"), with some context,
// or "" when it does not.
func namesHookline(s string) string {
	i := strings.Index(strings.ToLower(s), "hookline")
	if i < 0 {
		return ""
	}
	return "…" + s[max(0, i-80):min(len(s), i+40)] + "…"
}

// TestWhiteLabelNamesNoHookline: under a platform's brand, nothing a customer or their receiver sees names
// Hookline, in any case. The customer signed in with a password and the one in a portal session open every
// page the dashboard serves (the endpoint page with its custom header, the test event's delivery, its
// event, the search, the activity log naming the test event's type); the test event's type and text, as
// the receiver gets them, name the brand or nothing. Only the user-agent names Hookline to receivers, as
// the contract asks, and pages leave it out.
func TestWhiteLabelNamesNoHookline(t *testing.T) {
	t.Parallel()
	branded := withBrand(t)
	e := setup(t, withBackground, func(c *config.Config) { branded(c); c.MaxSubscriptions = 1 })
	tn := e.newTenant("white label")
	u := e.recv.URL + "/good/white-label"
	desc := "branded endpoint"
	sub, _, err := e.srv.Subscriptions.Create(byOperator(), tn.ID, subscriptions.Input{
		URL: &u, Description: &desc, Headers: &map[string]string{"X-Api-Key": "k-123"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	sp := c.post("/subscriptions/"+sub.ID.String()+"/test", nil)
	if sp.Status != http.StatusOK || sp.URL.Path != "/subscriptions/"+sub.ID.String() {
		t.Fatalf("send test: %s", sp)
	}
	if got := text(one(t, sp.Doc, "flash")); !strings.HasPrefix(got, "Sent a webhook.test event (a test, not a real event)") {
		t.Errorf("flash %q, want the brand's neutral test type", got)
	}
	if got := text(one(t, sp.Doc, "test-help")); got != "Sends webhook.test to this endpoint only" {
		t.Errorf("test button's help %q", got)
	}
	href := attr(one(t, one(t, sp.Doc, "flash"), "flash-link"), "href")
	id, err := uuid.Parse(strings.TrimPrefix(href, "/deliveries/"))
	if err != nil {
		t.Fatalf("flash link %q", href)
	}
	d := e.waitState(tn, id, delivery.Delivered)
	e.recv.waitHits(t, "/good/white-label", 1)
	for _, h := range e.recv.all() {
		if h.Path != "/good/white-label" {
			continue
		}
		if h.Type != "webhook.test" || !strings.Contains(h.Body, "A test event sent from the Acme Webhooks dashboard.") {
			t.Errorf("receiver got type %q, body %s", h.Type, h.Body)
		}
		if at := namesHookline(h.Body); at != "" {
			t.Errorf("the test event's body names Hookline: %s", at)
		}
		for k, vs := range h.Headers {
			if k == "User-Agent" {
				continue // the contract: a user-agent naming Hookline
			}
			if at := namesHookline(k + ": " + strings.Join(vs, ",")); at != "" {
				t.Errorf("a header sent to the receiver names Hookline: %s", at)
			}
		}
	}

	checkPagesNameNoHookline(t, e, tn, sub, c, d)

	// Refusals on forms too: the one subscription allowed is there.
	if p := c.post("/subscriptions", url.Values{"url": {e.recv.URL + "/good/one-too-many"}}); p.Status != http.StatusBadRequest ||
		!strings.Contains(text(one(t, p.Doc, "form-error")), "already has 1 subscriptions, the most allowed") || namesHookline(p.Body) != "" {
		t.Errorf("past the limit: %s %q (%s)", p, text(one(t, p.Doc, "form-error")), namesHookline(p.Body))
	}
	// The icon in the browser's tab is not Hookline's mark either: the brand's logo.
	if !strings.Contains(sp.Body, `<link rel="icon" href="/static/brand-logo">`) {
		t.Error("the page's icon is not the brand's logo")
	}
	if p := c.get("/favicon.ico"); p.Status == http.StatusOK && namesHookline(p.Body) != "" {
		t.Errorf("/favicon.ico under a brand is Hookline's: %s", namesHookline(p.Body))
	}
}

// checkPagesNameNoHookline checks no page a customer sees, signed in with a password (c) or in a portal
// session, names Hookline under a brand.
func checkPagesNameNoHookline(t *testing.T, e *env, tn tenant, sub subscriptions.Subscription, c *client, d deliveries.Detail) {
	t.Helper()
	pc := e.portalClient(e.portalLink(tn, portal.LinkRequest{User: portal.User{Name: "Ann"}}))
	fill := strings.NewReplacer("{id}", sub.ID.String(), "{token}", "unknown-link")
	for who, cl := range map[string]*client{"password customer": c, "portal session": pc} {
		checked := 0
		for _, rt := range walkWeb(t, e) {
			if rt.method != http.MethodGet || rt.pattern == "/static/*" || rt.pattern == "/favicon.ico" || strings.HasPrefix(rt.pattern, "/admin") {
				continue
			}
			path := fill.Replace(rt.pattern)
			switch rt.pattern {
			case "/deliveries/{id}":
				path = "/deliveries/" + d.ID.String()
			case "/events/{id}":
				path = "/events/" + d.EventID.String()
			case "/find":
				path = "/find?q=" + d.EventID.String()[:8]
			case "/recovers/{id}":
				continue // TestRecoverPageNamesPerson's
			}
			p := cl.get(path)
			checked++
			if at := namesHookline(p.Body); at != "" {
				t.Errorf("%s: GET %s (%d) names Hookline: %s", who, path, p.Status, at)
			}
		}
		if checked < 10 {
			t.Fatalf("%s: checked only %d pages", who, checked)
		}
	}
}
