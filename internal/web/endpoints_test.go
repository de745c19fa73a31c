package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web"
	"golang.org/x/net/html"
)

// storedRow is a subscription's row as stored, for "nothing saved / nothing changed" checks.
func (e *env) storedRow(id uuid.UUID) string {
	e.t.Helper()
	var s string
	err := e.srv.Pool.QueryRow(context.Background(), `SELECT to_jsonb(s)::text FROM subscriptions s WHERE id = $1`, id).Scan(&s)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// storedHeaders are a subscription's custom headers as stored (plaintext: the tests run without a key).
func (e *env) storedHeaders(id uuid.UUID) map[string]string {
	e.t.Helper()
	var raw []byte
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT headers FROM subscriptions WHERE id = $1`, id).Scan(&raw); err != nil {
		e.t.Fatal(err)
	}
	h := map[string]string{}
	if err := json.Unmarshal(raw, &h); err != nil {
		e.t.Fatal(err)
	}
	for k, v := range h {
		h[k] = strings.TrimPrefix(v, "plain:") // how secretbox marks a plaintext value that looks sealed
	}
	return h
}

func (e *env) subscriptionCount(tn tenant) int {
	e.t.Helper()
	all, err := e.srv.Subscriptions.List(context.Background(), tn.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(all)
}

func byID(n *html.Node, id string) *html.Node {
	got := findAll(n, func(n *html.Node) bool { return attr(n, "id") == id })
	if len(got) != 1 {
		return nil
	}
	return got[0]
}

// within reports whether n is inside (or is) the element a.
func within(n, a *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if n == a {
			return true
		}
	}
	return false
}

// wantFieldError requires the page to be the form again (400) with exactly one field message, errID,
// inside the same field (its .field div or fieldset) as the input or fieldset container, saying want.
func wantFieldError(t *testing.T, what string, p *page, container, errID, want string) {
	t.Helper()
	if p.Status != http.StatusBadRequest {
		t.Errorf("%s: %d, want 400", what, p.Status)
	}
	if len(byTestID(p.Doc, "endpoint-form")) != 1 {
		t.Errorf("%s: the form is not shown again", what)
		return
	}
	var msgs []string
	for _, n := range findAll(p.Doc, func(n *html.Node) bool { return strings.Contains(attr(n, "class"), "field-error") }) {
		msgs = append(msgs, attr(n, "data-testid"))
	}
	if len(msgs) != 1 || msgs[0] != errID {
		t.Errorf("%s: field messages %v, want only %s", what, msgs, errID)
	}
	msg := byID(p.Doc, errID)
	if msg == nil {
		return
	}
	if !strings.Contains(text(msg), want) {
		t.Errorf("%s: beside the field: %q, want it to say %q", what, text(msg), want)
	}
	field := byID(p.Doc, container)
	if field == nil {
		field = byTestID(p.Doc, container)[0]
	}
	box := field
	for box != nil && !strings.Contains(attr(box, "class"), "field") {
		box = box.Parent
	}
	if !within(msg, box) {
		t.Errorf("%s: the message is not beside %s", what, container)
	}
	if field.Data == "input" && (attr(field, "aria-invalid") != "true" || !strings.Contains(attr(field, "aria-describedby"), errID)) {
		t.Errorf("%s: %s is not marked invalid and described by its message", what, container)
	}
}

func enclosingForm(n *html.Node) *html.Node {
	for ; n != nil; n = n.Parent {
		if n.Type == html.ElementNode && n.Data == "form" {
			return n
		}
	}
	return nil
}

// inputValue is the value of the input with this id.
func inputValue(p *page, id string) string {
	if n := byID(p.Doc, id); n != nil {
		return attr(n, "value")
	}
	return "<missing>"
}

// checkedTypes are the event types checked in the form.
func checkedTypes(p *page) []string {
	var out []string
	for _, n := range findAll(p.Doc, tag("input")) {
		if attr(n, "name") == "event_types" && hasAttr(n, "checked") {
			out = append(out, attr(n, "value"))
		}
	}
	return out
}

// TestAddEndpoint: the form offers the tenant's event types grouped by their first part; a valid form
// makes the subscription as typed and leads to its page (303) with the secret one Reveal away, not in the
// redirect.
func TestAddEndpoint(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("add endpoint")
	first := e.newSubscription(tn, "/add/first", "first", "invoice.paid", "customer.created")
	// A type the tenant received (a delivery's), though no subscription names it.
	e.publishTo(tn, first.ID, "invoice.created", map[string]any{"n": 1})
	c := e.client()
	c.login(tn.Email)

	home := c.get("/")
	if a := one(t, home.Doc, "add-endpoint"); attr(a, "href") != "/subscriptions/new" {
		t.Errorf("Add endpoint links %q", attr(a, "href"))
	}
	p := c.get("/subscriptions/new")
	if p.Status != http.StatusOK {
		t.Fatalf("the form: %d", p.Status)
	}
	groups := map[string][]string{}
	for _, g := range byTestID(p.Doc, "event-group") {
		for _, in := range byTestID(g, "event-type") { // the types; each group also offers its wildcard
			groups[attr(g, "data-group")] = append(groups[attr(g, "data-group")], attr(in, "value"))
		}
	}
	if got := groups["invoice"]; !slices.Equal(got, []string{"invoice.created", "invoice.paid"}) || !slices.Equal(groups["customer"], []string{"customer.created"}) {
		t.Errorf("event types offered %v, want invoice (created, paid) and customer (created)", groups)
	}
	if got := checkedTypes(p); !slices.Equal(got, []string{"*"}) {
		t.Errorf("a new form checks %v, want All events only", got)
	}
	if n := len(byTestID(p.Doc, "header-row")); n < 1 {
		t.Errorf("%d header rows", n)
	}

	nc := noRedirects(c)
	r := nc.post("/subscriptions", url.Values{
		"url": {e.recv.URL + "/add/second"}, "description": {"  Billing  "}, "event_types": {"invoice.paid", "invoice.created"},
		"header_name": {"X-Api-Key", "", "X-Tenant"}, "header_value": {"k_123", "", "acme"}, "rate_limit_per_second": {"25"},
	})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("create: %d %s", r.Status, r.text())
	}
	loc := r.Header.Get("Location")
	id, err := uuid.Parse(strings.TrimPrefix(loc, "/subscriptions/"))
	if err != nil {
		t.Fatalf("create leads to %q, want the new subscription's page", loc)
	}
	s, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != e.recv.URL+"/add/second" || s.Description != "Billing" || !slices.Equal(s.EventTypes, []string{"invoice.paid", "invoice.created"}) ||
		s.RateLimitPerSecond == nil || *s.RateLimitPerSecond != 25 {
		t.Errorf("stored %+v", s)
	}
	if h := e.storedHeaders(id); h["X-Api-Key"] != "k_123" || h["X-Tenant"] != "acme" || len(h) != 2 {
		t.Errorf("stored headers %v", h)
	}
	page := c.get(loc)
	if flash := text(one(t, page.Doc, "flash")); !strings.HasPrefix(flash, "Endpoint added.") {
		t.Errorf("flash %q", flash)
	}
	secrets, _ := e.srv.Subscriptions.Secrets(setupCtx(), tn.ID, id)
	if len(secrets) != 1 || strings.Contains(page.Body, secrets[0].Secret) || strings.Contains(r.Body+loc, secrets[0].Secret) {
		t.Errorf("the secret is shown without Reveal")
	}
	for _, id := range []string{"edit-endpoint", "delete-endpoint", "reveal-secret", "rotate-secret"} {
		one(t, page.Doc, id)
	}

	// "All events" (or nothing chosen) is every type.
	r = nc.post("/subscriptions", url.Values{"url": {e.recv.URL + "/add/all"}, "event_types": {"*", "invoice.paid"}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("create with All events: %d", r.Status)
	}
	all, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, uuid.MustParse(strings.TrimPrefix(r.Header.Get("Location"), "/subscriptions/")))
	if len(all.EventTypes) != 0 {
		t.Errorf("All events stored %v, want none (every type)", all.EventTypes)
	}
}

// Each bad field shows the form again, 400, with the message beside that field and nothing saved; what
// was typed comes back except header values.
func TestAddEndpointRefusesBadFields(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("add refused")
	c := e.client()
	c.login(tn.Email)
	good := func() url.Values {
		return url.Values{"url": {"https://example.com/hook"}, "description": {"refused"}, "rate_limit_per_second": {""},
			"header_name": {"X-Api-Key"}, "header_value": {"secret-typed-value"}}
	}
	cases := []struct {
		what, field, value       string
		container, errID, saying string
	}{
		{"an ftp URL", "url", "ftp://example.com/hook", "endpoint-url", "endpoint-url-error", "starting with https://"},
		{"no URL", "url", "", "endpoint-url", "endpoint-url-error", "Enter the URL"},
		{"a URL with user info", "url", "https://me:pw@example.com/", "endpoint-url", "endpoint-url-error", "custom header"},
		{"a header name with a space", "header_name", "X Api Key", "headers-field", "headers-error", "not a valid HTTP header name"},
		{"a header Hookline sets", "header_name", "Webhook-Signature", "headers-field", "headers-error", "cannot be replaced"},
		{"a hop-by-hop header", "header_name", "Content-Type", "headers-field", "headers-error", "cannot be replaced"},
		{"a header value with a line break", "header_value", "a\r\nX-Injected: 1", "headers-field", "headers-error", "control characters"},
		{"a rate of 0.5", "rate_limit_per_second", "0.5", "endpoint-rate", "endpoint-rate-error", "whole number from 1 to 10000"},
		{"a rate of 10001", "rate_limit_per_second", "10001", "endpoint-rate", "endpoint-rate-error", "1 to 10000"},
		{"a negative rate", "rate_limit_per_second", "-3", "endpoint-rate", "endpoint-rate-error", "1 to 10000"},
		{"a rate of 0", "rate_limit_per_second", "0", "endpoint-rate", "endpoint-rate-error", "1 to 10000, or leave it empty for no limit"},
		{"a long description", "description", strings.Repeat("d", 501), "endpoint-description", "endpoint-description-error", "longer than 500"},
		{"a bad event type", "event_types", "not a type", "event-types-choice", "event-types-error", `"not a type"`},
	}
	for _, tc := range cases {
		form := good()
		form.Set(tc.field, tc.value)
		p := c.post("/subscriptions", form)
		wantFieldError(t, tc.what, p, tc.container, tc.errID, tc.saying)
		if n := e.subscriptionCount(tn); n != 0 {
			t.Fatalf("%s: %d subscriptions saved", tc.what, n)
		}
		if tc.field != "url" && inputValue(p, "endpoint-url") != "https://example.com/hook" {
			t.Errorf("%s: the URL typed is not shown again: %q", tc.what, inputValue(p, "endpoint-url"))
		}
		if strings.Contains(p.Body, "secret-typed-value") {
			t.Errorf("%s: a header value typed is rendered back", tc.what)
		}
	}
	// A header value without a name, and a name twice: the form's own reading, beside the headers.
	form := good()
	form["header_name"] = []string{"X-A", "x-a"}
	form["header_value"] = []string{"1", "2"}
	wantFieldError(t, "a header twice", c.post("/subscriptions", form), "headers-field", "headers-error", "listed twice")
	form["header_name"] = []string{""}
	form["header_value"] = []string{"orphan"}
	wantFieldError(t, "a value without a name", c.post("/subscriptions", form), "headers-field", "headers-error", "without a name")
	if n := e.subscriptionCount(tn); n != 0 {
		t.Fatalf("%d subscriptions saved", n)
	}
}

// The SSRF guard's refusal (a server that does not deliver to private networks) is in a customer's
// words, beside the URL, not the API's operator hint.
func TestAddEndpointRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("add ssrf")
	// The same dashboard over a subscription service with the guard on: the test servers allow private
	// networks (their receivers are on 127.0.0.1), and a guarded server's workers would refuse those.
	guarded := subscriptions.NewService(e.srv.Pool, time.Now, false)
	h := web.New(web.Options{Sessions: e.srv.Sessions, LoginThrottle: e.srv.LoginThrottle, Activity: e.srv.Activity, Tenants: e.srv.Tenants, Subscriptions: guarded, Deliveries: e.srv.Deliveries,
		Replays: e.srv.Replays, Publisher: e.srv.Publisher})
	ts := httptest.NewServer(h.Routes())
	t.Cleanup(ts.Close)
	ge := *e
	ge.base = ts.URL
	c := ge.client()
	c.login(tn.Email)
	for _, u := range []string{"http://10.0.0.8/hook", "http://localhost:8080/hook", "http://[::1]/hook", "http://169.254.169.254/latest"} {
		p := c.post("/subscriptions", url.Values{"url": {u}})
		wantFieldError(t, u, p, "endpoint-url", "endpoint-url-error", "private network")
		if strings.Contains(p.text(), "HOOKLINE_") || strings.Contains(p.text(), "SSRF") {
			t.Errorf("%s: the refusal speaks of the server's internals: %q", u, text(byID(p.Doc, "endpoint-url-error")))
		}
	}
	if n := e.subscriptionCount(tn); n != 0 {
		t.Fatalf("%d subscriptions saved", n)
	}
}

// Past HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT the form says so (400) and saves nothing.
func TestAddEndpointLimit(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, func(c *config.Config) { c.MaxSubscriptions = 2 })
	tn := e.newTenant("add limit")
	e.newSubscription(tn, "/limit/1", "one")
	e.newSubscription(tn, "/limit/2", "two")
	c := e.client()
	c.login(tn.Email)
	p := c.post("/subscriptions", url.Values{"url": {e.recv.URL + "/limit/3"}})
	if p.Status != http.StatusBadRequest {
		t.Fatalf("the third: %d, want 400", p.Status)
	}
	if msg := text(one(t, p.Doc, "form-error")); !strings.Contains(msg, "already has 2 subscriptions, the most allowed") {
		t.Errorf("the form says %q", msg)
	}
	if n := e.subscriptionCount(tn); n != 2 {
		t.Errorf("%d subscriptions, want 2", n)
	}
}

// TestEditEndpoint: the form shows the settings but never a header value; an empty value keeps the
// stored one, a new one replaces it, a cleared name removes the header; a bad field changes nothing.
func TestEditEndpoint(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("edit endpoint")
	s := e.newSubscription(tn, "/edit/one", "Before", "order.paid")
	headers := map[string]string{"X-Api-Key": "stored-key-value", "X-Env": "prod", "X-Old": "old-value"}
	rate := 7
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, s.ID, subscriptions.Input{Headers: &headers, RateLimitPerSecond: &rate}); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	sub := c.get("/subscriptions/" + s.ID.String())
	if a := one(t, sub.Doc, "edit-endpoint"); attr(a, "href") != "/subscriptions/"+s.ID.String()+"/edit" {
		t.Errorf("Edit links %q", attr(a, "href"))
	}
	checkEditFormShowsSettings(t, c, s)

	// A bad field: 400 beside it, nothing changed.
	before := e.storedRow(s.ID)
	bad := url.Values{"url": {"not a url"}, "description": {"After"}, "header_name": {"X-Api-Key"}, "header_value": {""}}
	wantFieldError(t, "edit with a bad URL", c.post("/subscriptions/"+s.ID.String(), bad), "endpoint-url", "endpoint-url-error", "https://")
	bad = url.Values{"url": {s.URL}, "header_name": {"Host"}, "header_value": {"x"}}
	wantFieldError(t, "edit with a reserved header", c.post("/subscriptions/"+s.ID.String(), bad), "headers-field", "headers-error", "cannot be replaced")
	if after := e.storedRow(s.ID); after != before {
		t.Errorf("a refused edit changed the row:\n%s\n%s", before, after)
	}

	nc := noRedirects(c)
	r := nc.post("/subscriptions/"+s.ID.String(), url.Values{
		"url": {e.recv.URL + "/edit/two"}, "description": {"After"}, "event_types": {"order.paid", "order.refunded"},
		"header_name": {"X-Api-Key", "X-Env", "", "X-New"}, "header_value": {"", "staging", "", "new-value"},
		"rate_limit_per_second": {""},
	})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/subscriptions/"+s.ID.String() {
		t.Fatalf("save: %d to %q: %s", r.Status, r.Header.Get("Location"), r.text())
	}
	got, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, s.ID)
	if got.URL != e.recv.URL+"/edit/two" || got.Description != "After" || !slices.Equal(got.EventTypes, []string{"order.paid", "order.refunded"}) || got.RateLimitPerSecond != nil {
		t.Errorf("saved %+v", got)
	}
	h := e.storedHeaders(s.ID)
	if h["X-Api-Key"] != "stored-key-value" || h["X-Env"] != "staging" || h["X-New"] != "new-value" || len(h) != 3 {
		t.Errorf("stored headers %v, want the key kept, X-Env changed, X-New added, X-Old removed", h)
	}
	// The new settings are what the next delivery carries.
	hits := e.recv.count("/edit/two")
	e.publish(tn, "order.refunded", map[string]any{"n": 1})
	e.recv.waitHits(t, "/edit/two", hits+1)
	for _, hit := range e.recv.all() {
		if hit.Path == "/edit/two" && (hit.Headers.Get("X-Api-Key") != "stored-key-value" || hit.Headers.Get("X-New") != "new-value" || hit.Headers.Get("X-Old") != "") {
			t.Errorf("the delivery carried %v", hit.Headers)
		}
	}
}

// checkEditFormShowsSettings checks the edit form of s shows its settings, its headers by name and never
// their values.
func checkEditFormShowsSettings(t *testing.T, c *client, s subscriptions.Subscription) {
	t.Helper()
	p := c.get("/subscriptions/" + s.ID.String() + "/edit")
	if p.Status != http.StatusOK {
		t.Fatalf("edit form: %d", p.Status)
	}
	if inputValue(p, "endpoint-url") != s.URL || inputValue(p, "endpoint-description") != "Before" || inputValue(p, "endpoint-rate") != "7" {
		t.Errorf("the form shows url %q description %q rate %q", inputValue(p, "endpoint-url"), inputValue(p, "endpoint-description"), inputValue(p, "endpoint-rate"))
	}
	if got := checkedTypes(p); !slices.Equal(got, []string{"order.paid"}) {
		t.Errorf("checked %v", got)
	}
	var names []string
	for _, n := range byTestID(p.Doc, "header-name") {
		names = append(names, attr(n, "value"))
	}
	if !slices.Equal(names[:3], []string{"X-Api-Key", "X-Env", "X-Old"}) {
		t.Errorf("header rows %v", names)
	}
	for _, v := range []string{"stored-key-value", "prod", "old-value"} {
		if strings.Contains(p.Body, v) {
			t.Errorf("the form shows the stored header value %q", v)
		}
	}
	for _, n := range byTestID(p.Doc, "header-value") {
		if attr(n, "value") != "" {
			t.Errorf("a header value input holds %q", attr(n, "value"))
		}
	}
}

// TestDeleteEndpoint: the confirmation says how many deliveries wait and what becomes of them; deleting
// ends them as the API's DELETE does (dead, subscription_deleted) and leads to the list, without it.
func TestDeleteEndpoint(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("delete endpoint")
	s := e.newSubscription(tn, "/delete/one", "Doomed")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	var waiting []uuid.UUID
	for i := range 3 {
		waiting = append(waiting, e.publishTo(tn, s.ID, "order.paid", map[string]any{"n": i}))
	}
	c := e.client()
	c.login(tn.Email)
	sub := c.get("/subscriptions/" + s.ID.String())
	if a := one(t, sub.Doc, "delete-endpoint"); attr(a, "href") != "/subscriptions/"+s.ID.String()+"/delete" {
		t.Errorf("Delete links %q", attr(a, "href"))
	}
	p := c.get("/subscriptions/" + s.ID.String() + "/delete")
	if p.Status != http.StatusOK {
		t.Fatalf("confirmation: %d", p.Status)
	}
	if msg := text(one(t, p.Doc, "delete-waiting")); !strings.HasPrefix(msg, "3 deliveries are waiting") || !strings.Contains(msg, "dead (reason: subscription deleted)") {
		t.Errorf("the confirmation says %q", msg)
	}
	if s2, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, s.ID); s2.State != subscriptions.Paused {
		t.Errorf("the confirmation page changed the subscription: %s", s2.State)
	}
	r := noRedirects(c).post("/subscriptions/"+s.ID.String()+"/delete", nil)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("delete: %d to %q", r.Status, r.Header.Get("Location"))
	}
	home := c.get("/")
	if strings.Contains(home.Body, s.ID.String()) || len(byTestID(home.Doc, "subscription")) != 0 {
		t.Errorf("the deleted subscription is still listed")
	}
	if flash := text(one(t, home.Doc, "flash")); !strings.HasPrefix(flash, "Deleted Doomed.") {
		t.Errorf("flash %q", flash)
	}
	for _, id := range waiting {
		d, err := e.srv.Deliveries.Get(context.Background(), tn.ID, id)
		if err != nil || d.State != delivery.Failed || d.DeadReason == nil || *d.DeadReason != "subscription_deleted" {
			t.Errorf("waiting delivery after delete: %s %v %v, want failed subscription_deleted", d.State, d.DeadReason, err)
		}
	}
	if p := c.get("/subscriptions/" + s.ID.String() + "/delete"); p.Status != http.StatusNotFound {
		t.Errorf("the deleted subscription's delete page: %d, want 404", p.Status)
	}
	if p := c.post("/subscriptions/"+s.ID.String()+"/delete", nil); p.Status != http.StatusNotFound {
		t.Errorf("deleting it again: %d, want 404", p.Status)
	}
}

// secretsShown are the secrets a page shows in data-testid=secret.
func secretsShown(p *page) []string {
	var out []string
	for _, n := range byTestID(p.Doc, "secret") {
		out = append(out, text(n))
	}
	return out
}

// TestRevealAndRotateSecret: Reveal (a POST) answers the valid secrets in its own page, never by a
// redirect; Rotate shows the new secret alone and says until when the old one signs; there is no GET of
// either; the reveal and the rotation are in the activity log.
func TestRevealAndRotateSecret(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("secret")
	s := e.newSubscription(tn, "/secret/one", "Signed")
	c := e.client()
	c.login(tn.Email)
	first, _ := e.srv.Subscriptions.Secrets(setupCtx(), tn.ID, s.ID)

	nc := noRedirects(c)
	p := nc.post("/subscriptions/"+s.ID.String()+"/secret", nil)
	if p.Status != http.StatusOK || p.Header.Get("Location") != "" {
		t.Fatalf("reveal: %d (Location %q), want the 200 page", p.Status, p.Header.Get("Location"))
	}
	if got := secretsShown(p); !slices.Equal(got, []string{first[0].Secret}) {
		t.Errorf("reveal shows %v, want %v", got, first[0].Secret)
	}
	if cc := p.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	for _, path := range []string{"/subscriptions/" + s.ID.String() + "/secret", "/subscriptions/" + s.ID.String() + "/rotate-secret"} {
		if g := c.get(path); g.Status == http.StatusOK || strings.Contains(g.Body, first[0].Secret) {
			t.Errorf("GET %s: %d", path, g.Status)
		}
	}

	before := time.Now()
	p = nc.post("/subscriptions/"+s.ID.String()+"/rotate-secret", nil)
	if p.Status != http.StatusOK || p.Header.Get("Location") != "" {
		t.Fatalf("rotate: %d", p.Status)
	}
	now, _ := e.srv.Subscriptions.Secrets(setupCtx(), tn.ID, s.ID)
	if len(now) != 2 || now[1].Secret != first[0].Secret {
		t.Fatalf("after rotation the service has %+v", now)
	}
	if got := secretsShown(p); !slices.Equal(got, []string{now[0].Secret}) {
		t.Errorf("rotate shows %v, want only the new secret", got)
	}
	// The activity log has the one reveal and the rotation by this user (the test's own reads through the
	// service above are recorded as the system's).
	for action, want := range map[string]int{"secret.revealed": 1, "secret.rotated": 1} {
		var n int
		var who string
		if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*), coalesce(max(actor_email), '') FROM activity WHERE tenant_id = $1 AND action = $2 AND actor_kind <> 'system'`,
			tn.ID, action).Scan(&n, &who); err != nil {
			t.Fatal(err)
		}
		if n != want || who != tn.Email {
			t.Errorf("activity %s: %d entries by %q, want %d by %s", action, n, who, want, tn.Email)
		}
	}
	one(t, p.Doc, "rotated")
	until := text(one(t, p.Doc, "old-until-at"))
	at, err := time.Parse("2006-01-02 15:04:05 UTC", until)
	if err != nil || at.Before(before.Add(24*time.Hour-time.Minute)) || at.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("the old secret signs until %q, want in 24 h", until)
	}
	if !strings.Contains(text(one(t, p.Doc, "old-until")), "keeps signing") {
		t.Errorf("old-until says %q", text(one(t, p.Doc, "old-until")))
	}
	// Nothing of either secret is left in the session for a later page.
	later := c.get("/subscriptions/" + s.ID.String())
	for _, sec := range now {
		if strings.Contains(later.Body, sec.Secret) {
			t.Errorf("a later page shows a secret")
		}
	}
}

