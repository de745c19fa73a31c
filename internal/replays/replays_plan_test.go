package replays_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestOutageHuntAndOutcomePlans: with a dead-letter queue larger than the overview's caps (60,000 dead
// deliveries in the last two days, 10,000 older, and 140,000 delivered), the dead letters by hour and by group read
// the dead-letter indexes and stop at their caps (and say so), and a replay's outcome is counted through
// the replay index, with the dashboard's and API's planning.
func TestOutageHuntAndOutcomePlans(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("inserts 210,000 rows")
	}
	e := setup(t)
	subA, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	subB, _ := e.subscribe("http://127.0.0.1:1/b", subscriptions.Input{})
	now := e.clock.Now()
	e.seedOutageHunt(t, subA.ID, subB.ID, now)

	tr := testdb.RecordStatements("DeadLettersByHour", "DeadLetterGroups", "GetReplay", "ListReplays")
	cfg := e.pool.Config()
	cfg.ConnConfig.Tracer = tr
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rp := replays.NewReplays(pool, e.policy, e.clock.Now)
	conn, err := pool.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	explain := func(name string) string {
		sql, args := tr.Last(t, name)
		return testdb.Explain(t, conn.Conn(), sql, args...)
	}

	for _, c := range []struct {
		what  string
		f     replays.DeadFilter
		index string
	}{
		// Either dead-letter index (by creation, or by death for a bitmap of the range) serves every tenant,
		// read as an index scan, an index-only scan (once the table is all-visible) or a bitmap.
		{"every tenant", replays.DeadFilter{}, " Scan"},
		{"one tenant", replays.DeadFilter{TenantID: &e.tenant}, "_dead_idx"},
	} {
		checkOverviewPlan(t, e, rp, explain, c.what, c.f, c.index)
	}

	// A replay of the last hour's (1,250): its outcome is counted through the replay index.
	from, to := now.Add(-time.Hour), now
	r, err := rp.Start(e.ctx, replays.ReplayRequest{Filter: replays.DeadFilter{SubscriptionID: &subA.ID, CreatedFrom: &from, CreatedTo: &to}, Actor: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	e.runner(rp).RunAll(e.ctx)
	if _, err := e.pool.Exec(e.ctx, "ANALYZE webhook_deliveries"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := rp.Get(e.ctx, r.ID, nil)
	t.Logf("outcome of a replay of %d counted in %s", got.Scheduled, time.Since(start))
	if err != nil || got.Pending != got.Scheduled || got.Scheduled < 1000 {
		t.Fatalf("replay: %+v, %v", got, err)
	}
	if _, err := rp.List(e.ctx, replays.ReplayListFilter{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"GetReplay", "ListReplays"} {
		plan := explain(name)
		// the replayed deliveries wait in the queue's partition, small, which may be read whole
		if !strings.Contains(plan, "_replay_idx") || len(testdb.WholeScans(plan, "webhook_deliveries_p")) > 0 {
			t.Errorf("%s does not count through webhook_deliveries_replay_idx:\n%s", name, plan)
		}
	}
}

// seedOutageHunt inserts 60,000 dead deliveries of subA and 140,000 delivered ones of subB over the last
// 48 hours, and 10,000 more dead ones of subA older than the default range.
func (e *env) seedOutageHunt(t *testing.T, subA, subB uuid.UUID, now time.Time) {
	for i, sub := range []uuid.UUID{subA, subB} {
		n := 60000 // dead, 2.88 s apart: 48 hours
		if i == 1 {
			n = 140000 // delivered
		}
		if _, err := e.pool.Exec(e.ctx, `
			WITH ev AS (
				INSERT INTO events (tenant_id, event_type, body, created_at)
				SELECT $1, 'order.created', '{}', $3::timestamptz - g * (interval '48 hours' / $5::int) FROM generate_series(1, $5::int) g
				RETURNING id, created_at
			)
			INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, give_up_at, created_at,
			    last_status, dead_reason, dead_at)
			SELECT $1, ev.id, $2, 'order.created', CASE WHEN $4 THEN 'delivered' ELSE 'failed' END, ev.created_at + interval '1 day',
			       ev.created_at, CASE WHEN $4 THEN 200 ELSE 404 END, CASE WHEN $4 THEN NULL ELSE 'permanent_status' END,
			       CASE WHEN $4 THEN NULL ELSE ev.created_at END
			FROM ev`, e.tenant, sub, now, i == 1, n); err != nil {
			t.Fatal(err)
		}
	}
	// 10,000 more dead ones of A, older than the default range.
	e.insert(rows{sub: subA, n: 10000, state: delivery.Failed, reason: delivery.ReasonPermanentStatus,
		createdAt: now.Add(-5 * 24 * time.Hour), step: time.Second})
	if _, err := e.pool.Exec(e.ctx, "ANALYZE webhook_deliveries, events, replays"); err != nil {
		t.Fatal(err)
	}

}

// checkOverviewPlan reads the dead-letter overview of f (warm, as a page in use is) and checks that it is
// capped and that its statements read index.
func checkOverviewPlan(t *testing.T, e *env, rp *replays.Replays, explain func(string) string, what string, f replays.DeadFilter, index string) {
	if _, err := rp.DeadOverview(e.ctx, f); err != nil { // warm the cache, as a page in use is
		t.Fatal(err)
	}
	start := time.Now()
	o, err := rp.DeadOverview(e.ctx, f)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: overview of 60,000 dead letters in 48 h in %s", what, took)
	var counted int64
	for _, h := range o.Hours {
		counted += h.Deliveries
	}
	if counted != replays.DeadChartMaxRows || !o.HoursCapped || !o.GroupsCapped {
		t.Errorf("%s: counted %d (capped %v, groups capped %v), want the cap %d", what, counted, o.HoursCapped, o.GroupsCapped, replays.DeadChartMaxRows)
	}
	if len(o.Groups) != 1 || o.Groups[0].Deliveries != replays.DeadGroupsMaxRows || o.Groups[0].LastStatus == nil || *o.Groups[0].LastStatus != 404 {
		t.Errorf("%s: groups %+v", what, o.Groups)
	}
	for _, name := range []string{"DeadLettersByHour", "DeadLetterGroups"} {
		plan := explain(name)
		if !strings.Contains(plan, index) || !strings.Contains(plan, "_dead") || len(testdb.WholeScans(plan, "webhook_deliveries_")) > 0 {
			t.Errorf("%s for %s does not read %s:\n%s", name, what, index, plan)
		}
	}
}
