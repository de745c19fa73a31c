package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// byOperator is the context of a change a test makes through the services directly: an operator's, so it
// is recorded like any change (activity entries need an actor).
func byOperator() context.Context {
	return activity.WithActor(context.Background(), activity.Actor{Kind: activity.ActorAdmin, Email: "operator@example.com"})
}

// requestHeaders are the rows of a delivery page's request headers, name to value.
func requestHeaders(t *testing.T, p *page) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tr := range findAll(one(t, p.Doc, "headers"), tag("tr")) {
		th, td := findAll(tr, tag("th")), findAll(tr, tag("td"))
		if len(th) == 1 && len(td) == 1 {
			out[text(th[0])] = strings.TrimSpace(text(td[0]))
		}
	}
	return out
}

// Custom headers and the rate limit stay in view after saving: the endpoint page names each custom header
// with its value masked and says the rate limit; a delivery's request, to be sent and as sent, names the
// custom headers it carries, masked. No page shows a value, though the receiver gets them.
func TestCustomHeadersAndRateLimitShown(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("settings shown")
	u, desc, rate := e.recv.URL+"/good/settings-shown", "With headers", 10
	headers := map[string]string{"X-Api-Key": "secret-value-1", "X-Env": "prod-value"}
	sub, _, err := e.srv.Subscriptions.Create(byOperator(), tn.ID, subscriptions.Input{URL: &u, Description: &desc, Headers: &headers, RateLimitPerSecond: &rate})
	if err != nil {
		t.Fatal(err)
	}
	bare := e.newSubscription(tn, "/good/settings-bare", "Bare")
	c := e.client()
	c.login(tn.Email)

	p := c.get("/subscriptions/" + sub.ID.String())
	var shown []string
	for _, li := range byTestID(p.Doc, "custom-header") {
		shown = append(shown, text(li))
	}
	if strings.Join(shown, "|") != "X-Api-Key: •••• value hidden|X-Env: •••• value hidden" {
		t.Errorf("custom headers shown %q", shown)
	}
	if got := text(one(t, p.Doc, "rate-limit")); got != "at most 10 requests a second" {
		t.Errorf("rate limit %q", got)
	}
	b := c.get("/subscriptions/" + bare.ID.String())
	if h, r := text(one(t, b.Doc, "custom-headers")), text(one(t, b.Doc, "rate-limit")); h != "none" || r != "none" {
		t.Errorf("without headers or a limit: %q, %q", h, r)
	}

	// To be sent (paused: no attempt yet), then as sent.
	if _, err := e.srv.Subscriptions.Pause(byOperator(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	id := e.publishTo(tn, sub.ID, "order.created", map[string]any{"n": 1})
	pending := c.get("/deliveries/" + id.String())
	if got := text(one(t, pending.Doc, "request-heading")); got != "Request to be sent" {
		t.Fatalf("heading %q", got)
	}
	if h := requestHeaders(t, pending); h["x-api-key"] != delivery.Masked || h["x-env"] != delivery.Masked {
		t.Errorf("request to be sent: headers %v, want the custom ones masked", h)
	}
	if _, err := e.srv.Subscriptions.Resume(byOperator(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	e.waitState(tn, id, delivery.Delivered)
	sent := c.get("/deliveries/" + id.String())
	if got := text(one(t, sent.Doc, "request-heading")); got != "Request as sent" {
		t.Fatalf("heading %q", got)
	}
	if h := requestHeaders(t, sent); h["x-api-key"] != delivery.Masked || h["x-env"] != delivery.Masked || h["webhook-id"] == "" {
		t.Errorf("request as sent: headers %v, want the custom ones masked", h)
	}
	for _, pg := range []*page{p, pending, sent} {
		if strings.Contains(pg.Body, "secret-value-1") || strings.Contains(pg.Body, "prod-value") {
			t.Errorf("%s shows a custom header's value", pg.URL.Path)
		}
	}
	for _, h := range e.recv.all() {
		if h.Path == "/good/settings-shown" && (h.Headers.Get("X-Api-Key") != "secret-value-1" || h.Headers.Get("X-Env") != "prod-value") {
			t.Errorf("the receiver got %v", h.Headers)
		}
	}
}

// A custom header's name is spelled the same on the endpoint's page as in its form: as stored (canonical,
// whatever case it was typed in). The page lower-cased them ("x-api-key") while the form said "X-Api-Key".
func TestCustomHeaderNamesSpelledAlikeOnPageAndForm(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("header names alike")
	c := e.client()
	c.login(tn.Email)
	p := c.post("/subscriptions", url.Values{"url": {e.recv.URL + "/good/header-names"}, "description": {"Header names"},
		"header_name": {"x-api-key", "X-Tenant"}, "header_value": {"k_1", "acme"}})
	if p.Status != http.StatusOK || !strings.HasPrefix(p.URL.Path, "/subscriptions/") {
		t.Fatalf("create: %s", p)
	}
	var onPage []string
	for _, li := range byTestID(p.Doc, "custom-header") {
		name, _, _ := strings.Cut(text(li), ":")
		onPage = append(onPage, name)
	}
	var inForm []string
	for _, in := range byTestID(c.get(p.URL.Path+"/edit").Doc, "header-name") {
		if v := attr(in, "value"); v != "" {
			inForm = append(inForm, v)
		}
	}
	if want := []string{"X-Api-Key", "X-Tenant"}; !slices.Equal(onPage, want) || !slices.Equal(inForm, want) {
		t.Errorf("header names on the page %q, in the form %q, want %q on both", onPage, inForm, want)
	}
}
