package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

// eventOf is a delivery's event id.
func (e *env) eventOf(tn tenant, deliveryID uuid.UUID) uuid.UUID {
	e.t.Helper()
	d, err := e.srv.Deliveries.Get(context.Background(), tn.ID, deliveryID)
	if err != nil {
		e.t.Fatal(err)
	}
	return d.EventID
}

// rowIDs are the delivery ids of a list's rows.
func rowIDs(p *page) []string {
	var out []string
	for _, r := range byTestID(p.Doc, "delivery-row") {
		out = append(out, attr(r, "data-id"))
	}
	return out
}

// tabCounts are the state tabs' counts by state, and the current tab.
func tabCounts(t *testing.T, p *page) (map[string]string, string) {
	t.Helper()
	counts, current := map[string]string{}, ""
	for _, tab := range byTestID(p.Doc, "state-tab") {
		c := ""
		if n := byTestID(tab, "tab-count"); len(n) == 1 {
			c = text(n[0])
		}
		counts[attr(tab, "data-state")] = c
		if hasAttr(tab, "aria-current") {
			current = attr(tab, "data-state")
		}
	}
	return counts, current
}

// TestFindEventAndDelivery: the header's search leads an event id to the event's page, which lists its
// deliveries to every subscription with state, attempts and last status; a delivery id to its page;
// anything else stays on the search page with a message (400 for what is not an id, 404 for an unknown id).
func TestFindEventAndDelivery(t *testing.T) {
	e := setup(t, withBackground, nil)
	s := seed(e, "finder", 1) // one order.paid event: delivered to the good endpoint, failed at the bad one
	c := e.client()
	home := c.login(s.tn.Email)
	if len(byTestID(home.Doc, "search-form")) != 1 || len(byTestID(home.Doc, "nav-deliveries")) != 1 {
		t.Fatal("the header has no search box or no Deliveries link")
	}
	ev := e.eventOf(s.tn, s.dead[0])
	if e.eventOf(s.tn, s.delivered[0]) != ev {
		t.Fatal("seed: the two deliveries are not of one event")
	}

	for _, q := range []string{ev.String(), "  " + ev.String() + " ", `"` + ev.String() + `"`, strings.ToUpper(ev.String())} {
		p := c.get("/find?q=" + url.QueryEscape(q))
		if p.Status != http.StatusOK || p.URL.Path != "/events/"+ev.String() {
			t.Fatalf("search %q: %s", q, p)
		}
	}
	p := c.get("/find?q=" + ev.String())
	if got := text(one(t, p.Doc, "event-id")); got != ev.String() {
		t.Errorf("event page shows id %q", got)
	}
	rows := byTestID(p.Doc, "delivery-row")
	if len(rows) != 2 {
		t.Fatalf("event page lists %d deliveries, want 2", len(rows))
	}
	states := map[string]string{}
	for _, r := range rows {
		states[attr(r, "data-id")] = attr(r, "data-state")
		if attr(r, "data-event") != ev.String() {
			t.Errorf("row of event %s", attr(r, "data-event"))
		}
	}
	if cp := findAll(p.Doc, func(n *html.Node) bool { return attr(n, "data-copy") != "" }); len(cp) != 1 ||
		attr(cp[0], "data-copy") != ev.String() || !strings.Contains(text(cp[0]), "Copy") || attr(cp[0], "type") != "button" {
		t.Errorf("event page's copy buttons: %d", len(cp))
	}
	// The Deliveries page's rows show the event id, linked to the event, with a copy button.
	for _, r := range byTestID(c.get("/deliveries").Doc, "delivery-row") {
		id := attr(r, "data-event")
		cp := findAll(r, func(n *html.Node) bool { return attr(n, "data-copy") != "" })
		if len(cp) != 1 || attr(cp[0], "data-copy") != id || attr(one(t, r, "event-link"), "href") != "/events/"+id {
			t.Errorf("row of event %s: %d copy buttons", id, len(cp))
		}
	}
	if states[s.delivered[0].String()] != "delivered" || states[s.dead[0].String()] != "failed" {
		t.Errorf("event page states %v", states)
	}
	body := p.text()
	for _, want := range []string{"finder good endpoint", "finder bad endpoint", "order.paid", `"order": 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("event page lacks %q", want)
		}
	}

	// A delivery id opens the delivery.
	p = c.get("/find?q=" + s.dead[0].String())
	if p.Status != http.StatusOK || p.URL.Path != "/deliveries/"+s.dead[0].String() {
		t.Fatalf("search by delivery id: %s", p)
	}

	// Not an id, and an unknown id: a message on the search page, never a 500.
	p = c.get("/find?q=msg_2Yx9")
	if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "find-message")), "not an event id") {
		t.Errorf("search for a non-id: %s %q", p, p.text())
	}
	unknown := uuid.NewString()
	p = c.get("/find?q=" + unknown)
	if p.Status != http.StatusNotFound || p.URL.Path != "/find" || !strings.Contains(text(one(t, p.Doc, "find-message")), "No event or delivery") {
		t.Errorf("search for an unknown id: %s %q", p, p.text())
	}
	if p = c.get("/find?q="); p.Status != http.StatusOK || len(byTestID(p.Doc, "find-message")) != 0 {
		t.Errorf("empty search: %s", p)
	}
	if p = c.get("/events/" + unknown); p.Status != http.StatusNotFound {
		t.Errorf("unknown event page: %s", p)
	}
}

// TestFindIsolation: a customer searching another tenant's event or delivery id is told nothing is there,
// exactly as for an unknown id, and their event page is a 404; an operator finds any tenant's.
func TestFindIsolation(t *testing.T) {
	e := setup(t, withBackground, withAdmin)
	a, b := seed(e, "find-a", 1), seed(e, "find-b", 1)
	ev := e.eventOf(b.tn, b.dead[0])
	c := e.client()
	c.login(a.tn.Email)
	for _, q := range []string{ev.String(), b.dead[0].String(), b.delivered[0].String()} {
		p := c.get("/find?q=" + q)
		if p.Status != http.StatusNotFound || p.URL.Path != "/find" {
			t.Errorf("A searching B's %s: %s", q, p)
		}
		for _, secret := range []string{"find-b", b.bad.String(), b.tn.ID.String()} {
			if strings.Contains(p.Body, secret) {
				t.Errorf("A searching B's %s sees %q", q, secret)
			}
		}
	}
	if p := c.get("/events/" + ev.String()); p.Status != http.StatusNotFound {
		t.Errorf("A opening B's event: %s", p)
	}
	if p := c.get("/deliveries?event_id=" + ev.String()); p.Status != http.StatusOK || len(byTestID(p.Doc, "delivery-row")) != 0 {
		t.Errorf("A listing B's event's deliveries: %s, %d rows", p, len(byTestID(p.Doc, "delivery-row")))
	}
	op := e.client()
	op.login(adminEmail)
	if p := op.get("/find?q=" + ev.String()); p.URL.Path != "/events/"+ev.String() || len(byTestID(p.Doc, "delivery-row")) != 2 {
		t.Errorf("operator searching B's event: %s", p)
	}
}

// TestDeliveriesPageFilters: /deliveries lists the tenant's deliveries across its subscriptions with the
// subscription page's filters: state tabs with capped counts, event type (exact, or a prefix from the
// choice of the tenant's types), time presets, subscription and event; a bad filter says so (400) without
// also saying that nothing matches.
func TestDeliveriesPageFilters(t *testing.T) {
	e := setup(t, withBackground, nil)
	tn := e.newTenant("lists")
	good := e.newSubscription(tn, "/good/lists", "lists good", "invoice.paid", "invoice.failed", "order.created")
	bad := e.newSubscription(tn, "/bad/lists", "lists bad", "invoice.paid")
	var all []uuid.UUID
	for _, typ := range []string{"invoice.paid", "invoice.failed", "order.created", "invoice.paid"} {
		for _, id := range e.publish(tn, typ, map[string]any{"t": typ}) {
			e.waitState(tn, id, delivery.Delivered, delivery.Failed)
			all = append(all, id)
		}
	}
	// 6 deliveries: 4 to good (delivered), 2 invoice.paid to bad (failed).
	c := e.client()
	c.login(tn.Email)
	p := c.get("/deliveries")
	if p.Status != http.StatusOK || len(rowIDs(p)) != 6 {
		t.Fatalf("/deliveries: %s, %d rows", p, len(rowIDs(p)))
	}
	counts, cur := tabCounts(t, p)
	want := map[string]string{"all": "6", "delivered": "4", "dead": "2", "retrying": "0", "pending": "0"}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("tab %s counts %q, want %q (all: %v)", k, counts[k], v, counts)
		}
	}
	if cur != "all" || text(one(t, p.Doc, "total")) != "6 matching deliveries" {
		t.Errorf("current tab %q, total %q", cur, text(one(t, p.Doc, "total")))
	}
	// The type choice offers the tenant's types and their shared prefix.
	var opts []string
	for _, o := range findAll(p.Doc, func(n *html.Node) bool {
		return n.Data == "option" && n.Parent != nil && attr(n.Parent, "name") == "event_type"
	}) {
		opts = append(opts, attr(o, "value"))
	}
	if strings.Join(opts, " ") != " invoice.* invoice.failed invoice.paid order.created" {
		t.Errorf("event type choices %q", opts)
	}

	for q, n := range map[string]int{
		"state=dead":                                 2,
		"state=delivered":                            4,
		"event_type=invoice.paid":                    4,
		"event_type=invoice.*":                       5,
		"event_type=invoice.":                        5,
		"event_type=invoice.*&state=dead":            2,
		"subscription=" + bad.ID.String():            2,
		"subscription=" + good.ID.String():           4,
		"range=1h":                                   6,
		"range=7d&state=delivered":                   4,
		"until=2000-01-01T00:00":                     0,
		"status=400":                                 2,
		"status=4xx":                                 2,
		"status=4XX&event_type=invoice.*":            2,
		"status=2xx":                                 4,
		"status=200&subscription=" + bad.ID.String(): 0,
		"status=5xx":                                 0,
		"event_id=" + e.eventOf(tn, all[0]).String(): 2,
	} {
		p := c.get("/deliveries?" + q)
		if p.Status != http.StatusOK || len(rowIDs(p)) != n {
			t.Errorf("?%s: %s, %d rows, want %d", q, p, len(rowIDs(p)), n)
		}
	}
	// Tabs keep the other filters and count within them.
	p = c.get("/deliveries?event_type=invoice.*&state=dead")
	counts, cur = tabCounts(t, p)
	if cur != "dead" || counts["all"] != "5" || counts["dead"] != "2" || counts["delivered"] != "3" {
		t.Errorf("prefix tabs: current %q, counts %v", cur, counts)
	}
	for _, tab := range byTestID(p.Doc, "state-tab") {
		if href := attr(tab, "href"); !strings.Contains(href, "event_type=invoice.%2A") {
			t.Errorf("tab link %q drops the type filter", href)
		}
	}
	checkPausedAndDeletedListed(t, e, c, tn, bad)

	checkBadListFilters(t, c, good)
}

// checkBadListFilters checks a bad filter is a 400 with the reason, no rows and no "No deliveries match", on
// the Deliveries page and on good's page.
func checkBadListFilters(t *testing.T, c *client, good subscriptions.Subscription) {
	t.Helper()
	// Bad filters: a 400 with the reason, no rows, and no "No deliveries match".
	for q, msg := range map[string]string{
		"state=bogus":       "bogus",
		"event_type=a%20b":  "not a valid event type",
		"event_type=%2A":    "prefix",
		"range=2w":          "2w",
		"since=yesterday":   "From",
		"subscription=nope": "nope",
		"event_id=msg_1":    "msg_1",
		"status=4x":         `status "4x" is not an HTTP status`,
		"status=600":        "600",
	} {
		p := c.get("/deliveries?" + q)
		if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "filter-error")), msg) {
			t.Errorf("?%s: %s %q", q, p, p.text())
		}
		if len(byTestID(p.Doc, "no-deliveries")) != 0 || len(rowIDs(p)) != 0 {
			t.Errorf("?%s: a filter error also says nothing matches, or lists rows", q)
		}
	}
	if p := c.get("/subscriptions/" + good.ID.String() + "?event_type=a%20b"); p.Status != http.StatusBadRequest || len(byTestID(p.Doc, "no-deliveries")) != 0 {
		t.Errorf("subscription page with a bad type: %s", p)
	}
}

// checkPausedAndDeletedListed pauses and then deletes bad: its waiting delivery waits, not overdue, and its
// deliveries stay listed once it is deleted, named as such, without a link.
func checkPausedAndDeletedListed(t *testing.T, e *env, c *client, tn tenant, bad subscriptions.Subscription) {
	t.Helper()
	// A paused subscription's waiting deliveries wait: no next-attempt time that looks overdue.
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, bad.ID); err != nil {
		t.Fatal(err)
	}
	waiting := e.publishTo(tn, bad.ID, "invoice.paid", map[string]any{"late": true})
	p := c.get("/deliveries?state=pending")
	if ids := rowIDs(p); len(ids) != 1 || ids[0] != waiting.String() {
		t.Fatalf("pending: %v, want %s", ids, waiting)
	}
	if got := text(one(t, p.Doc, "waiting")); !strings.Contains(got, "paused") {
		t.Errorf("a paused subscription's delivery says %q", got)
	}
	sp := c.get("/subscriptions/" + bad.ID.String())
	if got := text(one(t, sp.Doc, "paused-waiting")); !strings.Contains(got, "Paused — 1 waiting") {
		t.Errorf("paused subscription says %q", got)
	}

	// A deleted subscription's deliveries stay listed, named as such, without a link to a page that is gone.
	if err := e.srv.Subscriptions.Delete(setupCtx(), tn.ID, bad.ID); err != nil {
		t.Fatal(err)
	}
	p = c.get("/deliveries?subscription=" + bad.ID.String())
	if ids := rowIDs(p); len(ids) != 3 {
		t.Fatalf("deleted subscription's deliveries: %v", ids)
	}
	for _, r := range byTestID(p.Doc, "delivery-row") {
		if !strings.Contains(text(r), "deleted subscription") || strings.Contains(renderHTML(r), "/subscriptions/"+bad.ID.String()) {
			t.Errorf("deleted subscription's row: %q", text(r))
		}
	}
}

func renderHTML(n *html.Node) string {
	var b strings.Builder
	_ = html.Render(&b, n)
	return b.String()
}

// TestTabCountsCapped: a tab's count stops at 1,000 ("1,000+"), so that a list over a million rows never
// counts them all; under the cap it is exact.
func TestTabCountsCapped(t *testing.T) {
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("capped")
	sub := e.newSubscription(tn, "/good/capped", "capped", "bulk.created")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	ev := e.publishTo(tn, sub.ID, "bulk.created", map[string]any{"n": 0})
	event := e.eventOf(tn, ev)
	// 1,200 more delivered rows of the same event, straight into the table.
	if _, err := e.srv.Pool.Exec(context.Background(), `
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, give_up_at, total_attempts, last_status)
		SELECT $1, $2, $3, 'bulk.created', 'delivered', now() + interval '1 day', 1, 200 FROM generate_series(1, 1200)`,
		tn.ID, event, sub.ID); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	for _, path := range []string{"/deliveries", "/subscriptions/" + sub.ID.String()} {
		p := c.get(path)
		counts, _ := tabCounts(t, p)
		if counts["all"] != "1,000+" || counts["delivered"] != "1,000+" || counts["pending"] != "1" || counts["dead"] != "0" {
			t.Errorf("%s: tab counts %v", path, counts)
		}
		if got := text(one(t, p.Doc, "total")); got != "1,000+ matching deliveries" {
			t.Errorf("%s: total %q", path, got)
		}
		if len(rowIDs(p)) != 25 || len(byTestID(p.Doc, "next-page")) != 1 {
			t.Errorf("%s: %d rows", path, len(rowIDs(p)))
		}
	}
	if got := text(one(t, c.get("/subscriptions/"+sub.ID.String()).Doc, "paused-waiting")); !strings.Contains(got, "Paused — 1 waiting") {
		t.Errorf("paused: %q", got)
	}
	// An event with more deliveries than a page shows the first 100 and leads to the rest.
	p := c.get("/events/" + event.String())
	if len(rowIDs(p)) != 100 || attr(one(t, p.Doc, "more"), "href") != "/deliveries?event_id="+event.String() {
		t.Errorf("event page: %d rows", len(rowIDs(p)))
	}
	if p = c.get("/deliveries?event_id=" + event.String()); len(rowIDs(p)) != 25 || !strings.Contains(text(one(t, p.Doc, "event-filter")), event.String()) {
		t.Errorf("the event's deliveries: %d rows", len(rowIDs(p)))
	}
}

// TestWaitingNotOverdue: a delivery held by an open circuit is due but waits; the list says so instead of a
// next attempt in the past.
func TestWaitingNotOverdue(t *testing.T) {
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("held")
	broken := e.newSubscription(tn, "/flaky/held", "Held endpoint")
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE subscriptions SET circuit_state = 'open', circuit_opened_at = now(),
		circuit_probe_at = now() + interval '1 hour', circuit_probe_ms = 60000 WHERE id = $1`, broken.ID); err != nil {
		t.Fatal(err)
	}
	id := e.publishTo(tn, broken.ID, "held.created", map[string]any{"n": 1})
	c := e.client()
	c.login(tn.Email)
	for _, path := range []string{"/deliveries", "/subscriptions/" + broken.ID.String()} {
		p := c.get(path)
		rows := byTestID(p.Doc, "delivery-row")
		if len(rows) != 1 || attr(rows[0], "data-id") != id.String() {
			t.Fatalf("%s: %d rows", path, len(rows))
		}
		if got := text(one(t, rows[0], "waiting")); !strings.Contains(got, "circuit open") {
			t.Errorf("%s: a held delivery says %q", path, got)
		}
		if n := findAll(rows[0], tag("time")); len(n) != 1 { // only its creation time
			t.Errorf("%s: a held delivery shows %d times", path, len(n))
		}
	}
}

