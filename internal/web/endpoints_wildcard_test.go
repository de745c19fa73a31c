package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

// wildcardCatalogue registers two types of one kind under a catalogue group named apart from their
// names' first part (as a platform's "Invoices" groups invoice.*), unique to the test: the catalogue is
// shared by every test of the package. It returns the first part and the group.
func (e *env) wildcardCatalogue(label string) (prefix, group string) {
	e.t.Helper()
	m := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	prefix, group = "wc"+label+m, "Invoices "+label+m
	for _, name := range []string{prefix + ".created", prefix + ".paid"} {
		if _, err := e.srv.Catalogue.Create(context.Background(), catalogue.Input{Name: name, Group: &group}); err != nil {
			e.t.Fatalf("register %s: %v", name, err)
		}
	}
	return prefix, group
}

// eventGroup is the form's group of event types named name, or nil.
func eventGroup(p *page, name string) *html.Node {
	for _, g := range byTestID(p.Doc, "event-group") {
		if attr(g, "data-group") == name {
			return g
		}
	}
	return nil
}

// eventBox is the form's event type checkbox of value v, or nil.
func eventBox(p *page, v string) *html.Node {
	for _, n := range findAll(p.Doc, tag("input")) {
		if attr(n, "name") == "event_types" && attr(n, "value") == v {
			return n
		}
	}
	return nil
}

// coveredNote is what the box's row says about a wildcard covering it ("" when that is hidden).
func coveredNote(box *html.Node) string {
	for _, n := range byTestID(box.Parent, "covered-by") {
		if !hasAttr(n, "hidden") {
			return text(n)
		}
	}
	return ""
}

// Item 17 (issue 28): a subscription to invoice.* is shown as "every invoice event" in the invoice
// types' own group, with those types checked as covered by it, never as a lowercase group of its own
// beside unchecked types; and a customer can choose a whole kind of events, saved as its wildcard.
func TestEndpointFormWildcards(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	prefix, group := e.wildcardCatalogue("form")
	pattern := prefix + ".*"
	tn := e.newTenant("wildcard form")
	s := e.newSubscription(tn, "/wild/one", "wild", pattern)
	c := e.client()
	c.login(tn.Email)

	p := c.get("/subscriptions/" + s.ID.String() + "/edit")
	if g := eventGroup(p, prefix); g != nil {
		t.Errorf("the wildcard is shown as a group of its own, %q: %q", prefix, text(g))
	}
	g := eventGroup(p, group)
	if g == nil {
		t.Fatalf("no group %q in the form", group)
	}
	wild := byTestID(g, "event-wildcard")
	if len(wild) != 1 || attr(wild[0], "value") != pattern || !hasAttr(wild[0], "checked") || hasAttr(wild[0], "disabled") {
		t.Fatalf("group %q offers wildcards %d, want %s checked", group, len(wild), pattern)
	}
	if label := text(findAll(g, func(n *html.Node) bool { return n.Data == "label" && attr(n, "for") == attr(wild[0], "id") })[0]); label != "Every "+prefix+" event" {
		t.Errorf("the wildcard is labelled %q", label)
	}
	for _, name := range []string{prefix + ".created", prefix + ".paid"} {
		box := eventBox(p, name)
		if box == nil || !within(box, g) {
			t.Fatalf("%s is not offered in %q", name, group)
		}
		if !hasAttr(box, "checked") || !hasAttr(box, "disabled") || coveredNote(box) != "covered by "+pattern {
			t.Errorf("%s: checked %v, disabled %v, note %q; want it shown as covered by %s", name,
				hasAttr(box, "checked"), hasAttr(box, "disabled"), coveredNote(box), pattern)
		}
	}

	// On a new endpoint's form nothing is covered; ticking the group's wildcard saves it.
	p = c.get("/subscriptions/new")
	if box := eventBox(p, prefix+".paid"); box == nil || hasAttr(box, "checked") || hasAttr(box, "disabled") || coveredNote(box) != "" {
		t.Errorf("a new form shows %s covered or checked", prefix+".paid")
	}
	if w := eventBox(p, pattern); w == nil || attr(w, "data-testid") != "event-wildcard" || hasAttr(w, "checked") || !within(w, eventGroup(p, group)) {
		t.Fatalf("a new form does not offer %s in %q", pattern, group)
	}
	nc := noRedirects(c)
	r := nc.post("/subscriptions", url.Values{"url": {e.recv.URL + "/wild/two"}, "event_types": {pattern}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("add with the wildcard: %s %q", r, r.text())
	}
	added, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, uuid.MustParse(strings.TrimPrefix(r.Header.Get("Location"), "/subscriptions/")))
	if err != nil || !slices.Equal(added.EventTypes, []string{pattern}) {
		t.Fatalf("saved %v (%v), want [%s]", added.EventTypes, err, pattern)
	}
	// Without script a covered type may be posted with its wildcard: it is saved once, as the wildcard.
	r = nc.post("/subscriptions/"+s.ID.String(), url.Values{"url": {s.URL}, "event_types": {prefix + ".paid", pattern, "other.kind"}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("save: %s %q", r, r.text())
	}
	if got, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, s.ID); !slices.Equal(got.EventTypes, []string{pattern, "other.kind"}) {
		t.Errorf("saved %v, want [%s other.kind]", got.EventTypes, pattern)
	}

	// A narrower wildcard that covers no known type sits beside its kind's wildcard, which is not checked
	// for it, and covers nothing it does not.
	narrow := prefix + ".refund.*"
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, s.ID, subscriptions.Input{EventTypes: &[]string{narrow}}); err != nil {
		t.Fatal(err)
	}
	p = c.get("/subscriptions/" + s.ID.String() + "/edit")
	if w := eventBox(p, narrow); w == nil || !hasAttr(w, "checked") || !within(w, eventGroup(p, group)) {
		t.Errorf("%s is not shown checked in %q", narrow, group)
	}
	if w := eventBox(p, pattern); w == nil || hasAttr(w, "checked") {
		t.Errorf("%s is checked though only %s is chosen", pattern, narrow)
	}
	if box := eventBox(p, prefix+".paid"); box == nil || hasAttr(box, "checked") || coveredNote(box) != "" {
		t.Errorf("%s is shown covered by %s, which does not cover it", prefix+".paid", narrow)
	}
}

