package replays_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5"
)

// Replays run on the API/dashboard pool (plans per call), as the server wires them.
func (e *env) replays() *replays.Replays {
	e.t.Helper()
	pool, err := server.Connect(context.Background(), urlOf(e.t), 8, server.PlanPerCall)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(pool.Close)
	return replays.NewReplays(pool, e.policy, e.clock.Now)
}

func (e *env) runner(rp *replays.Replays) *replays.ReplayRunner {
	r := replays.NewReplayRunner(rp, quietLog)
	r.SetChunkRate(0)
	return r
}

// rows describes deliveries inserted directly (one event each), created from createdAt on, step apart.
type rows struct {
	tenant, sub uuid.UUID
	n           int
	state       delivery.State
	reason      string // dead_reason; "" is NULL
	eventType   string // "" is order.created
	createdAt   time.Time
	step        time.Duration
	deadAt      time.Time // for failed and expired rows; zero: an hour before the clock
	discarded   bool
}

// insert creates the rows with 7 attempts in their history, 3 in the current schedule and the last
// attempt's error fields set, and returns their ids in (created_at, id) order.
func (e *env) insert(r rows) []uuid.UUID {
	e.t.Helper()
	if r.tenant == uuid.Nil {
		r.tenant = e.tenant
	}
	if r.eventType == "" {
		r.eventType = "order.created"
	}
	if r.deadAt.IsZero() {
		r.deadAt = e.clock.Now().Add(-time.Hour)
	}
	var reason *string
	if r.reason != "" {
		reason = &r.reason
	}
	rs, err := e.pool.Query(e.ctx, `
		WITH ev AS (
			INSERT INTO events (tenant_id, event_type, body, created_at)
			SELECT $1, $4, convert_to('{"n":' || g || '}', 'UTF8'), $6::timestamptz + (g - 1) * $7::interval
			FROM generate_series(1, $5::int) g
			RETURNING id, created_at
		)
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at,
		    created_at, updated_at, attempt_count, total_attempts, last_attempt_at, last_status, last_error, last_response,
		    dead_reason, dead_at, discarded_at)
		SELECT $1, ev.id, $2, $4, $3, ev.created_at, ev.created_at + interval '1 day', ev.created_at, $8, 3, 7, $8, 500,
		       'boom', 'oops', $9, CASE WHEN $3 IN ('failed', 'expired') THEN $8::timestamptz END,
		       CASE WHEN $10::bool THEN $8::timestamptz END
		FROM ev
		RETURNING id, created_at`,
		r.tenant, r.sub, string(r.state), r.eventType, r.n, r.createdAt, r.step, r.deadAt, reason, r.discarded)
	if err != nil {
		e.t.Fatalf("insert %d %s rows: %v", r.n, r.state, err)
	}
	type idAt struct {
		id uuid.UUID
		at time.Time
	}
	got, err := pgx.CollectRows(rs, func(row pgx.CollectableRow) (idAt, error) {
		var x idAt
		return x, row.Scan(&x.id, &x.at)
	})
	if err != nil || len(got) != r.n {
		e.t.Fatalf("insert %d rows: got %d, %v", r.n, len(got), err)
	}
	slices.SortFunc(got, func(a, b idAt) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id.String(), b.id.String())
	})
	ids := make([]uuid.UUID, len(got))
	for i, x := range got {
		ids[i] = x.id
	}
	return ids
}

// snapshot returns every column of the rows as JSON, to prove later that nothing changed.
func (e *env) snapshot(ids []uuid.UUID) map[uuid.UUID]string {
	e.t.Helper()
	rs, err := e.pool.Query(e.ctx, `SELECT id, row_to_json(d)::text FROM webhook_deliveries d WHERE id = ANY($1)`, ids)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[uuid.UUID]string{}
	for rs.Next() {
		var id uuid.UUID
		var s string
		if err := rs.Scan(&id, &s); err != nil {
			e.t.Fatal(err)
		}
		out[id] = s
	}
	if rs.Err() != nil || len(out) != len(ids) {
		e.t.Fatalf("snapshot: %d of %d rows, %v", len(out), len(ids), rs.Err())
	}
	return out
}

func (e *env) wantUnchanged(before map[uuid.UUID]string, what string) {
	e.t.Helper()
	ids := make([]uuid.UUID, 0, len(before))
	for id := range before {
		ids = append(ids, id)
	}
	after := e.snapshot(ids)
	for id, b := range before {
		if after[id] != b {
			e.t.Errorf("%s: row changed:\n before %s\n after  %s", what, b, after[id])
			return
		}
	}
}

func (e *env) getReplay(rp *replays.Replays, id uuid.UUID) replays.Replay {
	e.t.Helper()
	r, err := rp.Get(e.ctx, id, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) step(rp *replays.Replays, id uuid.UUID) (taken, done bool) {
	e.t.Helper()
	taken, done, err := rp.Step(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Step: %v", err)
	}
	return taken, done
}

func (e *env) otherTenant(name string) (uuid.UUID, subscriptions.Subscription) {
	e.t.Helper()
	tn, err := tenants.NewService(e.pool, "").CreateTenant(e.ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	url := "http://127.0.0.1:1/" + name
	s, _, err := e.subs.Create(e.ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		e.t.Fatal(err)
	}
	return tn.ID, s
}

func ptr[T any](v T) *T { return &v }

func concat(lists ...[]uuid.UUID) []uuid.UUID {
	var out []uuid.UUID
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func TestReplayMovesExactlyTheMatchingRowsInChunks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	otherTenant, otherSub := e.otherTenant("globex")
	now := e.clock.Now()
	from, to := now.Add(-48*time.Hour), now.Add(-47*time.Hour)
	matching, before := e.seedReplayRows(t, sub.ID, otherTenant, otherSub.ID, from, to)

	f := replays.DeadFilter{TenantID: &e.tenant, EventType: "order.created", States: []delivery.State{delivery.Failed},
		DeadReason: delivery.ReasonPermanentStatus, CreatedFrom: &from, CreatedTo: &to}
	const spread = 10 * time.Minute
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f, Spread: spread, Actor: "ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != replays.ReplayRunning || r.Matched != 2500 || r.Scheduled != 0 || r.DryRun || r.Kind != replays.ReplayBulk ||
		r.SpreadSeconds != 600 || r.Actor != "ops@example.com" || !r.StartedAt.Equal(now) {
		t.Fatalf("started replay: %+v", r)
	}
	if ids, err := rp.Running(e.ctx); err != nil || !slices.Equal(ids, []uuid.UUID{r.ID}) {
		t.Fatalf("Running = %v, %v", ids, err)
	}

	e.clock.Advance(time.Minute)
	stepAt := e.clock.Now()
	for i, want := range []int64{1000, 2000, 2500} {
		taken, done := e.step(rp, r.ID)
		got := e.getReplay(rp, r.ID)
		if !taken || done || got.Scheduled != want || got.State != replays.ReplayRunning {
			t.Fatalf("step %d: taken %v done %v, replay %+v; want %d scheduled", i+1, taken, done, got, want)
		}
		if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE replay_id = $1", r.ID); int64(n) != want {
			t.Fatalf("step %d: %d rows carry the replay, its count says %d", i+1, n, want)
		}
	}
	if taken, done := e.step(rp, r.ID); !taken || !done {
		t.Fatalf("the step after the last chunk: taken %v done %v, want the replay finished", taken, done)
	}
	got := e.getReplay(rp, r.ID)
	if got.State != replays.ReplayFinished || got.Matched != 2500 || got.Scheduled != 2500 || got.Skipped != 0 ||
		got.FinishedAt == nil || !got.FinishedAt.Equal(stepAt) || got.Progress() != 1 || got.Error != "" {
		t.Fatalf("finished replay: %+v", got)
	}
	if taken, _ := e.step(rp, r.ID); taken {
		t.Fatal("a finished replay was taken again")
	}
	if ids, _ := rp.Running(e.ctx); len(ids) != 0 {
		t.Fatalf("Running after the end: %v", ids)
	}

	checkReplayReset(t, e, r.ID, matching, stepAt, spread)
	e.wantUnchanged(before, "non-matching rows")

	checkReplayDeliveries(t, e, rp, r.ID, matching)

	// The same replay again finds only the rows that died after the first one started.
	again, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f, Actor: "ops@example.com"})
	if err != nil || again.State != replays.ReplayRunning || again.Matched != 5 || again.SpreadSeconds != int(replays.DefaultSpread.Seconds()) {
		t.Fatalf("second replay: %+v, %v", again, err)
	}
}

