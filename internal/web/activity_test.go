package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/portal"
	"golang.org/x/net/html"
)

// activityRows are the entries a page lists: action, who and object, in order.
func activityRows(t *testing.T, p *page) [][3]string {
	t.Helper()
	var out [][3]string
	for _, row := range byTestID(p.Doc, "activity-row") {
		out = append(out, [3]string{attr(row, "data-action"), text(one(t, row, "activity-who")), text(one(t, row, "activity-object"))})
	}
	return out
}

// The dashboard's changes are recorded with who made them — a password user by email, a portal user by
// the name the platform's link gave, the test's own setup through the services as the system — and
// /activity lists them newest first with the filter; operators see a tenant's from its admin page; another
// tenant's entries never show.
func TestActivityPages(t *testing.T) {
	e := setup(t, httpOnly, withAdmin)
	tn, other := e.newTenant("activity pages"), e.newTenant("activity other")
	sub := e.newSubscription(tn, "/good/activity", "Orders")
	otherSub := e.newSubscription(other, "/good/activity-other", "Other")

	c := e.client()
	c.login(tn.Email)
	path := "/subscriptions/" + sub.ID.String()
	if p := c.post(path+"/pause", nil); p.Status != http.StatusOK {
		t.Fatalf("pause: %s", p)
	}
	c.post(path+"/resume", nil)
	c.post(path+"/test", nil)

	pc := e.portalClient(e.portalLink(tn, portal.LinkRequest{User: portal.User{ID: "cust-42", Email: "grace@example.com", Name: "Grace Hopper"}}))
	pc.post(path+"/pause", nil)

	oc := e.client()
	oc.login(other.Email)
	oc.post("/subscriptions/"+otherSub.ID.String()+"/pause", nil)

	p := c.get("/activity")
	if p.Status != http.StatusOK {
		t.Fatalf("/activity: %s", p)
	}
	got := activityRows(t, p)
	want := [][3]string{
		{"subscription.paused", "Grace Hopper", "Orders"},
		{"portal_link.created", "test setup", ""},
		{"test_event.sent", tn.Email, ""},
		{"subscription.resumed", tn.Email, "Orders"},
		{"subscription.paused", tn.Email, "Orders"},
		{"subscription.created", "test setup", "Orders"},
		{"user.created", "test setup", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %d (the other tenant's pause must not show)", got, len(want))
	}
	for i, w := range want {
		if got[i][0] != w[0] || got[i][1] != w[1] || (w[2] != "" && got[i][2] != w[2]) {
			t.Errorf("row %d = %v, want %v", i, got[i], w)
		}
	}
	// The object links to its page; the test event's to the delivery it made.
	rows := byTestID(p.Doc, "activity-row")
	if href := attr(one(t, rows[0], "activity-object"), "href"); href != path {
		t.Errorf("object link %q, want %q", href, path)
	}
	if href := attr(one(t, rows[2], "activity-object"), "href"); !strings.HasPrefix(href, "/deliveries/") {
		t.Errorf("test event's object link %q, want its delivery", href)
	}
	if d := text(one(t, rows[2], "activity-details")); d != "hookline.test" {
		t.Errorf("test event details %q", d)
	}
	for _, row := range rows {
		if text(one(t, row, "activity-who")) == "test setup" {
			continue // made outside any request: there is no correlation id to show
		}
		if text(one(t, row, "activity-correlation")) == "" {
			t.Errorf("row %s has no correlation id", attr(row, "data-action"))
		}
	}

	checkActivityFilter(t, c)

	// The portal user sees the same log in their session.
	if n := len(activityRows(t, pc.get("/activity"))); n != len(want) {
		t.Errorf("portal session lists %d rows", n)
	}
	// Customers cannot open the operator's page of any tenant's log.
	if p := c.get("/admin/tenants/" + tn.ID.String() + "/activity"); p.Status != http.StatusNotFound {
		t.Errorf("customer on the admin activity page: %s", p)
	}

	checkOperatorSeesActivity(t, e, tn, path, len(want))
}

// checkActivityFilter checks the activity page's filter: by action, with its choice kept; a bad action is
// 400; a time with nothing after it says so.
func checkActivityFilter(t *testing.T, c *client) {
	t.Helper()
	// The filter.
	f := c.get("/activity?" + url.Values{"action": {"subscription.paused"}}.Encode())
	if n := len(activityRows(t, f)); n != 2 {
		t.Errorf("action filter: %d rows, want 2", n)
	}
	if sel := findAll(f.Doc, func(n *html.Node) bool {
		return n.Type == html.ElementNode && n.Data == "option" && attr(n, "value") == "subscription.paused" && hasAttr(n, "selected")
	}); len(sel) != 1 {
		t.Error("the chosen action is not selected in the form")
	}
	one(t, f.Doc, "clear-filter")
	if bad := c.get("/activity?action=nope"); bad.Status != http.StatusBadRequest {
		t.Errorf("unknown action: %s, want 400", bad)
	}
	if none := c.get("/activity?since=2999-01-01T00:00"); len(activityRows(t, none)) != 0 || text(one(t, none.Doc, "no-activity")) != "Nothing matches this filter." {
		t.Errorf("a filter matching nothing: %v", activityRows(t, none))
	}
}

// checkOperatorSeesActivity checks the operator sees tn's log (entries long) on its page and in whole, and
// that the operator's own change (on path) is recorded as the operator's.
func checkOperatorSeesActivity(t *testing.T, e *env, tn tenant, path string, entries int) {
	t.Helper()
	// The operator: the tenant page's recent activity and the whole log.
	ac := e.client()
	ac.login(adminEmail)
	tp := ac.get("/admin/tenants/" + tn.ID.String())
	recent := one(t, tp.Doc, "tenant-recent-activity")
	if n := len(byTestID(recent, "activity-row")); n != entries {
		t.Errorf("tenant page lists %d recent entries, want %d", n, entries)
	}
	all := ac.get(attr(one(t, recent, "tenant-activity-all"), "href"))
	if all.Status != http.StatusOK || len(activityRows(t, all)) != entries {
		t.Errorf("operator's activity page: %s with %d rows", all, len(activityRows(t, all)))
	}
	// The operator's own change is recorded as the operator's.
	ac.post(path+"/resume", nil)
	if rows := activityRows(t, ac.get("/admin/tenants/"+tn.ID.String()+"/activity")); rows[0][0] != "subscription.resumed" || rows[0][1] != adminEmail {
		t.Errorf("operator's resume: %v", rows[0])
	}
}