// TestDeliveriesPageSubscriptionFilterChecked: the subscription filter (subscription, or the API's name
// subscription_id) never falls back to every delivery: malformed is 400, an id that is not one of the
// tenant's subscriptions says "No such subscription" (404); a deleted one of its own still filters.
func TestDeliveriesPageSubscriptionFilterChecked(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("sub-filter")
	other := e.newTenant("sub-filter-other")
	good := e.newSubscription(tn, "/good/sub-filter", "sub-filter good")
	gone := e.newSubscription(tn, "/good/sub-filter-gone", "sub-filter gone")
	foreign := e.newSubscription(other, "/good/sub-filter-foreign", "foreign")
	for _, id := range e.publish(tn, "order.paid", map[string]any{"n": 1}) {
		e.waitState(tn, id, delivery.Delivered)
	}
	if err := e.srv.Subscriptions.Delete(setupCtx(), tn.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	for q, want := range map[string]struct {
		status int
		msg    string
	}{
		"subscription_id=nope":                                   {http.StatusBadRequest, `subscription "nope" is not a subscription id`},
		"subscription=nope":                                      {http.StatusBadRequest, `subscription "nope" is not a subscription id`},
		"subscription_id=" + foreign.ID.String():                 {http.StatusNotFound, "No such subscription: " + foreign.ID.String()},
		"subscription=" + uuid.NewString():                       {http.StatusNotFound, "No such subscription"},
		"subscription_id=" + foreign.ID.String() + "&state=dead": {http.StatusNotFound, "No such subscription"},
	} {
		p := c.get("/deliveries?" + q)
		if p.Status != want.status || len(byTestID(p.Doc, "filter-error")) != 1 || !strings.Contains(text(one(t, p.Doc, "filter-error")), want.msg) {
			t.Errorf("?%s: %s, want %d with %q; page says %q", q, p, want.status, want.msg, p.text())
			continue
		}
		if len(rowIDs(p)) != 0 || len(byTestID(p.Doc, "no-deliveries")) != 0 {
			t.Errorf("?%s: lists rows or says nothing matches beside the error", q)
		}
	}
	for q, n := range map[string]int{
		"subscription_id=" + good.ID.String(): 1,
		"subscription=" + good.ID.String():    1,
		"subscription_id=" + gone.ID.String(): 1, // deleted: its deliveries stay listed
	} {
		if p := c.get("/deliveries?" + q); p.Status != http.StatusOK || len(rowIDs(p)) != n {
			t.Errorf("?%s: %s, %d rows, want %d", q, p, len(rowIDs(p)), n)
		}
	}
}

// TestStatusFilterPages: the last-status filter on a subscription's page keeps to its matches from page to
// page, in the tabs and in the form.
func TestStatusFilterPages(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("status-pages")
	sub := e.newSubscription(tn, "/bad/status-pages", "status pages")
	var ids []uuid.UUID
	for i := range 27 {
		ids = append(ids, e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": i}))
	}
	for _, id := range ids {
		e.waitState(tn, id, delivery.Failed)
	}
	// One that no 4xx filter may list: it was last answered 503.
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE webhook_deliveries SET last_status = 503 WHERE id = $1`, ids[26]); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	base := "/subscriptions/" + sub.ID.String()
	p := c.get(base + "?status=4xx")
	if p.Status != http.StatusOK || len(rowIDs(p)) != 25 || attr(one(t, p.Doc, "status-filter"), "value") != "4xx" {
		t.Fatalf("first page: %s, %d rows", p, len(rowIDs(p)))
	}
	for _, s := range byTestID(p.Doc, "last-status") {
		if text(s) != "400" {
			t.Errorf("a 4xx page lists last status %q", text(s))
		}
	}
	if tabs, _ := tabCounts(t, p); tabs["all"] != "26" || tabs["dead"] != "26" {
		t.Errorf("tabs within status=4xx: %v", tabs)
	}
	next := attr(one(t, p.Doc, "next-page"), "href")
	if !strings.Contains(next, "status=4xx") {
		t.Fatalf("next page link %q drops the status", next)
	}
	if p := c.get(next); len(rowIDs(p)) != 1 || len(byTestID(p.Doc, "next-page")) != 0 {
		t.Errorf("second page: %d rows", len(rowIDs(p)))
	}
	if p := c.get(base + "?status=503"); len(rowIDs(p)) != 1 || rowIDs(p)[0] != ids[26].String() {
		t.Errorf("status=503 lists %v", rowIDs(p))
	}
	if p := c.get(base + "?status=5xy"); p.Status != http.StatusBadRequest || len(rowIDs(p)) != 0 {
		t.Errorf("status=5xy: %s, %d rows", p, len(rowIDs(p)))
	}
}