// seedReplayRows inserts the 2,500 dead rows of sub that a replay of [from, to) matches, rows of every kind
// around them that it must leave alone (their snapshot is before), and three attempts of history.
func (e *env) seedReplayRows(t *testing.T, sub, otherTenant, otherSub uuid.UUID, from, to time.Time) (matching []uuid.UUID, before map[uuid.UUID]string) {
	now := e.clock.Now()
	dead := rows{sub: sub, state: delivery.Failed, reason: delivery.ReasonPermanentStatus}
	with := func(f func(*rows)) rows { r := dead; f(&r); return r }

	// 2,500 matching rows: one on created_from itself, 1,499 sharing one created_at (the first chunk ends in
	// the middle of them, so the cursor must order by id too), 1,000 a millisecond apart.
	matching = concat(
		e.insert(with(func(r *rows) { r.n, r.createdAt = 1, from })),
		e.insert(with(func(r *rows) { r.n, r.createdAt = 1499, from.Add(10*time.Minute) })),
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.step = 1000, from.Add(20*time.Minute), time.Millisecond })),
	)
	in := from.Add(30 * time.Minute)
	others := concat(
		e.insert(with(func(r *rows) { r.n, r.tenant, r.sub, r.createdAt = 5, otherTenant, otherSub, in })),
		e.insert(with(func(r *rows) { r.n, r.createdAt = 5, from.Add(-time.Millisecond) })),
		e.insert(with(func(r *rows) { r.n, r.createdAt = 3, to })), // created_to is exclusive
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.state, r.reason = 5, in, delivery.Delivered, "" })),
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.state, r.reason = 5, in, delivery.Pending, "" })),
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.discarded = 5, in, true })),
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.state = 5, in, delivery.Expired })),
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.reason = 5, in, delivery.ReasonSubscriptionDeleted })),
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.eventType = 5, in, "invoice.paid" })),
		// Dead only after the replay starts: not the replay's to take.
		e.insert(with(func(r *rows) { r.n, r.createdAt, r.deadAt = 5, in, now.Add(time.Second) })),
	)
	before = e.snapshot(others)
	for _, id := range matching[:3] {
		if _, err := e.pool.Exec(e.ctx, `INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt,
			started_at, duration_ms, status, outcome, request_url, request_headers)
			VALUES ($1, $2, $3, 7, $4, 5, 500, 'retry', 'http://127.0.0.1:1/a', '{}')`, id, e.tenant, sub, now); err != nil {
			t.Fatal(err)
		}
	}

	return matching, before
}

// checkReplayReset checks that every matching row, and only those, is back in the queue with a fresh
// schedule, spread over spread from stepAt, and its history kept.
func checkReplayReset(t *testing.T, e *env, replayID uuid.UUID, matching []uuid.UUID, stepAt time.Time, spread time.Duration) {
	if n := e.count(`SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'pending' AND attempt_count = 0
		AND total_attempts = 7 AND last_status IS NULL AND last_error IS NULL AND last_response IS NULL
		AND dead_reason IS NULL AND dead_at IS NULL AND discarded_at IS NULL AND replay_id = $2 AND give_up_at = $3
		AND next_attempt_at >= $4 AND next_attempt_at <= $5 AND updated_at = $4`,
		matching, replayID, stepAt.Add(e.policy.Window), stepAt, stepAt.Add(spread)); n != 2500 {
		t.Fatalf("%d of 2500 matching rows were reset as a replay resets them", n)
	}
	var lo, hi time.Time
	if err := e.pool.QueryRow(e.ctx, `SELECT min(next_attempt_at), max(next_attempt_at) FROM webhook_deliveries WHERE replay_id = $1`,
		replayID).Scan(&lo, &hi); err != nil {
		t.Fatal(err)
	}
	if hi.Sub(lo) < spread/2 {
		t.Errorf("first attempts span %s of a %s spread: not spread", hi.Sub(lo), spread)
	}
	if n := e.count("SELECT count(*) FROM webhook_attempts WHERE delivery_id = ANY($1)", matching); n != 3 {
		t.Errorf("%d attempt rows left, want the 3 of the history", n)
	}
}

// checkReplayDeliveries pages through the replay's Deliveries: exactly the matching rows, each once.
func checkReplayDeliveries(t *testing.T, e *env, rp *replays.Replays, replayID uuid.UUID, matching []uuid.UUID) {
	seen := map[uuid.UUID]bool{}
	cur := ""
	for pages := 0; ; pages++ {
		p, err := rp.Deliveries(e.ctx, replayID, 100, cur)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Items {
			if seen[d.ID] || d.ReplayID == nil || *d.ReplayID != replayID {
				t.Fatalf("Deliveries: %s twice or not the replay's", d.ID)
			}
			seen[d.ID] = true
		}
		if cur = p.NextCursor; cur == "" {
			break
		}
		if pages > 30 {
			t.Fatal("Deliveries does not end")
		}
	}
	for _, id := range matching {
		if !seen[id] {
			t.Fatalf("Deliveries misses %s (%d seen)", id, len(seen))
		}
	}
}

