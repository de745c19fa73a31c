package phases

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// The history and retention phases load days of history with SQL, as the server would have stored them:
// each day's events, deliveries and attempts in that day's time partitions (their ids are UUIDv7s of the
// day's times), the health's per-minute counts of those attempts, statistics and a vacuumed visibility
// map, as autovacuum would have left a day that is over. A database takes history of past days only while
// it has none (startHistoryAt), so a phase calls that before its server publishes anything.

// historyOwners are the tenants and subscriptions loaded history belongs to.
type historyOwners struct {
	tenants   []string // the first has half the events, the others share the rest
	subs      []string // perTenant subscriptions of each tenant, in the order of tenants
	perTenant int
}

// ownersByAPI creates tenants × perTenant subscriptions through the server (pointing at the receiver;
// the loaded history is finished, so nothing is sent to them).
func (b *Bench) ownersByAPI(ctx context.Context, c *testbed.Client, tenants, perTenant int) (*historyOwners, error) {
	o := &historyOwners{perTenant: perTenant}
	for range tenants {
		ts, err := b.setupTenant(ctx, c, perTenant, 0)
		if err != nil {
			return nil, err
		}
		o.tenants = append(o.tenants, ts.tenant)
		o.subs = append(o.subs, ts.subs...)
	}
	return o, nil
}

// ownersBySQL creates them in SQL, for a phase that runs no server.
func ownersBySQL(ctx context.Context, db *testbed.Database, tenants, perTenant int) (*historyOwners, error) {
	o := &historyOwners{perTenant: perTenant}
	err := db.Pool.QueryRow(ctx, `
WITH t AS (INSERT INTO tenants (name) SELECT 'bench ' || i FROM generate_series(1, $1::int) i RETURNING id, name),
s AS (INSERT INTO subscriptions (tenant_id, url)
      SELECT t.id, 'http://127.0.0.1:1/hook/0/s' || i FROM t CROSS JOIN generate_series(1, $2::int) i RETURNING id, tenant_id, url)
SELECT (SELECT array_agg(id::text ORDER BY name) FROM t),
       (SELECT array_agg(s.id::text ORDER BY t.name, length(s.url), s.url) FROM s JOIN t ON t.id = s.tenant_id)`,
		tenants, perTenant).Scan(&o.tenants, &o.subs)
	return o, err
}

// startHistoryAt moves the database's history cut-over back to first (the start of a day, UTC) and makes
// daily partitions from there to three days ahead, so the days before today can be loaded. The database
// must have no history yet.
func startHistoryAt(ctx context.Context, db *testbed.Database, first time.Time) error {
	if _, err := db.Pool.Exec(ctx, "SELECT history_start_at($1)", first); err != nil {
		return fmt.Errorf("history_start_at: %w", err)
	}
	_, err := db.Pool.Exec(ctx, "SELECT history_make_partitions(interval '1 day', now() + interval '3 days')")
	return err
}

// historyDay is one day of history to load.
type historyDay struct {
	start      time.Time // 00:00 UTC
	deliveries int       // fan-out 2: half as many events
	deadShare  float64   // failed or expired (half each) after 2 attempts; the rest delivered, a tenth after a retry
}

// partition is the suffix of the day's partitions' names (history_make_partitions names them so).
func (d historyDay) partition() string { return "p" + d.start.UTC().Format("20060102_1504") }