// Item 18 (issue 28): someone who may only look sees the endpoint's settings as such: titled "Endpoint
// settings", marked view only in the header, every field disabled, none of the form's editing
// instructions, and plain words instead of "a session that may make changes".
func TestEndpointSettingsViewOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("settings view")
	s := e.newSubscription(tn, "/view/settings", "Billing hook", "order.paid")
	headers := map[string]string{"X-Api-Key": "stored-key-value"}
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, s.ID, subscriptions.Input{Headers: &headers}); err != nil {
		t.Fatal(err)
	}
	view := e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleView}))
	base := "/subscriptions/" + s.ID.String()

	if a := one(t, view.get(base).Doc, "endpoint-settings"); attr(a, "href") != base+"/edit" {
		t.Errorf("Settings links %q", attr(a, "href"))
	}
	p := view.get(base + "/edit")
	if p.Status != http.StatusOK {
		t.Fatalf("settings: %s", p)
	}
	if h1 := text(findAll(p.Doc, tag("h1"))[0]); h1 != "Endpoint settings" {
		t.Errorf("heading %q, want Endpoint settings", h1)
	}
	if title := text(findAll(p.Doc, tag("title"))[0]); title != "Settings of Billing hook · Hookline" {
		t.Errorf("title %q", title)
	}
	if badge := one(t, p.Doc, "view-only"); text(badge) != "View only" || !within(badge, findAll(p.Doc, tag("header"))[0]) {
		t.Errorf("view-only mark %q, not in the header", text(badge))
	}
	if got := text(one(t, p.Doc, "read-only")); got != "You can view this endpoint but not change it. Ask someone with edit access." {
		t.Errorf("read-only notice %q", got)
	}
	for _, in := range findAll(one(t, p.Doc, "endpoint-form"), tag("input")) {
		if !hasAttr(in, "disabled") && findAll(p.Doc, func(n *html.Node) bool { return n.Data == "fieldset" && hasAttr(n, "disabled") && within(in, n) }) == nil {
			t.Errorf("input %s is not disabled", attr(in, "name"))
		}
	}
	body := p.text()
	for _, instruction := range []string{"Choose the event types", "Leave a saved header's value empty", "clear its name",
		"unchanged if left empty", "1 to 10000", "session that may make changes", "Edit endpoint", "Save changes"} {
		if strings.Contains(body, instruction) || strings.Contains(p.Body, instruction) {
			t.Errorf("the view-only settings say %q", instruction)
		}
	}
	if n := len(byTestID(p.Doc, "header-row")); n != 1 {
		t.Errorf("%d header rows, want only the stored one (no blank rows to add headers)", n)
	}
	if got := text(one(t, view.get(base).Doc, "secret-read-only")); got != "Only someone with edit access can show or rotate the signing secret." {
		t.Errorf("the subscription page's secret card says %q", got)
	}

	// A dead delivery tells the viewer who can resend it, not to Resend (a button they do not have).
	dead := e.publishTo(tn, e.newSubscription(tn, "/bad/view-settings", "failing").ID, "order.paid", map[string]any{"n": 1})
	e.waitState(tn, dead, delivery.Failed)
	d := view.get("/deliveries/" + dead.String())
	if got := text(one(t, d.Doc, "summary-note")); got != "Nothing more is tried. Once the endpoint is fixed, someone with edit access can resend it." {
		t.Errorf("a view-only session's dead delivery says %q", got)
	}
	if len(byTestID(d.Doc, "view-only")) != 1 {
		t.Error("the delivery page has no view-only mark")
	}

	// Someone who may change things keeps the form as it was, without the mark.
	c := e.client()
	c.login(tn.Email)
	p = c.get(base + "/edit")
	if h1 := text(findAll(p.Doc, tag("h1"))[0]); h1 != "Edit endpoint" || len(byTestID(p.Doc, "view-only")) != 0 {
		t.Errorf("an editor's form: heading %q, view-only marks %d", h1, len(byTestID(p.Doc, "view-only")))
	}
}