// A view-only portal session sees the forms, the confirmation and the secret section without a button
// that changes anything, and every POST of self-service is refused (403) with nothing changed.
func TestEndpointPagesReadOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("endpoint view")
	s := e.newSubscription(tn, "/view/one", "Looked at", "order.paid")
	view := e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleView}))
	base := "/subscriptions/" + s.ID.String()
	if home := view.get("/"); len(byTestID(home.Doc, "add-endpoint")) != 0 {
		t.Errorf("a view session is offered Add endpoint")
	}
	sub := view.get(base)
	for _, id := range []string{"edit-endpoint", "delete-endpoint", "reveal-secret", "rotate-secret"} {
		if len(byTestID(sub.Doc, id)) != 0 {
			t.Errorf("a view session's subscription page shows %s", id)
		}
	}
	one(t, sub.Doc, "secret-card")
	for _, path := range []string{"/subscriptions/new", base + "/edit", base + "/delete"} {
		p := view.get(path)
		if p.Status != http.StatusOK {
			t.Errorf("GET %s as a view session: %d", path, p.Status)
			continue
		}
		for _, b := range findAll(p.Doc, tag("button")) {
			if form := enclosingForm(b); attr(b, "type") == "submit" && (form == nil || (attr(form, "method") == "post" && attr(form, "action") != "/logout")) {
				t.Errorf("GET %s as a view session shows the button %q", path, text(b))
			}
		}
	}
	before := e.storedRow(s.ID)
	for path, form := range map[string]url.Values{
		"/subscriptions":        {"url": {e.recv.URL + "/view/new"}},
		base:                    {"url": {e.recv.URL + "/view/changed"}},
		base + "/delete":        nil,
		base + "/secret":        nil,
		base + "/rotate-secret": nil,
	} {
		p := view.post(path, form)
		if p.Status != http.StatusForbidden {
			t.Errorf("POST %s as a view session: %d, want 403", path, p.Status)
		}
		if secrets, _ := e.srv.Subscriptions.Secrets(setupCtx(), tn.ID, s.ID); strings.Contains(p.Body, secrets[0].Secret) {
			t.Errorf("POST %s as a view session shows the secret", path)
		}
	}
	if after := e.storedRow(s.ID); after != before || e.subscriptionCount(tn) != 1 {
		t.Errorf("a view session changed something")
	}
	if secrets, _ := e.srv.Subscriptions.Secrets(setupCtx(), tn.ID, s.ID); len(secrets) != 1 {
		t.Errorf("a view session rotated the secret")
	}
}