// loadHistoryDays loads days, workers at a time, and then analyzes the history's partitioned tables.
func loadHistoryDays(ctx context.Context, db *testbed.Database, o *historyOwners, days []historyDay, workers int) error {
	body := eventBody("order.created", 200)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	turns := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	errs := make([]error, len(days))
	for i, d := range days {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			if errs[i] = loadHistoryDay(lctx, db, o, d, body); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The parents' own statistics (autovacuum never analyzes a partitioned table).
	_, err := db.Pool.Exec(ctx, "ANALYZE events, webhook_deliveries, webhook_attempts, attempt_minutes")
	return err
}

// settleHistory waits until what a load leaves behind is done, so the measurements after it do not share
// the machine with it: a checkpoint and the kernel's writeback of the dirty pages (sync), then the
// autovacuum workers on the database (up to two minutes). It returns how long that took.
func settleHistory(ctx context.Context, db *testbed.Database) (time.Duration, error) {
	t0 := time.Now()
	if _, err := db.Pool.Exec(ctx, "CHECKPOINT"); err != nil {
		fmt.Printf("  (no checkpoint: %v)\n", err)
	}
	syscall.Sync()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		n, err := db.Count(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'autovacuum worker'")
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
	}
	return time.Since(t0), nil
}

// historyChunk is how many events one statement of the load inserts.
const historyChunk = 100000

// loadHistoryDay puts a day of history in place of the day's empty partitions: it fills new tables of the
// partitions' columns and constraints, without indexes (chunks of historyChunk events; each index is then
// built once, sorted, rather than grown row by row: about three times faster), vacuums and analyzes them,
// adds their attempts' per-minute counts, and attaches them (attachLoaded).
func loadHistoryDay(ctx context.Context, db *testbed.Database, o *historyOwners, d historyDay, body []byte) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	defer conn.Exec(context.WithoutCancel(ctx), "RESET ALL") //nolint:errcheck // the connection goes back to the pool
	if _, err := conn.Exec(ctx, "SET jit = off; SET maintenance_work_mem = '256MB'"); err != nil {
		return err
	}
	part := d.partition()
	loaded := map[string]string{ // partitioned table → the new table loaded for it
		"events":                      "bench_load_events_" + part,
		"webhook_deliveries_finished": "bench_load_deliveries_" + part,
		"webhook_attempts":            "bench_load_attempts_" + part,
	}
	for parent, t := range loaded {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)", ident(t), ident(parent))); err != nil {
			return err
		}
	}
	insert := fmt.Sprintf(historyDayInsert, ident(loaded["events"]), ident(loaded["webhook_deliveries_finished"]), ident(loaded["webhook_attempts"]))
	events := d.deliveries / 2
	for lo := 0; lo < events; lo += historyChunk {
		hi := min(lo+historyChunk, events)
		if _, err := conn.Exec(ctx, insert, d.start, lo, hi, events, o.tenants, o.subs, o.perTenant, body, d.deadShare); err != nil {
			return fmt.Errorf("load history of %s: %w", d.start.Format(time.DateOnly), err)
		}
		if hi == events || hi%(10*historyChunk) == 0 {
			fmt.Printf("  … %s: %d of %d deliveries\n", d.start.Format(time.DateOnly), 2*hi, 2*events)
		}
	}
	for _, t := range loaded {
		if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+ident(t)); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(historyMinutesInsert, ident(loaded["webhook_attempts"]))); err != nil {
		return fmt.Errorf("per-minute attempt counts: %w", err)
	}
	for _, parent := range []string{"events", "webhook_attempts", "webhook_deliveries_finished"} {
		if err := attachLoaded(ctx, conn, parent, d, loaded[parent]); err != nil {
			return fmt.Errorf("attach %s: %w", loaded[parent], err)
		}
	}
	return nil
}

