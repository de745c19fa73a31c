package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

const adminEmail = "ops@example.com"

func withAdmin(c *config.Config) { c.AdminEmail = adminEmail; c.AdminPassword = password }

// formTimeOf writes t as a datetime-local value (UTC), as the filters read it.
func formTimeOf(t time.Time) string { return t.UTC().Format("2006-01-02T15:04") }

// deadOf publishes n events of eventType to the tenant's subscription and waits until all are failed.
func (e *env) deadOf(tn tenant, subID uuid.UUID, eventType string, n int) []uuid.UUID {
	e.t.Helper()
	var ids []uuid.UUID
	for i := range n {
		ids = append(ids, e.publishTo(tn, subID, eventType, map[string]any{"n": i}))
	}
	for _, id := range ids {
		e.waitState(tn, id, delivery.Failed)
	}
	return ids
}

// rowOf is the overview's row of a tenant.
func rowOf(t *testing.T, p *page, id uuid.UUID) *html.Node {
	t.Helper()
	for _, n := range byTestID(p.Doc, "tenant") {
		if attr(n, "data-id") == id.String() {
			return n
		}
	}
	t.Fatalf("tenant %s not in the overview", id)
	return nil
}

func TestAdminPagesAreAdminOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	tn := e.newTenant("admin-only")
	id := uuid.NewString()
	paths := []string{"/admin", "/admin?sort=dead", "/admin/tenants/" + tn.ID.String(), "/admin/dead", "/admin/dead?tenant=" + tn.ID.String(),
		"/admin/replay", "/admin/replays", "/admin/replays/" + id}
	signedOut := e.client()
	for _, path := range paths {
		if p := signedOut.get(path); p.URL.Path != "/login" {
			t.Errorf("GET %s signed out: %s", path, p)
		}
	}
	if p := signedOut.post("/admin/replay", url.Values{"action": {"confirm"}}); p.URL.Path != "/login" {
		t.Errorf("POST /admin/replay signed out: %s", p)
	}
	c := e.client()
	c.login(tn.Email)
	for _, path := range paths {
		p := c.get(path)
		if p.Status != http.StatusNotFound {
			t.Errorf("GET %s as a customer: %s", path, p)
			continue
		}
		one(t, p.Doc, "error-404")
		if len(byTestID(p.Doc, "admin-nav")) != 0 {
			t.Errorf("GET %s as a customer shows the admin navigation", path)
		}
	}
	from, to := formTimeOf(time.Now().Add(-time.Hour)), formTimeOf(time.Now().Add(time.Hour))
	for _, action := range []string{"preview", "confirm"} {
		p := c.post("/admin/replay", url.Values{"action": {action}, "from": {from}, "to": {to}, "tenant": {tn.ID.String()}})
		if p.Status != http.StatusNotFound {
			t.Errorf("POST /admin/replay %s as a customer: %s", action, p)
		}
	}
	// The layout offers no Admin link to a customer.
	if strings.Contains(c.get("/").Body, `href="/admin"`) {
		t.Error("a customer sees the Admin link")
	}
}