// The form offers the event catalogue's types in their groups with their descriptions (deprecated ones only
// where already chosen), and a type the tenant receives that the catalogue also lists appears once.
func TestAddEndpointOffersTheCatalogue(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	ctx := activity.System(context.Background(), "test setup")
	desc, group, dep := "A form's order was placed.", "Form orders", true
	for _, in := range []catalogue.Input{
		{Name: "cform.placed", Description: &desc, Group: &group},
		{Name: "cform.legacy", Group: &group, Deprecated: &dep},
	} {
		if _, err := e.srv.Catalogue.Create(ctx, in); err != nil && !fault.Is(err, fault.InvalidState) {
			t.Fatal(err)
		}
	}
	tn := e.newTenant("catalogue form")
	sub := e.newSubscription(tn, "/add/cform", "cform", "cform.placed")
	c := e.client()
	c.login(tn.Email)
	p := c.get("/subscriptions/new")
	var offered []string
	for _, g := range byTestID(p.Doc, "event-group") {
		for _, in := range byTestID(g, "event-type") {
			if v := attr(in, "value"); strings.HasPrefix(v, "cform.") {
				offered = append(offered, attr(g, "data-group")+"/"+v)
			}
		}
	}
	if !slices.Equal(offered, []string{"Form orders/cform.placed"}) {
		t.Errorf("offered %v, want cform.placed once, in its catalogue group (the deprecated type not offered)", offered)
	}
	if !strings.Contains(p.text(), desc) {
		t.Error("the catalogue's description is not shown")
	}
	// Where the deprecated type is already chosen, the edit form keeps offering it.
	if _, err := e.srv.Subscriptions.Update(ctx, tn.ID, sub.ID, subscriptions.Input{EventTypes: &[]string{"cform.legacy"}}); err != nil {
		t.Fatal(err)
	}
	if got := checkedTypes(c.get("/subscriptions/" + sub.ID.String() + "/edit")); !slices.Equal(got, []string{"cform.legacy"}) {
		t.Errorf("the edit form checks %v, want the deprecated type it has", got)
	}
}