func TestReplayRunnerFinishesEveryRunningReplay(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	a := e.insert(rows{sub: sub.ID, n: 1200, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	b := e.insert(rows{sub: sub.ID, n: 300, state: delivery.Expired, reason: delivery.ReasonMaxAttempts, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	ra, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to,
		States: []delivery.State{delivery.Failed}}, Spread: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to,
		DeadReason: delivery.ReasonMaxAttempts}, Spread: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ra.Matched != 1200 || rb.Matched != 300 {
		t.Fatalf("matched %d and %d, want 1200 and 300", ra.Matched, rb.Matched)
	}
	// Started runs the background runner at once: no poll interval passes in this test.
	run := e.runner(rp)
	run.Poll = time.Hour
	rp.Started = run.Wake
	if err := run.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer run.Stop(context.Background())
	eventually(t, 20*time.Second, "both replays to finish", func() bool {
		ids, err := rp.Running(e.ctx)
		return err == nil && len(ids) == 0
	})
	for _, c := range []struct {
		id  uuid.UUID
		ids []uuid.UUID
	}{{ra.ID, a}, {rb.ID, b}} {
		got := e.getReplay(rp, c.id)
		if got.State != replays.ReplayFinished || got.Scheduled != int64(len(c.ids)) || got.Skipped != 0 {
			t.Errorf("replay: %+v", got)
		}
		if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'pending' AND replay_id = $2",
			c.ids, c.id); n != len(c.ids) {
			t.Errorf("%d of %d rows scheduled by their replay", n, len(c.ids))
		}
	}
	// A replay started while the runner waits is run at once through Started.
	c := e.insert(rows{sub: sub.ID, n: 10, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from})
	rc, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}})
	if err != nil || rc.Matched != 10 {
		t.Fatalf("third replay: %+v, %v", rc, err)
	}
	eventually(t, 10*time.Second, "the woken runner to finish the third replay", func() bool {
		return e.getReplay(rp, rc.ID).State == replays.ReplayFinished
	})
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND replay_id = $2", c, rc.ID); n != 10 {
		t.Errorf("third replay scheduled %d of 10", n)
	}
}

func TestReplayDryRunAndPreviewChangeNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub1, _ := e.subscribe("http://127.0.0.1:1/one", subscriptions.Input{})
	sub2, _ := e.subscribe("http://127.0.0.1:1/two", subscriptions.Input{})
	otherTenant, otherSub := e.otherTenant("globex")
	now := e.clock.Now()
	from, to := now.Add(-2*time.Hour), now.Add(-time.Hour)
	in := from.Add(time.Minute)
	dead := func(tenant, sub uuid.UUID, n int) []uuid.UUID {
		return e.insert(rows{tenant: tenant, sub: sub, n: n, state: delivery.Failed, reason: delivery.ReasonPermanentStatus,
			createdAt: in, step: time.Second})
	}
	one, two, other := dead(e.tenant, sub1.ID, 25), dead(e.tenant, sub2.ID, 3), dead(otherTenant, otherSub.ID, 5)
	outside := e.insert(rows{sub: sub1.ID, n: 4, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: to})
	all := concat(one, two, other, outside)
	before := e.snapshot(all)
	matching := map[uuid.UUID]bool{}
	for _, id := range concat(one, two, other) {
		matching[id] = true
	}

	f := replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}
	p, err := rp.Preview(e.ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if p.Matched != 33 {
		t.Fatalf("preview matched %d, want 33", p.Matched)
	}
	checkPreview(t, p, matching, []previewGroup{{e.tenant, sub1.ID, 25, "acme"}, {otherTenant, otherSub.ID, 5, "globex"}, {e.tenant, sub2.ID, 3, "acme"}})
	sp, err := rp.Preview(e.ctx, replays.DeadFilter{SubscriptionID: &sub2.ID, CreatedFrom: &from, CreatedTo: &to})
	if err != nil || sp.Matched != 3 || len(sp.Groups) != 1 || len(sp.Sample) != 3 {
		t.Fatalf("preview of one subscription: %+v, %v", sp, err)
	}

	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f, DryRun: true, Actor: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.DryRun || r.State != replays.ReplayFinished || r.Matched != 33 || r.Scheduled != 0 || r.Skipped != 0 ||
		r.FinishedAt == nil || len(r.Sample) != replays.PreviewSampleSize {
		t.Fatalf("dry run: %+v", r)
	}
	for _, id := range r.Sample {
		if !matching[id] {
			t.Fatalf("dry run sample holds %s, which does not match", id)
		}
	}
	if ids, _ := rp.Running(e.ctx); len(ids) != 0 {
		t.Fatalf("a dry run is left for the runners: %v", ids)
	}
	if taken, _ := e.step(rp, r.ID); taken {
		t.Fatal("a dry run was taken by Step")
	}
	got := e.getReplay(rp, r.ID)
	if !got.DryRun || got.State != replays.ReplayFinished || got.Matched != 33 || got.Criteria.CreatedFrom == nil ||
		!got.Criteria.CreatedFrom.Equal(from) || !got.Criteria.CreatedTo.Equal(to) {
		t.Fatalf("recorded dry run: %+v", got)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE replay_id IS NOT NULL"); n != 0 {
		t.Errorf("%d rows carry a replay after a dry run", n)
	}
	e.wantUnchanged(before, "after preview and dry run")
}

// previewGroup is a group a preview should show: a tenant's subscription with n matching deliveries.
type previewGroup struct {
	tenant, sub uuid.UUID
	n           int64
	name        string
}

// checkPreview checks a preview's groups (largest first) and its sample (newest first, matching only).
func checkPreview(t *testing.T, p replays.Preview, matching map[uuid.UUID]bool, wantGroups []previewGroup) {
	if len(p.Groups) != len(wantGroups) {
		t.Fatalf("groups: %+v", p.Groups)
	}
	for i, w := range wantGroups {
		g := p.Groups[i]
		if g.TenantID != w.tenant || g.SubscriptionID != w.sub || g.Deliveries != w.n || g.TenantName != w.name || g.SubscriptionURL == "" {
			t.Errorf("group %d = %+v, want %s/%s with %d", i, g, w.name, w.sub, w.n)
		}
	}
	if len(p.Sample) != replays.PreviewSampleSize {
		t.Fatalf("sample of %d, want %d", len(p.Sample), replays.PreviewSampleSize)
	}
	for i, d := range p.Sample {
		if !matching[d.ID] {
			t.Fatalf("sample holds %s, which does not match", d.ID)
		}
		if i > 0 && (d.CreatedAt.After(p.Sample[i-1].CreatedAt) ||
			d.CreatedAt.Equal(p.Sample[i-1].CreatedAt) && d.ID.String() > p.Sample[i-1].ID.String()) {
			t.Fatal("sample is not newest first")
		}
	}
}