func TestAdminOverviewCounts(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	s := seed(e, "overview", 2) // 2 delivered, 2 dead, 4 attempts
	paused := e.newSubscription(s.tn, "/good/overview-paused", "paused")
	ctx := activity.System(context.Background(), "test setup")
	if _, err := e.srv.Subscriptions.Pause(ctx, s.tn.ID, paused.ID); err != nil {
		t.Fatal(err)
	}
	waiting := []uuid.UUID{
		e.publishTo(s.tn, paused.ID, "order.paid", map[string]any{"n": 1}),
		e.publishTo(s.tn, paused.ID, "order.paid", map[string]any{"n": 2}),
	}
	// One of the waiting deliveries was tried before: a retrying one (the worker leaves a paused
	// subscription's deliveries alone, so the fixture holds).
	if _, err := e.srv.Pool.Exec(ctx, `UPDATE webhook_deliveries SET total_attempts = 1 WHERE id = $1`, waiting[0]); err != nil {
		t.Fatal(err)
	}
	quiet := e.newTenant("overview-quiet")
	e.newSubscription(quiet, "/good/overview-quiet", "quiet")

	c := e.client()
	p := c.login(adminEmail)
	if p.URL.Path != "/admin" {
		t.Fatalf("admin lands on %s", p.URL)
	}
	one(t, p.Doc, "admin-nav")
	row := rowOf(t, p, s.tn.ID)
	want := map[string]string{"subscriptions": "3", "pending": "2", "retrying": "1", "dead": "2", "attempts": "4"}
	for k, v := range want {
		if got := text(one(t, row, k)); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if got := attr(one(t, row, "tenant-link"), "href"); got != "/admin/tenants/"+s.tn.ID.String() {
		t.Errorf("tenant link %q", got)
	}
	q := rowOf(t, p, quiet.ID)
	for k, v := range map[string]string{"subscriptions": "1", "pending": "0", "retrying": "0", "dead": "0", "attempts": "0"} {
		if got := text(one(t, q, k)); got != v {
			t.Errorf("quiet %s: %q, want %q", k, got, v)
		}
	}

	// Sorted by dead (largest first) the busy tenant comes before the quiet one; by name, names ascend.
	index := func(p *page, id uuid.UUID) int {
		for i, n := range byTestID(p.Doc, "tenant") {
			if attr(n, "data-id") == id.String() {
				return i
			}
		}
		return -1
	}
	for _, sort := range []string{"dead", "pending", "retrying", "attempts"} {
		p := c.get("/admin?sort=" + sort)
		if p.Status != http.StatusOK || index(p, s.tn.ID) > index(p, quiet.ID) {
			t.Errorf("sort=%s: %s, busy at %d, quiet at %d", sort, p, index(p, s.tn.ID), index(p, quiet.ID))
		}
		if attr(one(t, p.Doc, "sort-"+sort), "aria-current") != "true" {
			t.Errorf("sort=%s not marked current", sort)
		}
	}
	p = c.get("/admin?sort=name")
	var names []string
	for _, n := range byTestID(p.Doc, "tenant-link") {
		names = append(names, text(n))
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] > names[i] {
			t.Fatalf("sort=name out of order: %q before %q", names[i-1], names[i])
		}
	}
	if p := c.get("/admin?sort=bogus"); p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "sort-error")), "sort must be one of") {
		t.Errorf("bad sort: %s", p)
	}

	checkAdminTenantPage(t, c, s.tn)
}

// checkAdminTenantPage checks the operator's page of tn: its subscriptions with their health, links to its
// dead letters and recovers; an unknown tenant's is the 404 page.
func checkAdminTenantPage(t *testing.T, c *client, tn tenant) {
	t.Helper()
	// The tenant page: its subscriptions with their health, links to its dead letters and recovers.
	p := c.get("/admin/tenants/" + tn.ID.String())
	if p.Status != http.StatusOK || text(one(t, p.Doc, "tenant-name")) != "overview" {
		t.Fatalf("tenant page: %s", p)
	}
	if n := len(byTestID(p.Doc, "subscription")); n != 3 {
		t.Errorf("tenant page lists %d subscriptions", n)
	}
	if n := len(byTestID(p.Doc, "health")); n != 3 {
		t.Errorf("tenant page shows %d health panels", n)
	}
	if got := attr(one(t, p.Doc, "tenant-dead"), "href"); got != "/admin/dead?tenant="+tn.ID.String() {
		t.Errorf("dead letters link %q", got)
	}
	if got := attr(one(t, p.Doc, "tenant-replays"), "href"); got != "/admin/replays?tenant="+tn.ID.String() {
		t.Errorf("replays link %q", got)
	}
	if p := c.get("/admin/tenants/" + uuid.NewString()); p.Status != http.StatusNotFound {
		t.Errorf("unknown tenant: %s", p)
	}
}

