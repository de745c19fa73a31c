package phases

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
)

// The history and retention phases' own parts: the load of past days into their partitions (against the
// current schema, as sql_test.go does for the other seeds), and the figures their goals are marked by.

// historyTestDatabase is a database of its own (the history phases move its cut-over back, which a
// database with history refuses) with daily partitions from three days ago.
func historyTestDatabase(t *testing.T) (*testbed.Database, *historyOwners, time.Time) {
	t.Helper()
	ctx := t.Context()
	u, drop, err := testdb.Create(ctx, "bench_history")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	pool, err := pgxuuid.NewPool(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := &testbed.Database{URL: u, Pool: pool}
	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	if err := startHistoryAt(ctx, db, first); err != nil {
		t.Fatal(err)
	}
	owners, err := ownersBySQL(ctx, db, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(owners.tenants) != 4 || len(owners.subs) != 12 {
		t.Fatalf("owners: %d tenants, %d subscriptions", len(owners.tenants), len(owners.subs))
	}
	return db, owners, first
}

func TestLoadHistoryDaysFillTheirPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, owners, first := historyTestDatabase(t)
	days := []historyDay{{start: first, deliveries: 4000}, {start: first.AddDate(0, 0, 1), deliveries: 4000, deadShare: 0.05}}
	if err := loadHistoryDays(ctx, db, owners, days, 2); err != nil {
		t.Fatal(err)
	}
	allAttempts := 0
	for _, d := range days {
		var events, deliveries, dead, attempts, wantAttempts, foreign, outside int
		err := db.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT
	(SELECT count(*) FROM %[1]s), (SELECT count(*) FROM %[2]s), (SELECT count(*) FROM %[2]s WHERE state IN ('failed', 'expired')),
	(SELECT count(*) FROM %[3]s), (SELECT sum(total_attempts) FROM %[2]s),
	(SELECT count(*) FROM %[2]s d JOIN subscriptions s ON s.id = d.subscription_id WHERE s.tenant_id <> d.tenant_id),
	(SELECT count(*) FROM %[2]s WHERE created_at < $1 OR created_at >= $1 + interval '1 day' OR uuid_v7_time(id) <> date_trunc('milliseconds', created_at))`,
			ident("events_"+d.partition()), ident("webhook_deliveries_"+d.partition()), ident("webhook_attempts_"+d.partition())), d.start).
			Scan(&events, &deliveries, &dead, &attempts, &wantAttempts, &foreign, &outside)
		if err != nil {
			t.Fatal(err)
		}
		if events != 2000 || deliveries != 4000 || attempts != wantAttempts || attempts < 4000 || foreign != 0 || outside != 0 {
			t.Errorf("%s: %d events, %d deliveries, %d attempts (of %d), %d of another tenant's subscription, %d outside the day",
				d.partition(), events, deliveries, attempts, wantAttempts, foreign, outside)
		}
		allAttempts += attempts
		if (d.deadShare == 0) != (dead == 0) || dead > 400 {
			t.Errorf("%s: %d dead of 4000 at a share of %.2f", d.partition(), dead, d.deadShare)
		}
	}
	// (a retry a minute after an attempt near midnight counts in the next day's minutes)
	if n, err := db.Count(ctx, "SELECT sum(attempts) FROM attempt_minutes"); err != nil || n != allAttempts {
		t.Errorf("%d attempts in the per-minute counts (%v), want %d", n, err, allAttempts)
	}
	// The loaded tables are the partitions, named (and their indexes) as history_make_partitions names them.
	var stray int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname LIKE 'bench_load%' OR relname LIKE '%_load_%'`).Scan(&stray); err != nil || stray != 0 {
		t.Errorf("%d tables or indexes still named as loaded (%v)", stray, err)
	}
	var id string
	if err := db.Pool.QueryRow(ctx, "SELECT id::text FROM webhook_deliveries WHERE tenant_id = $1 AND state = 'failed' LIMIT 1", owners.tenants[0]).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Count(ctx, "SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1", id); err != nil || n != 2 {
		t.Errorf("a failed delivery has %d attempts (%v), want 2", n, err)
	}
}

func TestLoadedDaysGoByRetention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, owners, first := historyTestDatabase(t)
	delivered := &compaction{day: historyDay{start: first, deliveries: 2000}}
	withDead := &compaction{day: historyDay{start: first.AddDate(0, 0, 1), deliveries: 2000, deadShare: 0.05}}
	if err := loadHistoryDays(ctx, db, owners, []historyDay{delivered.day, withDead.day}, 1); err != nil {
		t.Fatal(err)
	}
	for _, cp := range []*compaction{delivered, withDead} {
		if err := cp.run(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	if delivered.outcome != "dropped" || withDead.outcome != "compacted" {
		t.Fatalf("all delivered: %s, with dead ones: %s; want dropped and compacted", delivered.outcome, withDead.outcome)
	}
	var left, dead int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state IN ('failed', 'expired')) FROM webhook_deliveries`).Scan(&left, &dead); err != nil {
		t.Fatal(err)
	}
	if left == 0 || left != dead {
		t.Errorf("%d deliveries left, %d of them dead; want only the dead ones", left, dead)
	}
}

// The history phase's figures are the ones its goals are marked by.
func TestHistoryGoalsMarked(t *testing.T) {
	t.Parallel()
	var r report.Results
	b := &Bench{res: &r, o: Options{DrainN: 1000, IdleN: 3}}
	side := func(drain float64, pickup, page time.Duration) *historyMeasure {
		return &historyMeasure{
			drains: []float64{drain, drain, drain},
			idle:   &oneByOne{fromStart: report.Latencies{pickup, pickup, pickup}},
			pages:  []pageLatency{{"API deliveries", report.Latencies{page}}, {"dashboard deliveries", report.Latencies{2 * page}}},
		}
	}
	b.reportHistory(side(1000, time.Millisecond, time.Millisecond), side(850, 2*time.Millisecond, 30*time.Millisecond))
	r.MarkGoals()
	want := map[string]string{
		"with history: drain ≥ 0.9 × over an empty history": "NOT met",
		"with history: idle pickup p50 ≤ 3 ms":              "met",
		"with history: a tenant's pages p95 ≤ 50 ms":        "NOT met", // the dashboard's 60 ms
	}
	for _, f := range r.Figures {
		if f.Phase == "goal" {
			if w, ok := want[f.Name]; ok && f.Note == w {
				delete(want, f.Name)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("goals not marked as expected: %v\n%+v", want, r.Figures)
	}
}