func TestReplayValidation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	now := e.clock.Now()
	from, to := now.Add(-time.Hour), now
	cases := []struct {
		name   string
		f      replays.DeadFilter
		spread time.Duration
	}{
		{"no created_from", replays.DeadFilter{CreatedTo: &to}, 0},
		{"no created_to", replays.DeadFilter{CreatedFrom: &from}, 0},
		{"no range", replays.DeadFilter{}, 0},
		{"empty range", replays.DeadFilter{CreatedFrom: &to, CreatedTo: &to}, 0},
		{"reversed range", replays.DeadFilter{CreatedFrom: &to, CreatedTo: &from}, 0},
		{"pending state", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to, States: []delivery.State{delivery.Pending}}, 0},
		{"delivered state", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to, States: []delivery.State{delivery.Failed, delivery.Delivered}}, 0},
		{"unknown state", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to, States: []delivery.State{"dead"}}, 0},
		{"unknown dead reason", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to, DeadReason: "timeout"}, 0},
		{"bad event type", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to, EventType: "no spaces allowed"}, 0},
		{"negative spread", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}, -time.Second},
		{"spread over a day", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}, replays.MaxSpread + time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: c.f, Spread: c.spread})
			wantFault(t, err, fault.InvalidRequest)
			if c.spread == 0 {
				_, err = rp.Preview(e.ctx, c.f)
				wantFault(t, err, fault.InvalidRequest)
			}
		})
	}
	if n := e.count("SELECT count(*) FROM replays"); n != 0 {
		t.Errorf("%d replays recorded by invalid requests", n)
	}
	// The longest spread is allowed.
	if _, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to},
		Spread: replays.MaxSpread}); err != nil {
		t.Errorf("a spread of exactly MaxSpread: %v", err)
	}
	// The dead-letter list checks its filter and its paging the same way.
	_, err := rp.DeadLetters(e.ctx, replays.DeadFilter{States: []delivery.State{delivery.InFlight}}, 10, "", 0)
	wantFault(t, err, fault.InvalidRequest)
	_, err = rp.DeadLetters(e.ctx, replays.DeadFilter{}, deliveries.MaxPageSize+1, "", 0)
	wantFault(t, err, fault.InvalidRequest)
	_, err = rp.DeadLetters(e.ctx, replays.DeadFilter{}, 10, "not-a-cursor", 0)
	wantFault(t, err, fault.InvalidRequest)
	_, err = rp.Get(e.ctx, uuid.New(), nil)
	wantFault(t, err, fault.NotFound)
}