func TestAdminDeadLettersFilterAndPages(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("dead-filter")
	bad := e.newSubscription(tn, "/bad/dead-filter", "dead filter bad")
	other := e.newSubscription(tn, "/bad/dead-filter-other", "dead filter other")
	start := time.Now().Add(-time.Minute)
	dead := e.deadOf(tn, bad.ID, "order.paid", 3)
	e.deadOf(tn, other.ID, "invoice.paid", 1)
	c := e.client()
	c.login(adminEmail)

	ids := deadRowIDs
	base := "/admin/dead?tenant=" + tn.ID.String()
	p := c.get(base)
	if p.Status != http.StatusOK {
		t.Fatal(p)
	}
	if got := text(one(t, p.Doc, "total")); got != "4 matching dead deliveries" {
		t.Errorf("total %q", got)
	}
	if len(ids(p)) != 4 {
		t.Fatalf("rows %v", ids(p))
	}
	// The reason names the status the endpoint answered, not the word for the rule.
	for _, row := range byTestID(p.Doc, "dead-row") {
		if got := text(row); !strings.Contains(got, "400 Bad Request") || strings.Contains(got, "permanent status") {
			t.Errorf("dead row says %q, want the status 400 Bad Request as its reason", got)
		}
	}
	for _, a := range byTestID(p.Doc, "delivery-link") {
		if !strings.HasPrefix(attr(a, "href"), "/deliveries/") {
			t.Errorf("row links to %q", attr(a, "href"))
		}
	}
	// The tenant select keeps the choice.
	sel := findAll(p.Doc, func(n *html.Node) bool { return n.Data == "option" && attr(n, "value") == tn.ID.String() })
	if len(sel) != 1 || !hasAttr(sel[0], "selected") {
		t.Error("tenant filter not kept in the form")
	}

	for _, f := range []struct {
		query string
		want  int
	}{
		{"&subscription=" + bad.ID.String(), 3},
		{"&event_type=invoice.paid", 1},
		{"&state=failed", 4},
		{"&state=expired", 0},
		{"&reason=permanent_status", 4},
		{"&reason=max_attempts", 0},
		{"&from=" + formTimeOf(start), 4},
		{"&to=" + formTimeOf(start), 0},
		{"&from=" + formTimeOf(start) + "&to=" + formTimeOf(time.Now().Add(2*time.Minute)) + "&event_type=order.paid", 3},
	} {
		p := c.get(base + f.query)
		if p.Status != http.StatusOK || len(ids(p)) != f.want {
			t.Errorf("%s: %s, %d rows, want %d", f.query, p, len(ids(p)), f.want)
		}
		if f.want == 0 {
			one(t, p.Doc, "no-dead")
			if len(byTestID(p.Doc, "replay-these")) != 0 {
				t.Errorf("%s: offers to replay nothing", f.query)
			}
		}
	}

	checkDeadLetterPages(t, c, base, dead)

	checkReplayTheseLink(t, c, base, tn, start)

	// Wrong values are shown on the form.
	for _, q := range []string{"/admin/dead?tenant=nope", "/admin/dead?from=yesterday", "/admin/dead?state=delivered", "/admin/dead?reason=bogus", "/admin/dead?limit=0"} {
		p := c.get(q)
		if p.Status != http.StatusBadRequest || len(byTestID(p.Doc, "filter-error")) != 1 {
			t.Errorf("%s: %s", q, p)
		}
	}
}

// checkReplayTheseLink checks "Replay these…" leads to the bulk replay form with the same criteria, and
// that the form opens without a preview.
func checkReplayTheseLink(t *testing.T, c *client, base string, tn tenant, start time.Time) {
	t.Helper()
	// "Replay these…" leads to the bulk replay form with the same criteria.
	p := c.get(base + "&event_type=order.paid&from=" + formTimeOf(start))
	href := attr(one(t, p.Doc, "replay-these"), "href")
	u, _ := url.Parse(href)
	if u.Path != "/admin/replay" || u.Query().Get("tenant") != tn.ID.String() || u.Query().Get("event_type") != "order.paid" || u.Query().Get("from") != formTimeOf(start) {
		t.Errorf("replay these: %q", href)
	}
	p = c.get(href)
	if p.Status != http.StatusOK || attr(findAll(one(t, p.Doc, "replay-form"), func(n *html.Node) bool { return attr(n, "name") == "event_type" })[0], "value") != "order.paid" {
		t.Errorf("replay form not prefilled: %s", p)
	}
	if len(byTestID(p.Doc, "replay-preview")) != 0 {
		t.Error("a preview without a time range")
	}
}

// deadRowIDs are the ids of the dead letters a page lists.
func deadRowIDs(p *page) []string {
	var out []string
	for _, n := range byTestID(p.Doc, "dead-row") {
		out = append(out, attr(n, "data-id"))
	}
	return out
}

// checkDeadLetterPages checks the dead letters in keyset pages of 2: newest first, then the rest, and back.
func checkDeadLetterPages(t *testing.T, c *client, base string, dead []uuid.UUID) {
	t.Helper()
	// Keyset pages of 2: newest first, then the rest, and back.
	p := c.get(base + "&event_type=order.paid&limit=2")
	first := deadRowIDs(p)
	if len(first) != 2 || first[0] != dead[2].String() || first[1] != dead[1].String() {
		t.Fatalf("first page %v, want %v %v", first, dead[2], dead[1])
	}
	next := attr(one(t, p.Doc, "next-page"), "href")
	p = c.get(next)
	if got := deadRowIDs(p); len(got) != 1 || got[0] != dead[0].String() {
		t.Errorf("second page %v", got)
	}
	if len(byTestID(p.Doc, "next-page")) != 0 {
		t.Error("a next page after the last")
	}
	if p := c.get(attr(one(t, p.Doc, "first-page"), "href")); len(deadRowIDs(p)) != 2 {
		t.Errorf("back to the newest: %v", deadRowIDs(p))
	}
}

