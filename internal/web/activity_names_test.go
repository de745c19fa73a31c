package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

// The activity log says what a change changed in the words of the form (only what was edited, though the
// form sends every field), names the endpoint as its page does (its description, linking to it; marked
// deleted once gone, without a link), and names people as the platform's link did (the name, never
// "portal:<id>"), here and on the recover page of a recover they started, and of a preview.
func TestActivityNamesEndpointsAndPeople(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("activity names")
	u, desc, types, rate := e.recv.URL+"/bad/names", "Orders", []string{"order.paid"}, 5
	sub, _, err := e.srv.Subscriptions.Create(byOperator(), tn.ID, subscriptions.Input{URL: &u, Description: &desc, EventTypes: &types,
		Headers: &map[string]string{"X-Api-Key": "key-1"}, RateLimitPerSecond: &rate})
	if err != nil {
		t.Fatal(err)
	}
	e.deadOf(tn, sub.ID, "order.paid", 1)
	path := "/subscriptions/" + sub.ID.String()
	pc := e.portalClient(e.portalLink(tn, portal.LinkRequest{User: portal.User{ID: "u_42", Name: "Grace Hopper"}}))

	// The form as the browser sends it: every field, the header's value left empty (kept).
	if p := pc.post(path, url.Values{"url": {sub.URL}, "description": {"Orders v2"}, "event_types": {"order.paid"},
		"header_name": {"X-Api-Key"}, "header_value": {""}, "rate_limit_per_second": {"5"}}); p.Status != http.StatusOK || p.URL.Path != path {
		t.Fatalf("save: %s", p)
	}
	pc.post(path, url.Values{"url": {sub.URL}, "description": {"Orders v2"}, "event_types": {"order.paid"},
		"header_name": {"X-Api-Key", "X-Region"}, "header_value": {"key-2", "eu"}, "rate_limit_per_second": {""}})

	// A preview and a recover, by the same person.
	hour := formTimeOf(time.Now().Add(-time.Hour))
	if p := pc.post(path+"/recover", url.Values{"action": {"preview"}, "since": {hour}}); p.Status != http.StatusOK {
		t.Fatalf("preview: %s", p)
	}
	if p := pc.post(path+"/recover", url.Values{"action": {"confirm"}, "since": {hour}}); p.URL.Path != path {
		t.Fatalf("recover: %s", p)
	}

	checkPersonNamed(t, pc, path)

	checkRecoversStartedBy(t, pc, path)

	// Deleted: named still, marked, no link to a page that is gone.
	if err := e.srv.Subscriptions.Delete(byOperator(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	for _, row := range byTestID(pc.get("/activity").Doc, "activity-row") {
		if attr(row, "data-action") != "subscription.changed" {
			continue
		}
		if obj := one(t, row, "activity-object"); text(obj) != "Orders v2 (deleted)" || attr(obj, "href") != "" {
			t.Errorf("a deleted endpoint's entry: %q → %q", text(obj), attr(obj, "href"))
		}
	}
}

// checkRecoversStartedBy checks the pages of the recover and of the preview on path's page say the person
// started them, by name, never by the audit identifier.
func checkRecoversStartedBy(t *testing.T, pc *client, path string) {
	t.Helper()
	// The recover's page and the preview's: started by the person, by name.
	sp := pc.get(path)
	var links []string
	for _, id := range []string{"recover-recent", "recover-previews"} {
		for _, a := range byTestID(one(t, sp.Doc, id), "replay-link") {
			links = append(links, attr(a, "href"))
		}
	}
	if len(links) != 2 {
		t.Fatalf("recover links %v, want the recover and the preview", links)
	}
	for _, l := range links {
		rp := pc.get(l)
		if got := text(one(t, rp.Doc, "started-by")); got != "Started by Grace Hopper" || strings.Contains(rp.Body, "portal:u_42") {
			t.Errorf("%s: %q", l, got)
		}
	}
}

// checkPersonNamed checks the activity page names the person of a portal session in every entry of theirs
// (the two changes and the recover), says what each change changed and names the endpoint, linked.
func checkPersonNamed(t *testing.T, pc *client, path string) {
	t.Helper()
	p := pc.get("/activity")
	var rows []*html.Node // the person's: the operator's creation is not
	for _, row := range byTestID(p.Doc, "activity-row") {
		if a := attr(row, "data-action"); a == "subscription.changed" || a == "recover.started" {
			rows = append(rows, row)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("%d entries, want the two changes and the recover: %v", len(rows), activityRows(t, p))
	}
	for _, row := range rows {
		if who := text(one(t, row, "activity-who")); who != "Grace Hopper" {
			t.Errorf("%s: who %q, want the person's name", attr(row, "data-action"), who)
		}
	}
	for i, want := range []string{"changed: custom headers (X-Region added; X-Api-Key new value), rate limit", "changed: description"} {
		row := rows[i+1]
		if attr(row, "data-action") != "subscription.changed" {
			t.Fatalf("row %d is %s", i+1, attr(row, "data-action"))
		}
		if got := text(one(t, row, "activity-details")); got != want {
			t.Errorf("details %q, want %q", got, want)
		}
		if obj := one(t, row, "activity-object"); text(obj) != "Orders v2" || attr(obj, "href") != path {
			t.Errorf("object %q → %q, want the endpoint's name linking to its page", text(obj), attr(obj, "href"))
		}
	}
	if strings.Contains(p.Body, "portal:u_42") || strings.Contains(p.Body, "key-2") {
		t.Error("the activity page shows the audit identifier or a header value")
	}
}

// The activity log names every object as pages do, not by an id fragment ("API token …77e33783",
// "recover …8b63ab3a"): a token by its name (marked revoked once it is), a user by email (marked removed
// once gone), a portal link by whom it let in, a recover by the endpoint it recovered, linking its page.
func TestActivityNamesTokensUsersLinksAndRecovers(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("activity objects")
	sub := e.newSubscription(tn, "/bad/activity-objects", "Orders")
	e.deadOf(tn, sub.ID, "order.paid", 1)
	if _, err := e.srv.Tenants.CreateToken(byOperator(), tn.ID, "platform backend", []string{"portal:write"}); err != nil {
		t.Fatal(err)
	}
	old, err := e.srv.Tenants.CreateToken(byOperator(), tn.ID, "old key", []string{"portal:write"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Tenants.RevokeToken(byOperator(), tn.ID, old.ID); err != nil {
		t.Fatal(err)
	}
	gone, err := e.srv.Tenants.CreateUser(byOperator(), tn.ID, "gone@example.com", password)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Tenants.RemoveUser(byOperator(), tn.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	e.portalLink(tn, portal.LinkRequest{User: portal.User{ID: "u_7", Name: "Dana Scully"}})
	c := e.client()
	c.login(tn.Email)
	path := "/subscriptions/" + sub.ID.String()
	if p := c.post(path+"/recover", url.Values{"action": {"confirm"}, "since": {formTimeOf(time.Now().Add(-time.Hour))}}); p.URL.Path != path {
		t.Fatalf("recover: %s", p)
	}

	type object struct{ name, href string }
	got := map[string][]object{}
	for _, row := range byTestID(c.get("/activity").Doc, "activity-row") {
		obj := one(t, row, "activity-object")
		got[attr(row, "data-action")] = append(got[attr(row, "data-action")], object{text(obj), attr(obj, "href")})
	}
	want := map[string][]object{
		"token.created":       {{"API token old key (revoked)", ""}, {"API token platform backend", ""}},
		"token.revoked":       {{"API token old key (revoked)", ""}},
		"user.created":        {{"gone@example.com (removed)", ""}, {tn.Email, ""}},
		"user.removed":        {{"gone@example.com (removed)", ""}},
		"portal_link.created": {{"portal link for Dana Scully", ""}},
	}
	for action, w := range want {
		if !slices.Equal(got[action], w) {
			t.Errorf("%s names %q, want %q", action, got[action], w)
		}
	}
	rec := got["recover.started"]
	if len(rec) != 1 || rec[0].name != "recover of Orders" || !strings.HasPrefix(rec[0].href, "/recovers/") {
		t.Fatalf("recover.started names %q, want the recover of Orders linking its page", rec)
	}
	if p := c.get(rec[0].href); p.Status != http.StatusOK {
		t.Errorf("the recover's link: %s", p)
	}
}