// Two replays over the same rows, worked at the same time by different runners: each row is scheduled by
// exactly one of them, and what one scheduled the other counts as skipped.
func TestOverlappingReplaysScheduleEachRowOnce(t *testing.T) {
	t.Parallel()
	const n = 2500
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	ids := e.insert(rows{sub: sub.ID, n: n, state: delivery.Expired, reason: delivery.ReasonDeadline, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	f := replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}

	check := func(a, b replays.Replay) { t.Helper(); checkOverlapping(t, e, rp, a.ID, b.ID, ids) }
	reset := func() {
		if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = 'expired', dead_reason = 'deadline',
			dead_at = $2, replay_id = NULL WHERE id = ANY($1)`, ids, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
	}

	t.Run("interleaved steps", func(t *testing.T) {
		a, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		b, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		// A takes rows 1-1000; B passes over them to 1001-2000; A goes on after its cursor to 2001-2500, and
		// B finds nothing dead after its own.
		for i := range 3 {
			e.step(rp, a.ID)
			e.step(rp, b.ID)
			if i == 0 {
				if got := e.getReplay(rp, b.ID).Scheduled; got != 1000 {
					t.Fatalf("B's first chunk scheduled %d, want the next 1000 dead rows", got)
				}
			}
		}
		check(a, b)
	})

	t.Run("concurrent runners", func(t *testing.T) {
		for round := range 3 {
			reset()
			a, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			b, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			if a.Matched != n || b.Matched != n {
				t.Fatalf("round %d matched %d and %d", round, a.Matched, b.Matched)
			}
			e.runTogether(rp, a.ID, b.ID)
			e.runner(rp).RunAll(e.ctx) // whatever a runner that found its replay held left behind
			check(a, b)
		}
	})
}

// checkOverlapping checks two replays of the same n rows (ids) that ran together: both finished, and
// each row scheduled by exactly one of them.
func checkOverlapping(t *testing.T, e *env, rp *replays.Replays, aID, bID uuid.UUID, ids []uuid.UUID) {
	t.Helper()
	n := int64(len(ids))
	a, b := e.getReplay(rp, aID), e.getReplay(rp, bID)
	if a.State != replays.ReplayFinished || b.State != replays.ReplayFinished || a.Matched != n || b.Matched != n {
		t.Fatalf("replays: %+v / %+v", a, b)
	}
	if a.Scheduled+b.Scheduled != n || a.Skipped+b.Skipped != n {
		t.Fatalf("scheduled %d + %d, skipped %d + %d; want both sums %d", a.Scheduled, b.Scheduled, a.Skipped, b.Skipped, n)
	}
	na := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'pending' AND replay_id = $2", ids, a.ID)
	nb := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'pending' AND replay_id = $2", ids, b.ID)
	if int64(na) != a.Scheduled || int64(nb) != b.Scheduled {
		t.Fatalf("rows carry %d and %d, the replays say %d and %d", na, nb, a.Scheduled, b.Scheduled)
	}
}

// runTogether runs several runners at once, as several processes would run them: two on replay a (one of
// them finds it held and leaves it), one on b, one running everything.
func (e *env) runTogether(rp *replays.Replays, a, b uuid.UUID) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, fn := range []func(ctx context.Context){
		func(ctx context.Context) { e.runner(rp).Run(ctx, a) },
		func(ctx context.Context) { e.runner(rp).Run(ctx, b) },
		func(ctx context.Context) { e.runner(rp).Run(ctx, a) },
		func(ctx context.Context) { e.runner(rp).RunAll(ctx) },
	} {
		wg.Go(func() {
			<-start
			fn(e.ctx)
		})
	}
	close(start)
	wg.Wait()
}

// A replay racing manual retries and a started worker that delivers what it schedules: no delivery is
// scheduled twice, the receiver gets each webhook once per schedule, and rows that died after the replay
// started are left alone.
func TestReplayRacesRetriesAndWorkers(t *testing.T) {
	t.Parallel()
	const n = 2500
	e := setup(t)
	rp := e.replays()
	rcv := newReceiver(t, nil)
	gone := newReceiver(t, statuses(http.StatusGone))
	sub, _ := e.subscribe(rcv.URL(), subscriptions.Input{EventTypes: &[]string{"order.created"}})
	e.subscribe(gone.URL(), subscriptions.Input{EventTypes: &[]string{"invoice.paid"}})
	start := e.clock.Now()
	from := start.Add(-time.Hour)
	ids := e.insert(rows{sub: sub.ID, n: n, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	var lateIDs []uuid.UUID
	for i := range 5 {
		p := e.publish("invoice.paid", fmt.Sprintf(`{"late":%d}`, i))
		lateIDs = append(lateIDs, uuid.MustParse(p.Deliveries[0].ID))
	}
	to := start.Add(time.Hour)
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{TenantID: &e.tenant, CreatedFrom: &from, CreatedTo: &to},
		Spread: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Matched != n {
		t.Fatalf("matched %d, want %d", r.Matched, n)
	}

	// After the replay started, the worker sends the five pending deliveries, which die (410).
	e.clock.Advance(time.Second)
	// The worker runs no rescuer (the maintenance leader does), so a slow attempt on the fast clock below is
	// never taken for a dead one.
	w := e.worker(delivery.WorkerOptions{Concurrency: 16, PollInterval: 20 * time.Millisecond}, nil)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	eventually(t, 10*time.Second, "the late deliveries to die", func() bool {
		return e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'failed'", lateIDs) == len(lateIDs)
	})

	// Now the replay, retries of some of its rows and the worker all run at once, while the clock runs.
	var retried sync.Map // delivery id -> successful retries
	stopClock := e.runClock()
	run := e.runner(rp)
	if err := run.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer run.Stop(context.Background())
	targets := append(slices.Clone(ids[:10]), ids[n-10:]...) // first and last chunk
	retryConcurrently(t, e, targets, &retried)
	eventually(t, 60*time.Second, "the replay to finish and the worker to deliver everything", func() bool {
		return e.getReplay(rp, r.ID).State == replays.ReplayFinished &&
			e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'delivered'", ids) == n
	})
	stopClock()
	checkRacedReplay(t, e, e.getReplay(rp, r.ID), ids, targets, &retried, rcv)
	checkLateRowsUntouched(t, e, e.getReplay(rp, r.ID), lateIDs, gone)
}

// checkRacedReplay checks a replay that raced retries of targets: every row scheduled once by the replay
// or a retry that came first, and the receiver sent each webhook once per schedule.
func checkRacedReplay(t *testing.T, e *env, got replays.Replay, ids, targets []uuid.UUID, retried *sync.Map, rcv *receiver) {
	n := int64(len(ids))
	carried := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND replay_id = $2", ids, got.ID)
	if got.Scheduled != int64(carried) || got.Scheduled+got.Skipped != n {
		t.Fatalf("replay scheduled %d, skipped %d; %d rows carry it", got.Scheduled, got.Skipped, carried)
	}
	// A row the replay skipped was moved by a retry that came first.
	skipped := 0
	for _, id := range targets {
		if d := e.delivery(id); d.ReplayID == nil {
			skipped++
			if _, ok := retried.Load(id); !ok {
				t.Errorf("%s was neither replayed nor retried", id)
			}
		}
	}
	if int64(skipped) != got.Skipped {
		t.Errorf("%d retried-first rows, the replay skipped %d", skipped, got.Skipped)
	}
	// The receiver got each webhook once per schedule: one for the replay or the retry that won, one more
	// for each retry (resend) of a delivered row.
	hits := map[string]int{}
	for _, req := range rcv.requests() {
		hits[req.Header.Get("webhook-id")]++
	}
	events := map[uuid.UUID]uuid.UUID{}
	for _, id := range ids {
		events[id] = e.delivery(id).EventID
	}
	total := 0
	for _, id := range ids {
		schedules := 0
		if d := e.delivery(id); d.ReplayID != nil {
			schedules = 1
		}
		if v, ok := retried.Load(id); ok {
			schedules += int(v.(*atomic.Int32).Load())
		}
		if h := hits[events[id].String()]; h != schedules {
			t.Errorf("delivery %s: receiver got its webhook %d times for %d schedules", id, h, schedules)
		}
		total += schedules
	}
	if rcv.hits() != total {
		t.Errorf("receiver got %d requests for %d schedules", rcv.hits(), total)
	}
}

// checkLateRowsUntouched checks that rows that died after the replay started stay dead, sent once.
func checkLateRowsUntouched(t *testing.T, e *env, got replays.Replay, lateIDs []uuid.UUID, gone *receiver) {
	for _, id := range lateIDs {
		d := e.delivery(id)
		if d.State != string(delivery.Failed) || d.ReplayID != nil || d.AttemptCount != 1 || d.DeadAt == nil || !d.DeadAt.After(got.StartedAt) {
			t.Errorf("late dead row was touched: %+v", d)
		}
	}
	if gone.hits() != len(lateIDs) {
		t.Errorf("the late rows' receiver got %d requests, want %d", gone.hits(), len(lateIDs))
	}
}

// retryConcurrently retries targets by hand from two goroutines at once, counting in retried the
// retries that succeeded; a retry may only fail as INVALID_STATE (the replay came first).
func retryConcurrently(t *testing.T, e *env, targets []uuid.UUID, retried *sync.Map) {
	var retries sync.WaitGroup
	for g := range 2 {
		retries.Go(func() {
			for i := g; i < len(targets); i += 2 {
				id := targets[i]
				_, err := e.svc.Retry(e.ctx, e.tenant, id, deliveries.Actor{Admin: true})
				if err == nil {
					v, _ := retried.LoadOrStore(id, new(atomic.Int32))
					v.(*atomic.Int32).Add(1)
				} else if fe := fault.As(err); fe == nil || fe.Code != fault.InvalidState {
					t.Errorf("retry of %s: %v", id, err)
				}
			}
		})
	}
	retries.Wait()
}

// runClock moves the env's clock on 5 ms every 2 ms until the returned stop is called.
func (e *env) runClock() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				e.clock.Advance(5 * time.Millisecond)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func TestReplayResumesAfterCrash(t *testing.T) {
	t.Parallel()
	const n = 2500
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	ids := e.insert(rows{sub: sub.ID, n: n, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}})
	if err != nil {
		t.Fatal(err)
	}
	exact := func(what string) int64 { t.Helper(); return e.exactScheduled(t, rp, r.ID, what) }

	e.checkHeldReplayLeftAlone(t, rp, r.ID)

	// One runner does one chunk and dies.
	if taken, done := e.step(rp, r.ID); !taken || done {
		t.Fatal("first chunk not taken")
	}
	if got := exact("after one chunk"); got != 1000 {
		t.Fatalf("after one chunk: %d", got)
	}
	// Another is cancelled while it works: in the middle of a chunk's transaction or between chunks.
	e.runUntilCancelled(rp, r.ID)
	mid := exact("after the cancelled runner")
	if mid < 1000 || mid > n {
		t.Fatalf("after the cancel: %d", mid)
	}
	if got := e.getReplay(rp, r.ID); mid < n && got.State != replays.ReplayRunning {
		t.Fatalf("cancelled replay is %s", got.State)
	}

	// A fresh runner, as in another process, finishes it from the cursor. The cancelled runner's session may
	// hold the replay for a moment after the cancel (until the server sees the connection close); the runner
	// leaves a held replay to the next poll, which this loop stands for.
	fresh := e.runner(rp)
	eventually(t, 10*time.Second, "a fresh runner to finish the replay", func() bool {
		fresh.RunAll(e.ctx)
		return e.getReplay(rp, r.ID).State != replays.ReplayRunning
	})
	got := e.getReplay(rp, r.ID)
	if got.State != replays.ReplayFinished || got.Scheduled != n || got.Skipped != 0 || exact("finished") != n {
		t.Fatalf("resumed replay: %+v", got)
	}
	if c := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'pending' AND replay_id = $2", ids, r.ID); c != n {
		t.Fatalf("%d of %d rows scheduled", c, n)
	}
}

// exactScheduled fails unless the replay's count of scheduled rows is the rows that carry it, and
// returns it.
func (e *env) exactScheduled(t *testing.T, rp *replays.Replays, id uuid.UUID, what string) int64 {
	t.Helper()
	got := e.getReplay(rp, id)
	if c := e.count("SELECT count(*) FROM webhook_deliveries WHERE replay_id = $1 AND state = 'pending'", id); int64(c) != got.Scheduled {
		t.Fatalf("%s: %d rows scheduled, the replay says %d", what, c, got.Scheduled)
	}
	return got.Scheduled
}

// checkHeldReplayLeftAlone checks that a transaction holding the replay (another runner mid-chunk) makes
// Step and Run leave it alone.
func (e *env) checkHeldReplayLeftAlone(t *testing.T, rp *replays.Replays, id uuid.UUID) {
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	if _, err := tx.Exec(e.ctx, "SELECT 1 FROM replays WHERE id = $1 FOR UPDATE", id); err != nil {
		t.Fatal(err)
	}
	if taken, done := e.step(rp, id); taken || done {
		t.Fatalf("Step on a held replay: taken %v done %v", taken, done)
	}
	e.runner(rp).Run(e.ctx, id)
	if got := e.exactScheduled(t, rp, id, "held"); got != 0 {
		t.Fatalf("a held replay advanced to %d", got)
	}
}

// runUntilCancelled runs the replay in a runner that is cancelled once its second chunk is in: the runner
// is then in the middle of a chunk's transaction or between chunks. It returns when the runner has.
func (e *env) runUntilCancelled(rp *replays.Replays, id uuid.UUID) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.runner(rp).Run(ctx, id)
	}()
	go func() { // cancel once the second chunk is in: the runner is then in or before the third
		defer cancel()
		poll := time.NewTicker(time.Millisecond)
		defer poll.Stop()
		for {
			select {
			case <-done:
				return
			case <-poll.C:
			}
			var c int
			_ = e.pool.QueryRow(e.ctx, "SELECT count(*) FROM webhook_deliveries WHERE replay_id = $1", id).Scan(&c)
			if c > 1000 {
				return
			}
		}
	}()
	<-done
}

func TestRecover(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	sibling, _ := e.subscribe("http://127.0.0.1:1/b", subscriptions.Input{})
	now := e.clock.Now()
	dead := rows{sub: sub.ID, state: delivery.Failed, reason: delivery.ReasonPermanentStatus}
	with := func(f func(*rows)) rows { r := dead; f(&r); return r }

	t.Run("validation", func(t *testing.T) {
		_, err := rp.Recover(e.ctx, e.tenant, sub.ID, now.Add(-replays.RecoverMaxAge-time.Minute), false, "t")
		wantFault(t, err, fault.InvalidRequest)
		_, err = rp.Recover(e.ctx, e.tenant, sub.ID, now, false, "t")
		wantFault(t, err, fault.InvalidRequest)
		_, err = rp.Recover(e.ctx, e.tenant, sub.ID, now.Add(time.Hour), false, "t")
		wantFault(t, err, fault.InvalidRequest)
	})

	// 10,001 dead deliveries in the last two days: too many. 5,000 of them in the last day is fine.
	old := e.insert(with(func(r *rows) { r.n, r.createdAt, r.step = 5001, now.Add(-47*time.Hour), time.Millisecond }))
	recent := e.insert(with(func(r *rows) { r.n, r.createdAt, r.step = 5000, now.Add(-23*time.Hour), time.Millisecond }))
	siblings := e.insert(with(func(r *rows) { r.n, r.sub, r.createdAt = 50, sibling.ID, now.Add(-23*time.Hour) }))
	before := e.snapshot(concat(old, siblings))

	_, err := rp.Recover(e.ctx, e.tenant, sub.ID, now.Add(-48*time.Hour), false, "t")
	wantFault(t, err, fault.InvalidRequest)
	if n := e.count("SELECT count(*) FROM replays"); n != 0 {
		t.Fatalf("a refused recover was recorded (%d)", n)
	}

	since := now.Add(-24 * time.Hour)
	dry, err := rp.Recover(e.ctx, e.tenant, sub.ID, since, true, "t")
	if err != nil || !dry.DryRun || dry.State != replays.ReplayFinished || dry.Matched != 5000 {
		t.Fatalf("dry recover: %+v, %v", dry, err)
	}
	r, err := rp.Recover(e.ctx, e.tenant, sub.ID, since, false, "customer")
	if err != nil {
		t.Fatal(err)
	}
	// 5,000 at 20 a second is 250 s, under the 5-minute cap.
	if r.Kind != replays.ReplayRecover || r.State != replays.ReplayRunning || r.Matched != 5000 || r.SpreadSeconds != 250 ||
		r.TenantID == nil || *r.TenantID != e.tenant || r.SubscriptionID == nil || *r.SubscriptionID != sub.ID {
		t.Fatalf("recover: %+v", r)
	}
	refuseConcurrentRecovers(t, e, rp, sub.ID, since)
	// Another subscription's recover is its own.
	rs, err := rp.Recover(e.ctx, e.tenant, sibling.ID, since, true, "customer")
	if err != nil || rs.Matched != 50 {
		t.Fatalf("sibling dry recover: %+v, %v", rs, err)
	}

	checkRecoverSeenByItsTenant(t, e, rp, r.ID, sub.ID)

	stepAt := e.clock.Now()
	e.runner(rp).RunAll(e.ctx)
	got := e.getReplay(rp, r.ID)
	if got.State != replays.ReplayFinished || got.Scheduled != 5000 || got.Skipped != 0 {
		t.Fatalf("finished recover: %+v", got)
	}
	if n := e.count(`SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'pending' AND replay_id = $2
		AND next_attempt_at BETWEEN $3 AND $4`, recent, r.ID, stepAt, stepAt.Add(250*time.Second)); n != 5000 {
		t.Fatalf("%d of 5000 recovered rows scheduled within the spread", n)
	}
	e.wantUnchanged(before, "older rows and the sibling subscription's")

	// Finished, the subscription may be recovered again; with 10,000 the spread is capped at 5 minutes.
	if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = 'expired', dead_reason = 'deadline',
		dead_at = $2, replay_id = NULL WHERE id = ANY($1)`, recent, now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	big, err := rp.Recover(e.ctx, e.tenant, sub.ID, now.Add(-47*time.Hour+time.Millisecond), true, "customer") // all but the oldest
	if err != nil || big.Matched != 10000 || big.SpreadSeconds != int(replays.RecoverMaxSpread.Seconds()) {
		t.Fatalf("recover of exactly 10,000: %+v, %v", big, err)
	}
	small, err := rp.Recover(e.ctx, e.tenant, sibling.ID, now.Add(-48*time.Hour), false, "customer")
	if err != nil || small.Matched != 50 || small.SpreadSeconds != 3 { // 50 / 20 a second = 2.5 s, rounded up
		t.Fatalf("recover of 50: %+v, %v", small, err)
	}
}

// refuseConcurrentRecovers checks that a second recover of the subscription while one runs, even several
// at once, is refused.
func refuseConcurrentRecovers(t *testing.T, e *env, rp *replays.Replays, sub uuid.UUID, since time.Time) {
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := rp.Recover(e.ctx, e.tenant, sub, since, false, "customer")
			if fe := fault.As(err); fe == nil || fe.Code != fault.InvalidState {
				t.Errorf("concurrent recover: %v, want INVALID_STATE", err)
			}
		})
	}
	wg.Wait()
}