// replayCriteria are a bulk replay form's fields for one event type over the last hour.
func replayCriteria(eventType, action string) url.Values {
	return url.Values{"action": {action}, "event_type": {eventType},
		"from": {formTimeOf(time.Now().Add(-time.Hour))}, "to": {formTimeOf(time.Now().Add(time.Hour))}, "spread": {"0"}}
}

func TestAdminBulkReplayPreviewConfirmAndProgress(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	a := e.newTenant("replay-a")
	b := e.newTenant("replay-b")
	subA := e.newSubscription(a, "/bad/replay-a", "replay a")
	subB := e.newSubscription(b, "/bad/replay-b", "replay b")
	// An event type no other test uses: the replay must not touch their deliveries.
	const typ = "outage.bulk-replay-test"
	deadA := e.deadOf(a, subA.ID, typ, 2)
	deadB := e.deadOf(b, subB.ID, typ, 1)
	c := e.client()
	c.login(adminEmail)

	// Missing times are said on the form.
	p := c.post("/admin/replay", url.Values{"action": {"preview"}, "event_type": {typ}})
	if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "replay-error")), "created_from and created_to are required") {
		t.Fatalf("no times: %s %q", p, p.text())
	}
	if p := c.post("/admin/replay", url.Values{"action": {"preview"}, "from": {"soon"}, "to": {"later"}}); p.Status != http.StatusBadRequest {
		t.Errorf("bad times: %s", p)
	}

	p = checkReplayPreview(t, e, c, typ, a, b, deadA, deadB)

	// Confirm carries the same criteria in hidden fields, starts the replay and leads to its page.
	form := url.Values{}
	for _, in := range findAll(one(t, p.Doc, "confirm-form"), tag("input")) {
		form.Set(attr(in, "name"), attr(in, "value"))
	}
	form.Set("action", "confirm")
	if form.Get("event_type") != typ || form.Get("spread") != "0" {
		t.Fatalf("confirm form carries %v", form)
	}
	p = c.post("/admin/replay", form)
	if p.Status != http.StatusOK || !strings.HasPrefix(p.URL.Path, "/admin/replays/") {
		t.Fatalf("confirm: %s %q", p, p.text())
	}
	if got := text(one(t, p.Doc, "flash")); !strings.Contains(got, "3 dead deliveries matched") {
		t.Errorf("confirm flash %q", got)
	}
	replayPath := p.URL.Path
	// The page follows the replay until every delivery it scheduled is final (they die again: 400).
	first := true
	eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		if !first {
			p = c.get(replayPath)
		}
		first = false
		return attr(one(t, p.Doc, "replay-head"), "data-settled") == "true"
	}, func() string {
		return fmt.Sprintf("replay still %s, settled %s", attr(one(t, p.Doc, "replay-head"), "data-state"), attr(one(t, p.Doc, "replay-head"), "data-settled"))
	})
	prog := one(t, p.Doc, "progress")
	if attr(prog, "data-value") != "3" || attr(prog, "data-max") != "3" {
		t.Errorf("progress %s of %s", attr(prog, "data-value"), attr(prog, "data-max"))
	}
	bar := findAll(prog, tag("progress"))
	if len(bar) != 1 || attr(bar[0], "value") != "3" || attr(bar[0], "max") != "3" {
		t.Error("no <progress> element with the counts")
	}
	if findAll(p.Doc, func(n *html.Node) bool { return n.Data == "meta" && attr(n, "http-equiv") == "refresh" }) != nil {
		t.Error("a finished replay's page still refreshes")
	}
	if got := text(one(t, p.Doc, "criteria")); !strings.Contains(got, "all tenants") || !strings.Contains(got, "event type "+typ) {
		t.Errorf("criteria %q", got)
	}
	got := map[string]bool{}
	for _, r := range byTestID(p.Doc, "delivery-row") {
		got[attr(r, "data-id")] = true
	}
	for _, id := range append(deadA, deadB...) {
		if !got[id.String()] {
			t.Errorf("replay page does not list %s (%v)", id, got)
		}
	}

	checkReplayRecorded(t, e, c, a, deadA, replayPath)
}

