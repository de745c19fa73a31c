package phases

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/testbed"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
)

// The harness writes rows the way the product does; these tests run its statements against the current
// schema, so a schema change that breaks `make bench` fails `make test` instead. Each test has its own
// tenant and subscriptions and counts only their rows, so they run in parallel on the package's database.

var testURL string

func TestMain(m *testing.M) { testdb.Main(m, "bench", func(u string) { testURL = u }) }

func testDatabase(t *testing.T) (*testbed.Database, *tenantSetup) {
	t.Helper()
	ctx := t.Context()
	pool, err := pgxuuid.NewPool(ctx, testURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := &testbed.Database{URL: testURL, Pool: pool}
	ts := &tenantSetup{}
	if err := pool.QueryRow(ctx, "INSERT INTO tenants (name) VALUES ('bench test') RETURNING id::text").Scan(&ts.tenant); err != nil {
		t.Fatal(err)
	}
	for i, label := range []string{"s0", "s1"} {
		var id string
		if err := pool.QueryRow(ctx, "INSERT INTO subscriptions (tenant_id, url) VALUES ($1, $2) RETURNING id::text",
			ts.tenant, "http://127.0.0.1:1/hook/0/"+label).Scan(&id); err != nil {
			t.Fatal(i, err)
		}
		ts.subs = append(ts.subs, id)
		ts.labels = append(ts.labels, label)
	}
	return db, ts
}

func TestSeedBacklogAndCeiling(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, ts := testDatabase(t)
	one := &tenantSetup{tenant: ts.tenant, subs: ts.subs[:1], labels: ts.labels[:1]}
	if err := seedBacklog(ctx, db, one, 120, 256); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Count(ctx, "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'pending'", one.subs[0]); err != nil || n != 120 {
		t.Fatalf("%d pending (%v), want 120", n, err)
	}
	var done atomic.Int64
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- ceilingLoop(ctx, db.Pool, one.subs[0], "http://127.0.0.1:1/", 50, false, nil, &done) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if done.Load() != 120 {
		t.Fatalf("ceiling recorded %d, want 120", done.Load())
	}
	var delivered, attempts int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'delivered' AND total_attempts = 1),
	(SELECT count(*) FROM webhook_attempts WHERE subscription_id = $1 AND outcome = 'delivered')`, one.subs[0]).Scan(&delivered, &attempts); err != nil {
		t.Fatal(err)
	}
	if delivered != 120 || attempts != 120 {
		t.Fatalf("%d delivered, %d attempts; want 120 of each", delivered, attempts)
	}

	// Spread over two subscriptions: 30 events, each fanned out to both.
	if err := seedBacklog(ctx, db, ts, 60, 256); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Count(ctx, "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND tenant_id = $1", ts.tenant); err != nil || n != 60 {
		t.Fatalf("%d pending over two subscriptions (%v), want 60", n, err)
	}
}

func TestSeedDeadAndHistory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, ts := testDatabase(t)
	ids, err := seedDead(ctx, db, ts.tenant, ts.subs[1], 7, 128)
	if err != nil || len(ids) != 7 {
		t.Fatalf("seedDead: %d ids, %v", len(ids), err)
	}
	if err := seedHistory(ctx, db, ts, 2000); err != nil {
		t.Fatal(err)
	}
	var total, delivered, dead, pending, attempts, badDead int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'delivered'),
	count(*) FILTER (WHERE state IN ('failed', 'expired')), count(*) FILTER (WHERE state = 'pending'),
	(SELECT count(*) FROM webhook_attempts WHERE tenant_id = $1), count(*) FILTER (WHERE state IN ('failed', 'expired') AND dead_at IS NULL)
	FROM webhook_deliveries WHERE tenant_id = $1 AND event_type <> 'bench.dead'`, ts.tenant).Scan(&total, &delivered, &dead, &pending, &attempts, &badDead); err != nil {
		t.Fatal(err)
	}
	if total != 2000 || delivered < 1600 || dead < 60 || pending == 0 || attempts < total || badDead != 0 {
		t.Fatalf("history: %d rows, %d delivered, %d dead, %d pending, %d attempts, %d dead without dead_at",
			total, delivered, dead, pending, attempts, badDead)
	}
	var oldest time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT min(created_at) FROM webhook_deliveries WHERE tenant_id = $1", ts.tenant).Scan(&oldest); err != nil {
		t.Fatal(err)
	}
	if age := time.Since(oldest); age < 29*24*time.Hour {
		t.Errorf("history spans %s, want about 30 days", age)
	}
}

func TestInsertFloor(t *testing.T) {
	t.Parallel()
	db, _ := testDatabase(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rate, err := insertFloor(ctx, db, 2, 100*time.Millisecond, 128)
	if err != nil || rate <= 0 {
		t.Fatalf("insertFloor: %v %v", rate, err)
	}
}

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