// checkRecoverSeenByItsTenant checks that the tenant sees its recovers and another tenant does not.
func checkRecoverSeenByItsTenant(t *testing.T, e *env, rp *replays.Replays, id, sub uuid.UUID) {
	if _, err := rp.Get(e.ctx, id, &e.tenant); err != nil {
		t.Fatal(err)
	}
	otherTenant, _ := e.otherTenant("globex")
	_, err := rp.Get(e.ctx, id, &otherTenant)
	wantFault(t, err, fault.NotFound)
	page, err := rp.List(e.ctx, replays.ReplayListFilter{TenantID: &e.tenant, SubscriptionID: &sub})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("tenant's recovers of the subscription: %d, %v", len(page.Items), err)
	}
}

func TestReplayFailsAfterRepeatedErrors(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	ids := e.insert(rows{sub: sub.ID, n: 2500, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}})
	if err != nil {
		t.Fatal(err)
	}
	e.step(rp, r.ID)
	// Its criteria lose their time range: every later chunk fails.
	if _, err := e.pool.Exec(e.ctx, "UPDATE replays SET criteria = criteria - 'created_from' WHERE id = $1", r.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rp.Step(e.ctx, r.ID); err == nil {
		t.Fatal("Step of a replay without a time range succeeded")
	}
	run := e.runner(rp)
	run.MaxFailures = 2 // one second's back-off between the two
	run.Run(e.ctx, r.ID)
	got := e.getReplay(rp, r.ID)
	if got.State != replays.ReplayFailed || got.Scheduled != 1000 || got.Skipped != 1500 || got.FinishedAt == nil ||
		!strings.Contains(got.Error, "time range") {
		t.Fatalf("failed replay: %+v", got)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'pending' AND replay_id = $2", ids, r.ID); n != 1000 {
		t.Fatalf("%d rows scheduled, want the first chunk's 1000", n)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND state = 'failed'", ids); n != 1500 {
		t.Fatalf("%d rows still dead, want 1500", n)
	}
	// Failing again changes nothing.
	if err := rp.Fail(e.ctx, r.ID, "again"); err != nil || e.getReplay(rp, r.ID).Error != got.Error {
		t.Fatalf("Fail of a failed replay: %v", err)
	}

	// A replay recorded without any range (as a corrupted row would be) fails on the first chunk, counts intact.
	var bad uuid.UUID
	if err := e.pool.QueryRow(e.ctx, `INSERT INTO replays (actor, criteria, matched, state, started_at, updated_at)
		VALUES ('ops', '{}', 7, 'running', $1, $1) RETURNING id`, e.clock.Now()).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	run.MaxFailures = 1
	run.RunAll(e.ctx)
	b := e.getReplay(rp, bad)
	if b.State != replays.ReplayFailed || b.Scheduled != 0 || b.Skipped != 7 || b.Error == "" {
		t.Fatalf("replay without a range: %+v", b)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE state = 'failed'"); n != 1500 {
		t.Fatalf("%d dead rows after the bad replay, want 1500", n)
	}
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	sub1, _ := e.subscribe("http://127.0.0.1:1/one", subscriptions.Input{})
	sub2, _ := e.subscribe("http://127.0.0.1:1/two", subscriptions.Input{})
	otherTenant, otherSub := e.otherTenant("globex")
	now := e.clock.Now()
	t0 := now.Add(-10 * time.Hour)
	// Groups sharing one created_at, so pages must break ties by id.
	failed := e.insert(rows{sub: sub1.ID, n: 30, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: t0})
	expired := e.insert(rows{sub: sub2.ID, n: 20, state: delivery.Expired, reason: delivery.ReasonMaxAttempts, eventType: "invoice.paid",
		createdAt: t0.Add(time.Hour), step: time.Minute})
	deleted := e.insert(rows{sub: sub2.ID, n: 7, state: delivery.Failed, reason: delivery.ReasonSubscriptionDeleted, createdAt: t0.Add(2 * time.Hour)})
	other := e.insert(rows{tenant: otherTenant, sub: otherSub.ID, n: 10, state: delivery.Expired, reason: delivery.ReasonDeadline, createdAt: t0})
	e.insert(rows{sub: sub1.ID, n: 5, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: t0, discarded: true})
	e.insert(rows{sub: sub1.ID, n: 5, state: delivery.Delivered, createdAt: t0})
	e.insert(rows{sub: sub1.ID, n: 5, state: delivery.Pending, createdAt: t0})

	for _, limit := range []int{1, 7, 30, 100} {
		sameDeadLetters(t, fmt.Sprintf("all, pages of %d", limit), allDeadLetters(t, e, rp, replays.DeadFilter{}, limit), failed, expired, deleted, other)
	}
	from, to := t0.Add(30*time.Minute), t0.Add(90*time.Minute)
	for _, c := range []struct {
		name string
		f    replays.DeadFilter
		want [][]uuid.UUID
	}{
		{"tenant", replays.DeadFilter{TenantID: &e.tenant}, [][]uuid.UUID{failed, expired, deleted}},
		{"other tenant", replays.DeadFilter{TenantID: &otherTenant}, [][]uuid.UUID{other}},
		{"subscription", replays.DeadFilter{SubscriptionID: &sub2.ID}, [][]uuid.UUID{expired, deleted}},
		{"event type", replays.DeadFilter{EventType: "invoice.paid"}, [][]uuid.UUID{expired}},
		{"failed", replays.DeadFilter{States: []delivery.State{delivery.Failed}}, [][]uuid.UUID{failed, deleted}},
		{"expired twice", replays.DeadFilter{States: []delivery.State{delivery.Expired, delivery.Expired}}, [][]uuid.UUID{expired, other}},
		{"dead reason", replays.DeadFilter{DeadReason: delivery.ReasonSubscriptionDeleted}, [][]uuid.UUID{deleted}},
		{"created range", replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}, [][]uuid.UUID{expired[:20]}},
		{"range and tenant", replays.DeadFilter{TenantID: &otherTenant, CreatedFrom: &from, CreatedTo: &to}, nil},
	} {
		got := allDeadLetters(t, e, rp, c.f, 6)
		sameDeadLetters(t, c.name, got, c.want...)
		p, err := rp.DeadLetters(e.ctx, c.f, 6, "", 0)
		if err != nil || p.Total != int64(len(got)) || p.TotalAtLeast {
			t.Errorf("%s: total %d (at least %v), want %d: %v", c.name, p.Total, p.TotalAtLeast, len(got), err)
		}
	}
	// Names for display.
	p, err := rp.DeadLetters(e.ctx, replays.DeadFilter{TenantID: &otherTenant}, 1, "", 0)
	if err != nil || len(p.Items) != 1 || p.Items[0].TenantName != "globex" || p.Items[0].SubscriptionURL != otherSub.URL ||
		p.Items[0].TenantID != otherTenant {
		t.Fatalf("dead letter display fields: %+v, %v", p.Items, err)
	}
	// The total is counted only so far.
	p, err = rp.DeadLetters(e.ctx, replays.DeadFilter{}, 5, "", 25)
	if err != nil || p.Total != 25 || !p.TotalAtLeast || len(p.Items) != 5 {
		t.Fatalf("capped total: %d (at least %v), %d items, %v", p.Total, p.TotalAtLeast, len(p.Items), err)
	}
	p, err = rp.DeadLetters(e.ctx, replays.DeadFilter{}, 5, "", 100)
	if err != nil || p.Total != 67 || p.TotalAtLeast {
		t.Fatalf("uncapped total: %d (at least %v), %v", p.Total, p.TotalAtLeast, err)
	}
}