// attachLoaded replaces the day's empty partition of parent with the loaded table: a CHECK of the range
// (so the attach need not scan), the empty partition detached and dropped, the loaded table attached
// (which builds its indexes and checks its foreign key to tenants) and given the partition's name and index names.
// Each step is short on the parent except the attach, which holds a lock that lets reads and writes on
// the other partitions go on.
func attachLoaded(ctx context.Context, conn *pgxpool.Conn, parent string, d historyDay, loaded string) error {
	var lo, hi string
	if err := conn.QueryRow(ctx, "SELECT uuid_v7_floor($1)::text, uuid_v7_floor($1 + interval '1 day')::text", d.start).Scan(&lo, &hi); err != nil {
		return err
	}
	key, prefix := "id", parent
	switch parent {
	case "webhook_attempts":
		key = "delivery_id"
	case "webhook_deliveries_finished":
		prefix = "webhook_deliveries"
	}
	old := prefix + "_" + d.partition()
	checks := fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s >= '%s' AND %s < '%s')", ident(loaded), ident(loaded+"_range"), key, lo, key, hi)
	if parent == "webhook_deliveries_finished" {
		checks += fmt.Sprintf(", ADD CONSTRAINT %s CHECK (state IN ('delivered', 'failed', 'expired'))", ident(loaded+"_finished"))
	}
	steps := [][]string{
		{checks},
		{fmt.Sprintf("ALTER TABLE %s DETACH PARTITION %s", ident(parent), ident(old)), "DROP TABLE " + ident(old)},
		{fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')", ident(parent), ident(loaded), lo, hi),
			fmt.Sprintf("ALTER TABLE %s RENAME TO %s", ident(loaded), ident(old)),
			fmt.Sprintf("SELECT history_name_indexes('%s')", old)},
	}
	for _, step := range steps {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, sql := range step {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// historyDayInsert inserts events $2 to $3 − 1 of the $4 events of the day from $1 into the three loaded
// tables (%[1]s events, %[2]s deliveries, %[3]s attempts). Event g is at $1 + g/$4 of a day, of tenant
// $5[k] (k: 0 for half the events, 1, 2, 3 for a sixth each), delivered to two consecutive of its $7
// subscriptions in $6; ids are UUIDv7s of their times (as uuid_v7() makes them, for a given time). A
// share $9 of deliveries is dead (failed and expired alike) after two attempts, the rest delivered, a
// tenth of those after a retry a minute later.
const historyDayInsert = `
WITH src AS (
    SELECT g, x.at, x.k, ($5::uuid[])[1 + x.k] AS tenant_id,
           'order.' || (ARRAY['created', 'paid', 'shipped', 'refunded'])[1 + g %% 4] AS event_type,
           encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
               PLACING substring(int8send(floor(extract(epoch FROM x.at) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid AS id
    FROM generate_series($2::int, $3::int - 1) g
    CROSS JOIN LATERAL (SELECT $1::timestamptz + interval '1 day' * (g::float8 / $4::int) AS at,
                               (ARRAY[0, 0, 0, 1, 2, 3])[1 + g %% 6] AS k) x
), ev AS (
    INSERT INTO %[1]s (id, tenant_id, event_type, body, request_hash, created_at)
    SELECT id, tenant_id, event_type, $8::bytea, '\x00', at FROM src
), fanned AS (
    SELECT src.*, f, random() AS r, random() AS r2 FROM src CROSS JOIN generate_series(0, 1) f
), dsrc AS (
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
               PLACING substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid AS id,
           tenant_id, id AS event_id, ($6::uuid[])[1 + k * $7::int + (g / 6 + f) %% $7::int] AS subscription_id, event_type, at,
           CASE WHEN r >= $9::float8 THEN 'delivered' WHEN r >= $9::float8 / 2 THEN 'failed' ELSE 'expired' END AS state,
           CASE WHEN r >= $9::float8 AND r2 >= 0.1 THEN 1 ELSE 2 END AS attempts
    FROM fanned
), d AS (
    INSERT INTO %[2]s (id, tenant_id, event_id, subscription_id, event_type, state, attempt_count, total_attempts,
                       next_attempt_at, give_up_at, last_attempt_at, last_status, last_response, dead_reason, dead_at,
                       created_at, updated_at)
    SELECT id, tenant_id, event_id, subscription_id, event_type, state, attempts, attempts,
           at + attempts * interval '1 minute', at + interval '72 hours', at + (attempts - 1) * interval '1 minute' + interval '40 ms',
           CASE WHEN state = 'delivered' THEN 200 ELSE 500 END, 'ok',
           CASE state WHEN 'failed' THEN 'max_attempts' WHEN 'expired' THEN 'deadline' END,
           CASE WHEN state <> 'delivered' THEN at + attempts * interval '1 minute' END,
           at, at + attempts * interval '1 minute'
    FROM dsrc
)
INSERT INTO %[3]s (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, response_snippet,
                   error, outcome, request_url, request_headers)
SELECT id, tenant_id, subscription_id, a, at + (a - 1) * interval '1 minute', 40 + a,
       CASE WHEN state = 'delivered' AND a = attempts THEN 200 ELSE 500 END, 'ok', '',
       CASE WHEN a < attempts THEN 'retry' WHEN state = 'delivered' THEN 'delivered' ELSE 'failed' END,
       'https://receiver.example/hook', '{"content-type": "application/json"}'
FROM dsrc CROSS JOIN LATERAL generate_series(1, attempts) a`

// historyMinutesInsert adds the loaded attempts (%s) to the health's per-minute counts, as the trigger on
// webhook_attempts does for every insert into it (db/schema/00010_attempt_minutes.sql).
const historyMinutesInsert = `
INSERT INTO attempt_minutes AS m (subscription_id, minute, tenant_id, attempts, successes, last_success_at, last_failure_at)
SELECT a.subscription_id, attempt_minute(a.started_at), a.tenant_id, count(*),
       count(*) FILTER (WHERE a.outcome = 'delivered'),
       max(a.started_at) FILTER (WHERE a.outcome = 'delivered'),
       max(a.started_at) FILTER (WHERE a.outcome <> 'delivered')
FROM %s a
GROUP BY 1, 2, 3
ORDER BY 1, 2
ON CONFLICT (subscription_id, minute) DO UPDATE
SET attempts = m.attempts + excluded.attempts,
    successes = m.successes + excluded.successes,
    last_success_at = greatest(m.last_success_at, excluded.last_success_at),
    last_failure_at = greatest(m.last_failure_at, excluded.last_failure_at)`
