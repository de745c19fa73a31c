package phases

import (
	"context"
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

func TestDisableAutovacuum(t *testing.T) {
	t.Parallel()
	db, _ := testDatabase(t)
	ctx := t.Context()
	if err := disableAutovacuum(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Every table of the schema and every TOAST table of one: autovacuum left on anywhere would tidy up
	// what the phase's variant is meant to leave.
	on, err := db.Count(ctx, `SELECT count(*) FROM pg_class c LEFT JOIN pg_class toast ON toast.oid = c.reltoastrelid
WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
  AND (NOT coalesce('autovacuum_enabled=off' = ANY (c.reloptions), false)
       OR (toast.oid IS NOT NULL AND NOT coalesce('autovacuum_enabled=off' = ANY (toast.reloptions), false)))`)
	if err != nil || on != 0 {
		t.Fatalf("%d tables (or their TOAST tables) with autovacuum on (%v)", on, err)
	}
}

func TestCheckAged(t *testing.T) {
	t.Parallel()
	db, ts := testDatabase(t)
	ctx := t.Context()
	one := &tenantSetup{tenant: ts.tenant, subs: ts.subs[:1], labels: ts.labels[:1]}
	if err := insertBacklog(ctx, db, one, 30, 64, ""); err != nil {
		t.Fatal(err)
	}
	if err := checkAged(ctx, db, ts.tenant, 30); err == nil {
		t.Fatal("checkAged passed with the backlog still pending")
	}
	var done atomic.Int64
	if err := ceilingLoop(ctx, db.Pool, one.subs[0], "http://127.0.0.1:1/", 50, false, nil, &done); err != nil {
		t.Fatal(err)
	}
	if err := checkAged(ctx, db, ts.tenant, 30); err != nil {
		t.Fatal(err)
	}
	if err := checkAged(ctx, db, ts.tenant, 31); err == nil {
		t.Fatal("checkAged passed with a delivery missing")
	}
}

func TestReadTableState(t *testing.T) {
	t.Parallel()
	db, _ := testDatabase(t)
	if _, err := testbed.ReadTableState(t.Context(), db, "webhook_deliveries"); err != nil {
		t.Fatal(err)
	}
}