// checkReplayPreview previews the replay of typ's dead deliveries (deadA of a, deadB of b), by POST and by GET: the count, the
// split by tenant, a sample, nothing changed; it returns the POST's page.
func checkReplayPreview(t *testing.T, e *env, c *client, typ string, a, b tenant, deadA, deadB []uuid.UUID) *page {
	t.Helper()
	// Preview: the count, the split by tenant, a sample; nothing changes.
	p := c.post("/admin/replay", replayCriteria(typ, "preview"))
	if p.Status != http.StatusOK {
		t.Fatalf("preview: %s %q", p, p.text())
	}
	if got := attr(one(t, p.Doc, "matched"), "data-matched"); got != "3" {
		t.Errorf("preview matched %q", got)
	}
	groups := map[string]string{}
	for _, g := range byTestID(p.Doc, "group") {
		groups[text(one(t, g, "group-tenant"))] = text(one(t, g, "group-count"))
	}
	if groups["replay-a"] != "2" || groups["replay-b"] != "1" || len(groups) != 2 {
		t.Errorf("groups %v", groups)
	}
	if n := len(byTestID(one(t, p.Doc, "sample"), "dead-row")); n != 3 {
		t.Errorf("sample of %d", n)
	}
	for _, id := range append(deadA, deadB...) {
		tn := a
		if id == deadB[0] {
			tn = b
		}
		if d, _ := e.srv.Deliveries.Get(context.Background(), tn.ID, id); d.State != delivery.Failed || d.ReplayID != nil {
			t.Errorf("preview changed %s: %s", id, d.State)
		}
	}
	var recorded int
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM replays WHERE criteria->>'event_type' = $1`, typ).Scan(&recorded); err != nil || recorded != 0 {
		t.Errorf("preview recorded %d replays (%v)", recorded, err)
	}
	// GET with the criteria previews too.
	g := replayCriteria(typ, "")
	g.Del("action")
	if p := c.get("/admin/replay?" + g.Encode()); attr(one(t, p.Doc, "matched"), "data-matched") != "3" {
		t.Errorf("GET preview: %s", p)
	}
	return p
}

// checkReplayRecorded checks the audit log lists the replay at replayPath with its actor, and a replayed
// delivery's page says which replay sent it again: a link for operators, words for the customer (a).
func checkReplayRecorded(t *testing.T, e *env, c *client, a tenant, deadA []uuid.UUID, replayPath string) {
	t.Helper()
	// The audit log has it, with its actor.
	p := c.get("/admin/replays")
	found := false
	for _, r := range byTestID(p.Doc, "replay-row") {
		if "/admin/replays/"+attr(r, "data-id") == replayPath {
			found = true
			if !strings.Contains(text(r), adminEmail) || attr(r, "data-kind") != "bulk" {
				t.Errorf("audit row %q", text(r))
			}
		}
	}
	if !found {
		t.Error("replay not in the audit log")
	}

	// The delivery page says when it died and which replay sent it again: a link for operators, words for the customer.
	e.waitState(a, deadA[0], delivery.Failed)
	p = c.get("/deliveries/" + deadA[0].String())
	if p.Status != http.StatusOK {
		t.Fatalf("admin on a customer's delivery: %s", p)
	}
	if got := attr(one(t, p.Doc, "replay-link"), "href"); got != replayPath {
		t.Errorf("replayed-by link %q", got)
	}
	one(t, p.Doc, "dead-at")
	ca := e.client()
	ca.login(a.Email)
	p = ca.get("/deliveries/" + deadA[0].String())
	if got := text(one(t, p.Doc, "replayed-by")); got != "an operator's bulk replay" || len(byTestID(p.Doc, "replay-link")) != 0 {
		t.Errorf("customer sees %q", got)
	}
}

// insertReplay records a replay row directly, for states the runner passes through too fast to see.
func (e *env) insertReplay(kind, state string, matched, scheduled int, tenantID, subID *uuid.UUID, errText string) uuid.UUID {
	e.t.Helper()
	from, to := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 1, 2, 0, 0, 0, 0, time.UTC)
	crit, _ := json.Marshal(replays.DeadFilter{TenantID: tenantID, SubscriptionID: subID, EventType: "never.sent", CreatedFrom: &from, CreatedTo: &to})
	var id uuid.UUID
	err := e.srv.Pool.QueryRow(context.Background(), `INSERT INTO replays (kind, actor, criteria, matched, scheduled, state, tenant_id,
		subscription_id, error, finished_at) VALUES ($1, 'fixture@example.com', $2, $3, $4, $5, $6, $7, $8,
		CASE WHEN $5 = 'running' THEN NULL ELSE now() END) RETURNING id`,
		kind, crit, matched, scheduled, state, tenantID, subID, errText).Scan(&id)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// insertRunningReplay records a running replay that no runner takes until release is called, with no
// moment when one could: the row is inserted finished (runners look only at running ones), locked FOR
// KEY SHARE by a transaction the test holds open, and only then made running by another statement. A
// non-key update does not wait for that lock and the lock stays on the row, while a runner's FOR UPDATE
// SKIP LOCKED skips a row so locked: pages read it as running, no runner moves it on.
func (e *env) insertRunningReplay(kind string, matched, scheduled int, tenantID, subID *uuid.UUID) (id uuid.UUID, release func()) {
	e.t.Helper()
	ctx := context.Background()
	id = e.insertReplay(kind, "finished", matched, scheduled, tenantID, subID, "")
	tx, err := e.srv.Pool.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	release = func() { _ = tx.Rollback(ctx) }
	if _, err := tx.Exec(ctx, `SELECT 1 FROM replays WHERE id = $1 FOR KEY SHARE`, id); err != nil {
		release()
		e.t.Fatal(err)
	}
	if _, err := e.srv.Pool.Exec(ctx, `UPDATE replays SET state = 'running', finished_at = NULL WHERE id = $1`, id); err != nil {
		release()
		e.t.Fatal(err)
	}
	return id, release
}

func TestAdminReplayPageWhileRunningAndFailed(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	tn := e.newTenant("replay-running")
	// A running replay held by the test, so no runner moves it on while the page is read.
	id, release := e.insertRunningReplay("bulk", 10, 4, &tn.ID, nil)
	defer release()
	if taken, _, err := e.srv.Replays.Step(context.Background(), id); err != nil || taken {
		t.Fatalf("a runner's chunk took the held replay (taken %v, %v)", taken, err)
	}
	c := e.client()
	c.login(adminEmail)
	p := c.get("/admin/replays/" + id.String())
	if p.Status != http.StatusOK {
		t.Fatal(p)
	}
	if st := attr(one(t, p.Doc, "replay-head"), "data-state"); st != "running" {
		t.Fatalf("the held running replay's page says %s", st)
	}
	// With script the page follows the replay (data-live); without, it reloads itself every 2 s.
	if live := findAll(p.Doc, func(n *html.Node) bool { return attr(n, "id") == "replay" && hasAttr(n, "data-live") }); len(live) != 1 {
		t.Error("a running replay's page does not follow it")
	}
	if !strings.Contains(p.Body, `<noscript><meta http-equiv="refresh" content="2"></noscript>`) {
		t.Error("without script, a running replay's page does not reload every 2 s")
	}
	if findAll(p.Doc, func(n *html.Node) bool {
		return n.Data == "meta" && attr(n, "http-equiv") == "refresh" && n.Parent != nil && n.Parent.Data == "head"
	}) != nil {
		t.Error("a running replay's page reloads itself even with script")
	}
	prog := one(t, p.Doc, "progress")
	// The bar counts what reached its end. The fixture is the replay row alone: no delivery names it, so its
	// 4 scheduled count as taken over or deleted, which is an end.
	if attr(prog, "data-value") != "4" || attr(prog, "data-max") != "10" || !strings.HasPrefix(text(one(t, prog, "progress-text")), "Scheduled 4 of 10 (40 %); ") {
		t.Errorf("progress %q", text(prog))
	}
	one(t, p.Doc, "refreshing")
	release()

	failed := e.insertReplay("bulk", "failed", 5, 2, nil, nil, "replay chunk: connection reset")
	p = c.get("/admin/replays/" + failed.String())
	if got := text(one(t, p.Doc, "replay-failed")); got != "Failed: replay chunk: connection reset" {
		t.Errorf("failed replay says %q", got)
	}
	if p := c.get("/admin/replays/" + uuid.NewString()); p.Status != http.StatusNotFound {
		t.Errorf("unknown replay: %s", p)
	}
}

func TestRecoverForCustomer(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("recover")
	sub := e.newSubscription(tn, "/bad/recover", "recover endpoint")
	dead := e.deadOf(tn, sub.ID, "order.paid", 2)
	c := e.client()
	c.login(tn.Email)
	path := "/subscriptions/" + sub.ID.String()

	// The form defaults to 24 h ago.
	p := c.get(path)
	since := findAll(one(t, p.Doc, "recover-form"), func(n *html.Node) bool { return attr(n, "name") == "since" })
	if len(since) != 1 {
		t.Fatal("no since field")
	}
	if v, err := time.Parse("2006-01-02T15:04", attr(since[0], "value")); err != nil || time.Since(v) < 24*time.Hour-time.Minute || time.Since(v) > 24*time.Hour+2*time.Minute {
		t.Errorf("since defaults to %q", attr(since[0], "value"))
	}

	// Preview: the count and nothing changes.
	hour := formTimeOf(time.Now().Add(-time.Hour))
	p = checkRecoverPreview(t, e, c, tn, path, hour, dead)

	// Confirm: replayed, with a message, back on the page.
	hits := e.recv.count("/bad/recover")
	confirm := url.Values{}
	for _, in := range findAll(one(t, p.Doc, "recover-confirm-form"), tag("input")) {
		confirm.Set(attr(in, "name"), attr(in, "value"))
	}
	confirm.Set("action", "confirm")
	p = c.post(path+"/recover", confirm)
	if p.URL.Path != path {
		t.Fatalf("confirm: %s", p)
	}
	if got := text(one(t, p.Doc, "flash")); !strings.HasPrefix(got, "Recovering 2 dead deliveries since") {
		t.Errorf("confirm flash %q", got)
	}
	e.recv.waitHits(t, "/bad/recover", hits+2)
	for _, id := range dead {
		d := e.waitState(tn, id, delivery.Failed)
		if d.ReplayID == nil {
			t.Errorf("%s has no replay", id)
		}
	}
	// The recover is listed with its outcome and links to its page; the preview (a recorded dry run) is
	// listed apart, marked. Its deliveries are dead again; the runner may still be closing the recover.
	var recent []*html.Node
	eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		p = c.get(path)
		recent = byTestID(one(t, p.Doc, "recover-recent"), "replay-row")
		return len(recent) != 1 || attr(recent[0], "data-settled") == "true"
	}, func() string {
		return fmt.Sprintf("recent recovers: %d rows %q", len(recent), text(one(t, p.Doc, "recover-recent")))
	})
	if len(recent) != 1 || attr(recent[0], "data-kind") != "recover" || attr(recent[0], "data-settled") != "true" ||
		len(byTestID(recent[0], "dry-run")) != 0 {
		t.Fatalf("recent recovers: %d rows %q", len(recent), text(one(t, p.Doc, "recover-recent")))
	}
	if got := text(one(t, recent[0], "outcome")); got != "0 delivered, 2 dead again, 0 still pending" {
		t.Errorf("recent recover's outcome %q", got)
	}
	recoverPath := attr(one(t, recent[0], "replay-link"), "href")
	if recoverPath != "/recovers/"+attr(recent[0], "data-id") {
		t.Errorf("recover row links to %q", recoverPath)
	}
	previews := byTestID(one(t, p.Doc, "recover-previews"), "replay-row")
	if len(previews) != 1 || len(byTestID(previews[0], "dry-run")) != 1 {
		t.Errorf("%d previews listed apart", len(previews))
	}
	checkRecoverPage(t, e, c, recoverPath, dead)

	checkRecoverRefusals(t, e, c, tn, sub, hour)
}

// checkRecoverPreview previews the recover of the dead deliveries since hour on path's page: the count and
// the pace, nothing changed. It returns the page with the preview.
func checkRecoverPreview(t *testing.T, e *env, c *client, tn tenant, path, hour string, dead []uuid.UUID) *page {
	t.Helper()
	p := c.post(path+"/recover", url.Values{"action": {"preview"}, "since": {hour}})
	if p.Status != http.StatusOK {
		t.Fatalf("preview: %s", p)
	}
	if got := text(one(t, p.Doc, "recover-preview-result")); !strings.HasPrefix(got, "2 dead deliveries since") || !strings.Contains(got, "would be replayed") {
		t.Errorf("preview says %q", got)
	}
	// The card promises a pace that does not flood the endpoint, and the preview tells the same pace: two
	// deliveries at about 20 a second go within one second, not "all at once".
	if card := text(one(t, p.Doc, "recover")); !strings.Contains(card, "about 20 a second") {
		t.Errorf("the recover card does not say its pace: %q", card)
	}
	if got := text(one(t, p.Doc, "recover-preview-result")); !strings.Contains(got, "spread over 1 second") || strings.Contains(got, "all at once") {
		t.Errorf("preview says %q, want the pace the card promises (spread over 1 second)", got)
	}
	for _, id := range dead {
		if d, _ := e.srv.Deliveries.Get(context.Background(), tn.ID, id); d.State != delivery.Failed {
			t.Errorf("preview changed %s to %s", id, d.State)
		}
	}
	return p
}

// checkRecoverPage checks the recover's own page: the outcome, settled (no following), the deliveries it sent
// again; only the customer whose it is (and operators) see it, and the delivery page names it.
func checkRecoverPage(t *testing.T, e *env, c *client, recoverPath string, dead []uuid.UUID) {
	t.Helper()
	// Its page: the outcome, settled (no following), the deliveries it sent again.
	p := c.get(recoverPath)
	if p.Status != http.StatusOK {
		t.Fatalf("recover page: %s", p)
	}
	head := one(t, p.Doc, "replay-head")
	if attr(head, "data-settled") != "true" || text(one(t, head, "state")) != "finished" {
		t.Errorf("recover page head %q settled %s", text(head), attr(head, "data-settled"))
	}
	if got := text(one(t, p.Doc, "progress-text")); got != "Scheduled 2 of 2; delivered 0, dead again 2, still pending 0" {
		t.Errorf("recover page progress %q", got)
	}
	if n := len(byTestID(p.Doc, "delivery-row")); n != 2 {
		t.Errorf("recover page lists %d deliveries", n)
	}
	if findAll(p.Doc, func(n *html.Node) bool { return attr(n, "id") == "replay" && hasAttr(n, "data-live") }) != nil {
		t.Error("a settled recover's page still follows it")
	}
	// Only the customer whose it is (and operators) see it.
	stranger := e.client()
	stranger.login(e.newTenant("recover-stranger").Email)
	if p := stranger.get(recoverPath); p.Status != http.StatusNotFound {
		t.Errorf("another tenant's recover page: %s", p)
	}
	ac := e.client()
	ac.login(adminEmail)
	if p := ac.get(recoverPath); p.Status != http.StatusOK {
		t.Errorf("an operator on the recover page: %s", p)
	}
	// The delivery page says the customer's own recover sent it again.
	p = c.get("/deliveries/" + dead[0].String())
	if got := text(one(t, p.Doc, "replayed-by")); !strings.HasPrefix(got, "your recover of") {
		t.Errorf("replayed by %q", got)
	}
}

// checkRecoverRefusals checks a refused recover of sub is a warning on its page, never an error page (one
// running already among them), and that another tenant cannot recover it.
func checkRecoverRefusals(t *testing.T, e *env, c *client, tn tenant, sub subscriptions.Subscription, hour string) {
	t.Helper()
	path := "/subscriptions/" + sub.ID.String()
	// Refusals are warnings on the page, never an error page.
	for _, r := range []struct {
		since, want string
	}{
		{formTimeOf(time.Now().Add(-15 * 24 * time.Hour)), "Not recovered: since may be at most 14 days ago."},
		{"", "Not recovered: choose since when to recover failed deliveries."},
		{"last week", "Not recovered: Since must be a date and time"},
		{formTimeOf(time.Now().Add(time.Hour)), "Not recovered: since must be in the past."},
	} {
		p := c.post(path+"/recover", url.Values{"action": {"confirm"}, "since": {r.since}})
		if p.Status != http.StatusOK || p.URL.Path != path {
			t.Errorf("since %q: %s", r.since, p)
			continue
		}
		if f := one(t, p.Doc, "flash"); attr(f, "data-kind") != "warning" || !strings.HasPrefix(text(f), r.want) {
			t.Errorf("since %q: %q", r.since, text(f))
		}
	}
	_, release := e.insertRunningReplay("recover", 1, 0, &tn.ID, &sub.ID)
	p := c.post(path+"/recover", url.Values{"action": {"confirm"}, "since": {hour}})
	release()
	if f := one(t, p.Doc, "flash"); !strings.Contains(text(f), "running already") {
		t.Errorf("while one runs: %q", text(f))
	}

	// Another tenant cannot recover this subscription.
	other := e.newTenant("recover-other")
	co := e.client()
	co.login(other.Email)
	if p := co.post(path+"/recover", url.Values{"action": {"confirm"}, "since": {hour}}); p.Status != http.StatusNotFound {
		t.Errorf("another tenant's recover: %s", p)
	}
}

func TestAdminOpensAnyTenantsPages(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	s := seed(e, "admin-any", 1)
	c := e.client()
	c.login(adminEmail)
	for _, path := range []string{"/subscriptions/" + s.bad.String(), "/subscriptions/" + s.bad.String() + "?state=dead", "/deliveries/" + s.dead[0].String()} {
		p := c.get(path)
		if p.Status != http.StatusOK {
			t.Errorf("admin GET %s: %s", path, p)
			continue
		}
		crumbs := text(one(t, p.Doc, "breadcrumb"))
		if !strings.HasPrefix(crumbs, "Admin admin-any") {
			t.Errorf("%s breadcrumb %q", path, crumbs)
		}
	}
	if p := c.get("/deliveries/" + uuid.NewString()); p.Status != http.StatusNotFound {
		t.Errorf("unknown delivery: %s", p)
	}
	// A customer of another tenant still gets the 404 page for the same ids.
	other := e.newTenant("admin-any-other")
	co := e.client()
	co.login(other.Email)
	for _, path := range []string{"/subscriptions/" + s.bad.String(), "/deliveries/" + s.dead[0].String()} {
		if p := co.get(path); p.Status != http.StatusNotFound {
			t.Errorf("customer GET %s: %s", path, p)
		}
	}
}