// allDeadLetters pages through the dead letters f selects, limit a page, checking each page's size and
// that they come newest first, each once.
func allDeadLetters(t *testing.T, e *env, rp *replays.Replays, f replays.DeadFilter, limit int) []replays.DeadLetter {
	t.Helper()
	var out []replays.DeadLetter
	seen := map[uuid.UUID]bool{}
	cur := ""
	for range 200 {
		p, err := rp.DeadLetters(e.ctx, f, limit, cur, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > limit || (p.NextCursor != "" && len(p.Items) != limit) {
			t.Fatalf("page of %d with limit %d and cursor %q", len(p.Items), limit, p.NextCursor)
		}
		for _, d := range p.Items {
			if seen[d.ID] {
				t.Fatalf("%s on two pages", d.ID)
			}
			seen[d.ID] = true
			if n := len(out); n > 0 {
				prev := out[n-1]
				if d.CreatedAt.After(prev.CreatedAt) || d.CreatedAt.Equal(prev.CreatedAt) && d.ID.String() > prev.ID.String() {
					t.Fatal("dead letters are not newest first")
				}
			}
			out = append(out, d)
		}
		if cur = p.NextCursor; cur == "" {
			return out
		}
	}
	t.Fatal("pages do not end")
	return nil
}

// sameDeadLetters fails unless got holds exactly the ids of want.
func sameDeadLetters(t *testing.T, what string, got []replays.DeadLetter, want ...[]uuid.UUID) {
	t.Helper()
	w := map[uuid.UUID]bool{}
	for _, id := range concat(want...) {
		w[id] = true
	}
	if len(got) != len(w) {
		t.Fatalf("%s: %d dead letters, want %d", what, len(got), len(w))
	}
	for _, d := range got {
		if !w[d.ID] {
			t.Fatalf("%s: %s does not belong", what, d.ID)
		}
	}
}

func TestReplayAuditLogPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	from, to := e.clock.Now().Add(-time.Hour), e.clock.Now()
	var want []uuid.UUID
	for i := range 7 {
		if i == 4 {
			e.clock.Advance(time.Second) // the rest share another started_at
		}
		r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}, DryRun: true,
			Actor: fmt.Sprint("op", i)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r.ID)
	}
	var got []replays.Replay
	cur := ""
	for range 10 {
		p, err := rp.List(e.ctx, replays.ReplayListFilter{Limit: 3, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Items...)
		if cur = p.NextCursor; cur == "" {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("audit log pages hold %d replays, want %d", len(got), len(want))
	}
	seen := map[uuid.UUID]bool{}
	for i, r := range got {
		if seen[r.ID] {
			t.Fatalf("%s twice", r.ID)
		}
		seen[r.ID] = true
		if i > 0 && r.StartedAt.After(got[i-1].StartedAt) {
			t.Fatal("audit log is not newest first")
		}
	}
	b, _ := json.Marshal(got[0])
	if !strings.Contains(string(b), `"criteria":{"created_from"`) {
		t.Errorf("replay JSON: %s", b)
	}
}

// A deleted subscription's dead deliveries stay in the dead-letter list but are not replayed: no worker
// claims a deleted subscription's deliveries, so they would wait in pending for good.
func TestReplaySkipsDeletedSubscriptions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rp := e.replays()
	live, _ := e.subscribe("http://127.0.0.1:1/live", subscriptions.Input{})
	gone, _ := e.subscribe("http://127.0.0.1:1/gone", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Minute)
	for i := range 3 {
		e.publish("order.created", fmt.Sprintf(`{"n":%d}`, i)) // one pending delivery to each subscription
	}
	e.clock.Advance(time.Second)
	if err := e.subs.Delete(e.ctx, e.tenant, gone.ID); err != nil {
		t.Fatal(err)
	}
	liveDead := e.insert(rows{sub: live.ID, n: 4, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from})
	goneDead := e.insert(rows{sub: gone.ID, n: 2, state: delivery.Expired, reason: delivery.ReasonMaxAttempts, createdAt: from})
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND dead_reason = 'subscription_deleted'", gone.ID); n != 3 {
		t.Fatalf("deleting the subscription dead-lettered %d deliveries, want 3", n)
	}
	gonePage, err := rp.DeadLetters(e.ctx, replays.DeadFilter{SubscriptionID: &gone.ID}, 50, "", 0)
	if err != nil || gonePage.Total != 5 || len(gonePage.Items) != 5 {
		t.Fatalf("dead letters of the deleted subscription: %d listed, total %d, %v", len(gonePage.Items), gonePage.Total, err)
	}
	e.clock.Advance(time.Second)
	to := e.clock.Now()
	f := replays.DeadFilter{CreatedFrom: &from, CreatedTo: &to}
	p, err := rp.Preview(e.ctx, f)
	if err != nil || p.Matched != int64(len(liveDead)) || len(p.Groups) != 1 || p.Groups[0].SubscriptionID != live.ID || len(p.Sample) != len(liveDead) {
		t.Fatalf("preview: matched %d, %d groups, %d sampled, %v", p.Matched, len(p.Groups), len(p.Sample), err)
	}
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: f})
	if err != nil || r.Matched != int64(len(liveDead)) {
		t.Fatalf("replay: %+v, %v", r, err)
	}
	e.runner(rp).RunAll(e.ctx)
	got := e.getReplay(rp, r.ID)
	if got.State != replays.ReplayFinished || got.Scheduled != int64(len(liveDead)) || got.Skipped != 0 {
		t.Fatalf("finished replay: %+v", got)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state IN ('failed', 'expired') AND replay_id IS NULL",
		gone.ID); n != 5 {
		t.Fatalf("%d of the deleted subscription's 5 dead deliveries left dead", n)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND replay_id = $2", concat(liveDead, goneDead), r.ID); n != len(liveDead) {
		t.Fatalf("replay scheduled %d, want the live subscription's %d", n, len(liveDead))
	}
}
