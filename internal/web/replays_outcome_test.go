package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/net/html"
)

// setReplayed gives deliveries to a replay in a state: delivered, failed, or pending far in the future
// (so no worker sends it while the page is read).
func (e *env) setReplayed(replayID uuid.UUID, state string, ids ...uuid.UUID) {
	e.t.Helper()
	var sql string
	switch state {
	case "delivered":
		sql = `UPDATE webhook_deliveries SET state = 'delivered', dead_at = NULL, dead_reason = NULL, replay_id = $1 WHERE id = ANY($2)`
	case "failed":
		sql = `UPDATE webhook_deliveries SET replay_id = $1 WHERE id = ANY($2)`
	case "pending":
		sql = `UPDATE webhook_deliveries SET state = 'pending', dead_at = NULL, dead_reason = NULL,
			next_attempt_at = now() + interval '1 hour', replay_id = $1 WHERE id = ANY($2)`
	}
	if _, err := e.srv.Pool.Exec(context.Background(), sql, replayID, ids); err != nil {
		e.t.Fatal(err)
	}
}

func followsItself(p *page) bool {
	return findAll(p.Doc, func(n *html.Node) bool { return attr(n, "id") == "replay" && hasAttr(n, "data-live") }) != nil
}

// A replay that finished scheduling while one of its deliveries is still pending says so, and its page
// keeps following it; once every delivery is final it says finished and stops.
func TestReplayPageShowsOutcomeAndFollowsUntilSettled(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("replay-outcome")
	sub := e.newSubscription(tn, "/bad/replay-outcome", "outcome")
	ids := e.deadOf(tn, sub.ID, "order.paid", 3)
	// Four scheduled: one delivered, one dead again, one pending, one taken over by a later replay.
	id := e.insertReplay("bulk", "finished", 4, 4, nil, nil, "")
	e.setReplayed(id, "delivered", ids[0])
	e.setReplayed(id, "failed", ids[1])
	e.setReplayed(id, "pending", ids[2])
	c := e.client()
	c.login(adminEmail)

	p := c.get("/admin/replays/" + id.String())
	if p.Status != http.StatusOK {
		t.Fatal(p)
	}
	head := one(t, p.Doc, "replay-head")
	if attr(head, "data-settled") != "false" || text(one(t, head, "state")) != "delivering" {
		t.Errorf("head %q, settled %s", text(head), attr(head, "data-settled"))
	}
	want := "Scheduled 4 of 4; delivered 1, dead again 1, still pending 1, 1 taken over by a later replay or deleted"
	if got := text(one(t, p.Doc, "progress-text")); got != want {
		t.Errorf("progress text %q, want %q", got, want)
	}
	// The bar counts what reached its end, not what was scheduled: 3 of 4, not full while one is on its way.
	if prog := one(t, p.Doc, "progress"); attr(prog, "data-value") != "3" || attr(prog, "data-max") != "4" {
		t.Errorf("progress bar %s of %s, want 3 of 4", attr(prog, "data-value"), attr(prog, "data-max"))
	}
	for testid, want := range map[string]string{"outcome-delivered": "1", "outcome-failed": "1", "outcome-pending": "1", "outcome-taken-over": "1"} {
		if got := text(one(t, p.Doc, testid)); got != want {
			t.Errorf("%s = %q, want %s", testid, got, want)
		}
	}
	if !followsItself(p) || !strings.Contains(p.Body, `<noscript><meta http-equiv="refresh" content="2"></noscript>`) {
		t.Error("a replay with a pending delivery does not follow itself")
	}
	if got := text(one(t, p.Doc, "refreshing")); !strings.Contains(got, "1 still on their way") {
		t.Errorf("refreshing note %q", got)
	}
	// The audit log says the same.
	p = c.get("/admin/replays")
	for _, r := range byTestID(p.Doc, "replay-row") {
		if attr(r, "data-id") == id.String() && (text(one(t, r, "state")) != "delivering" || text(one(t, r, "outcome-pending")) != "1") {
			t.Errorf("audit log row %q", text(r))
		}
	}

	// The pending one dies again: settled, finished, no longer following.
	e.setReplayed(id, "failed", ids[2])
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE webhook_deliveries SET state = 'failed', dead_at = now(), dead_reason = 'permanent_status' WHERE id = $1`, ids[2]); err != nil {
		t.Fatal(err)
	}
	p = c.get("/admin/replays/" + id.String())
	head = one(t, p.Doc, "replay-head")
	if attr(head, "data-settled") != "true" || text(one(t, head, "state")) != "finished" || followsItself(p) || strings.Contains(p.Body, "http-equiv") {
		t.Errorf("settled replay: head %q, settled %s, follows %v", text(head), attr(head, "data-settled"), followsItself(p))
	}
	if got := text(one(t, p.Doc, "outcome-failed")); got != "2" {
		t.Errorf("dead again %q", got)
	}
}

// The audit log lists real replays by default and dry runs under their own tab, marked.
func TestReplayLogKeepsDryRunsApart(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	tn := e.newTenant("replay-dry")
	real := e.insertReplay("bulk", "finished", 0, 0, &tn.ID, nil, "")
	dry := e.insertReplay("bulk", "finished", 5, 0, &tn.ID, nil, "")
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE replays SET dry_run = true WHERE id = $1`, dry); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(adminEmail)
	ids := func(p *page) map[string]bool {
		out := map[string]bool{}
		for _, r := range byTestID(p.Doc, "replay-row") {
			out[attr(r, "data-id")] = true
		}
		return out
	}
	p := c.get("/admin/replays?tenant=" + tn.ID.String())
	if got := ids(p); !got[real.String()] || got[dry.String()] {
		t.Errorf("default list %v: want the real replay only", got)
	}
	if attr(one(t, p.Doc, "tab-real"), "aria-current") != "page" {
		t.Error("the real replays' tab is not current")
	}
	dryHref := attr(one(t, p.Doc, "tab-dry"), "href")
	if dryHref != "/admin/replays?dry_run=1&tenant="+tn.ID.String() {
		t.Errorf("dry runs tab %q", dryHref)
	}
	p = c.get(dryHref)
	if got := ids(p); got[real.String()] || !got[dry.String()] {
		t.Errorf("dry runs list %v: want the dry run only", got)
	}
	one(t, p.Doc, "dry-run-note")
	if len(byTestID(p.Doc, "dry-run")) != 1 || attr(one(t, p.Doc, "tab-dry"), "aria-current") != "page" {
		t.Error("dry run not marked or its tab not current")
	}
}

// A customer's recover previews are limited per subscription; the refused one says so on the page.
func TestRecoverPreviewLimitOnPage(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	tn := e.newTenant("recover-limit")
	sub := e.newSubscription(tn, "/bad/recover-limit", "limited")
	c := e.client()
	c.login(tn.Email)
	path := "/subscriptions/" + sub.ID.String()
	form := url.Values{"action": {"preview"}, "since": {formTimeOf(time.Now().Add(-time.Hour))}}
	for i := range 5 {
		if p := c.post(path+"/recover", form); p.Status != http.StatusOK || len(byTestID(p.Doc, "recover-preview-result")) != 1 {
			t.Fatalf("preview %d: %s", i+1, p)
		}
	}
	p := c.post(path+"/recover", form)
	if p.URL.Path != path {
		t.Fatalf("limited preview: %s", p)
	}
	if got := text(one(t, p.Doc, "flash")); !strings.HasPrefix(got, "Not previewed: too many recover previews of this subscription") {
		t.Errorf("limited preview says %q", got)
	}
}

// /admin/dead shows where the dead letters are: by hour (a chart with its numbers in a table) and by
// tenant, endpoint and status, each group linking to the replay form filled with its window.
func TestDeadLettersByHourAndGroups(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("dead-groups")
	sub := e.newSubscription(tn, "/bad/dead-groups", "groups")
	before := time.Now()
	e.deadOf(tn, sub.ID, "order.paid", 3)
	c := e.client()
	c.login(adminEmail)

	p := c.get("/admin/dead?tenant=" + tn.ID.String())
	if p.Status != http.StatusOK {
		t.Fatal(p)
	}
	chart := one(t, p.Doc, "dead-chart")
	if attr(chart, "data-total") != "3" || text(one(t, chart, "dead-chart-note")) != "the last 48 hours" {
		t.Errorf("chart total %s, note %q", attr(chart, "data-total"), text(one(t, chart, "dead-chart-note")))
	}
	bars, sum := byTestID(chart, "dead-bar"), 0
	for _, b := range bars {
		n, _ := strconv.Atoi(attr(b, "data-count"))
		sum += n
	}
	if len(bars) < 48 || len(bars) > 49 || sum != 3 {
		t.Errorf("%d bars holding %d dead letters", len(bars), sum)
	}
	if rows := findAll(one(t, chart, "dead-chart-table"), tag("tr")); len(rows) != len(bars)+1 {
		t.Errorf("chart table has %d rows for %d bars", len(rows), len(bars))
	}
	groups := byTestID(p.Doc, "dead-group")
	if len(groups) != 1 || text(one(t, groups[0], "group-count")) != "3" || text(one(t, groups[0], "group-status")) != "400" {
		t.Fatalf("groups: %d %q", len(groups), text(one(t, p.Doc, "dead-groups")))
	}
	href := attr(one(t, groups[0], "group-replay"), "href")
	u, err := url.Parse(href)
	if err != nil || u.Path != "/admin/replay" || u.Query().Get("tenant") != tn.ID.String() || u.Query().Get("subscription") != sub.ID.String() {
		t.Fatalf("group replay link %q", href)
	}
	from, err1 := time.Parse("2006-01-02T15:04", u.Query().Get("from"))
	to, err2 := time.Parse("2006-01-02T15:04", u.Query().Get("to"))
	if err1 != nil || err2 != nil || from.After(before) || !to.After(time.Now().Add(-time.Minute)) || to.Sub(from) > 3*time.Minute {
		t.Errorf("group window %s to %s (dead letters created from %s)", from, to, before.UTC())
	}
	// The link previews exactly those three.
	p = c.get(href)
	if got := attr(one(t, p.Doc, "matched"), "data-matched"); got != "3" {
		t.Errorf("replay form from the group matched %q", got)
	}

	// A filtered range is charted as asked, not the last 48 hours.
	q := url.Values{"tenant": {tn.ID.String()}, "from": {formTimeOf(time.Now().Add(-3 * time.Hour))}, "to": {formTimeOf(time.Now().Add(time.Hour))}}
	p = c.get("/admin/dead?" + q.Encode())
	chart = one(t, p.Doc, "dead-chart")
	if n := len(byTestID(chart, "dead-bar")); n < 4 || n > 5 || attr(chart, "data-total") != "3" || len(byTestID(chart, "dead-chart-note")) != 0 {
		t.Errorf("filtered chart: %d bars, total %s", n, attr(chart, "data-total"))
	}
}
