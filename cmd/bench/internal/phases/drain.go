package phases

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// The harness's own SQL (seeding, the ceiling, checks) is here and in pages.go, not in db/query: it is
// not part of the product, and it writes rows the way the product's statements do so that the server
// measured finds what it would have written itself.

// seedBacklog inserts n pending deliveries spread evenly over subs (n/len(subs) events, each fanned out
// to every subscription), as POST /events with those subscriptions would have stored them: one event row
// with its body, one pending delivery per subscription, due now. It then ANALYZEs, as autovacuum would.
func seedBacklog(ctx context.Context, db *testbed.Database, ts *tenantSetup, n int, size int) error {
	return seedTracedBacklog(ctx, db, ts, n, size, "")
}

// seedTracedBacklog is seedBacklog with a trace context stored on every delivery, as a publish with
// tracing on leaves it ("" for none).
func seedTracedBacklog(ctx context.Context, db *testbed.Database, ts *tenantSetup, n int, size int, traceparent string) error {
	if err := insertBacklog(ctx, db, ts, n, size, traceparent); err != nil {
		return err
	}
	_, err := db.Pool.Exec(ctx, "ANALYZE")
	return err
}

// insertBacklog is seedTracedBacklog without the ANALYZE: the rows alone, as publishes through the API
// would have left them, statistics and all.
func insertBacklog(ctx context.Context, db *testbed.Database, ts *tenantSetup, n int, size int, traceparent string) error {
	events := n / len(ts.subs)
	body := eventBody("bench.backlog", size)
	for done := 0; done < events; done += 10000 {
		k := min(10000, events-done)
		_, err := db.Pool.Exec(ctx, `
WITH ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, request_hash, created_at)
    SELECT uuid_v7(), $1, 'bench.backlog', $2, '\x00', now() FROM generate_series(1, $3)
    RETURNING id, created_at
)
INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at,
                                created_at, updated_at, traceparent)
SELECT uuid_v7(), $1, ev.id, s.id, 'bench.backlog', ev.created_at, ev.created_at + interval '72 hours',
       ev.created_at, ev.created_at, nullif($5, '')
FROM ev CROSS JOIN unnest($4::uuid[]) AS s(id)`, ts.tenant, body, k, ts.subs, traceparent)
		if err != nil {
			return fmt.Errorf("seed backlog: %w", err)
		}
	}
	return nil
}

type drainVariant struct {
	key, name string
	subs      int
	slow      bool
	// env is added to the servers' environment; traceparent is stored with the seeded deliveries (the
	// tracing phase).
	env         []string
	traceparent string
	// keys > 0 makes the endpoint ordered and spreads the backlog over that many ordering keys, as
	// publishes with those keys would have placed it (the ordered phase).
	keys int
}

var drainVariants = []drainVariant{
	{key: "a", name: "a: 1 endpoint, instant receiver", subs: 1},
	{key: "b", name: "b: 1 endpoint, slow receiver", subs: 1, slow: true},
	{key: "c", name: "c: 100 subscriptions, instant receiver", subs: 100},
	{key: "d", name: "d: 100 subscriptions, slow receiver", subs: 100, slow: true},
}

func (b *Bench) drain(ctx context.Context) error {
	for _, v := range drainVariants {
		if !strings.Contains(","+b.o.DrainVars+",", ","+v.key+",") {
			continue
		}
		n := b.o.DrainN
		if v.slow {
			n = b.o.DrainSlowN
		}
		rate, t, err := b.drainOnce(ctx, "drain", v, n, 1)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		b.res.Add("drain", v.name, rate, "deliveries/s", fmt.Sprintf("%d deliveries", n))
		b.record("drain", v.key, t)
	}
	return nil
}

// drainOnce builds a backlog of n deliveries on paused subscriptions, resumes them and times until the
// receiver has every one, with procs server processes on a fresh database. It checks the rows afterwards.
func (b *Bench) drainOnce(ctx context.Context, phase string, v drainVariant, n, procs int) (float64, testbed.Tally, error) {
	db, err := b.o.Server.FreshDB(ctx, phase)
	if err != nil {
		return 0, testbed.Tally{}, err
	}
	defer db.Close()
	plans := testbed.EnableSlowPlans(ctx, db, b.o.DrainSlowPlan)
	var servers []*testbed.Server
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	for range procs {
		s, err := b.o.Server.Start(ctx, db.URL, b.drainEnv(v)...)
		if err != nil {
			return 0, testbed.Tally{}, err
		}
		servers = append(servers, s)
	}
	rate, t, err := b.drainOn(ctx, phase, db, servers, v, n, nil)
	plans.Report(filepath.Join(".data", fmt.Sprintf("bench-slow-plans-%s-%s%d.txt", phase, v.key, procs)))
	return rate, t, err
}

// drainEnv is the servers' environment for a drain of variant v.
func (b *Bench) drainEnv(v drainVariant) []string {
	env := slices.Clone(v.env)
	if v.subs == 1 {
		env = append(env, fmt.Sprintf("HOOKLINE_ENDPOINT_CONCURRENCY=%d", b.o.DrainCap))
	}
	return env
}

// drainOn is one drain of variant v through servers (started with drainEnv(v)) on db, which may hold
// other rows: a new tenant's backlog of n deliveries on paused subscriptions, resumed and timed until the
// receiver has every one, then its rows checked. during, when set, runs meanwhile (from the resume; it
// must return by the drain's end, and drainOn waits for it).
func (b *Bench) drainOn(ctx context.Context, phase string, db *testbed.Database, servers []*testbed.Server, v drainVariant, n int,
	during func(ctx context.Context)) (float64, testbed.Tally, error) {
	c := testbed.NewClient(servers[0].Base)
	delay := time.Duration(0)
	if v.slow {
		delay = b.o.SlowDelay
	}
	ts, err := b.setupTenant(ctx, c, v.subs, delay)
	if err != nil {
		return 0, testbed.Tally{}, err
	}
	if err := ts.setState(ctx, c, "pause"); err != nil {
		return 0, testbed.Tally{}, err
	}
	seedStart := time.Now()
	if v.keys > 0 {
		err = seedOrderedBacklog(ctx, c, db, ts, n, b.o.Payload, v.keys)
	} else {
		err = seedTracedBacklog(ctx, db, ts, n, b.o.Payload, v.traceparent)
	}
	if err != nil {
		return 0, testbed.Tally{}, err
	}
	n = n / v.subs * v.subs
	fmt.Printf("%s %s: %d pending deliveries seeded in SQL in %s; resuming\n", phase, v.name, n, time.Since(seedStart).Round(time.Millisecond))
	for _, s := range servers {
		_ = s.ResetPeak()
	}
	reached := b.rc.Reset(n, false)
	cpuBefore := testbed.ReadCPU(ctx, db, servers...)
	start := time.Now()
	if err := ts.setState(ctx, c, "resume"); err != nil {
		return 0, testbed.Tally{}, err
	}
	var wg sync.WaitGroup
	if during != nil {
		wg.Go(func() { during(ctx) })
	}
	// The backlog was analyzed with its subscriptions paused and subscription_finished empty; statistics
	// that said so would plan the whole drain for a state it has left (autovacuum analyzes tables this
	// small within its first minute, and a drain is over in seconds).
	if _, err := db.Pool.Exec(ctx, "ANALYZE subscriptions, subscription_finished"); err != nil {
		wg.Wait()
		return 0, testbed.Tally{}, err
	}
	elapsed, err := b.waitReceived(ctx, db, reached, start, n)
	wg.Wait()
	if err != nil {
		return 0, b.rc.Tally(n), err
	}
	if phase == "drain" && !v.slow {
		b.addCPU(phase, v.key, cpuBefore, testbed.ReadCPU(ctx, db, servers...), n)
	}
	if b.lastDrainCPU != nil {
		*b.lastDrainCPU = [2]testbed.CPUUse{cpuBefore, testbed.ReadCPU(ctx, db, servers...)}
	}
	rate := float64(n) / elapsed.Seconds()
	fmt.Printf("%s %s: %d deliveries in %s: %.0f deliveries/s\n", phase, v.name, n, elapsed.Round(time.Millisecond), rate)
	if len(servers) == 1 && (phase == "drain" || phase == "scaling") {
		b.recordPeak(phase, v.key, servers[0])
	}
	t, err := b.settle(ctx, db, ts, n)
	fmt.Printf("%s %s: %s\n", phase, v.name, t)
	return rate, t, err
}

// waitReceived waits until reached closes, printing progress every 5 s so a stall shows as it happens,
// with what the database's sessions were doing meanwhile (sampled every 200 ms: the average number of
// active sessions, and of those waiting, by wait event).
func (b *Bench) waitReceived(ctx context.Context, db *testbed.Database, reached <-chan struct{}, start time.Time, n int) (time.Duration, error) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	sample := time.NewTicker(200 * time.Millisecond)
	defer sample.Stop()
	waits := map[string]int{}
	samples := 0
	last, lastAt := 0, start
	timeout := time.After(b.o.Timeout)
	for {
		select {
		case <-reached:
			return time.Since(start), nil
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timeout:
			u, _, _ := b.rc.Counts()
			return 0, fmt.Errorf("only %d of %d deliveries arrived within %s", u, n, b.o.Timeout)
		case <-sample.C:
			if err := sampleWaits(ctx, db, waits); err == nil {
				samples++
			}
		case now := <-tick.C:
			u, _, _ := b.rc.Counts()
			fmt.Printf("  … %d/%d after %s (%.0f/s over the last %s; %s)\n", u, n, now.Sub(start).Round(time.Second),
				float64(u-last)/now.Sub(lastAt).Seconds(), now.Sub(lastAt).Round(time.Second), describeWaits(waits, samples))
			last, lastAt = u, now
			clear(waits)
			samples = 0
		}
	}
}

// sampleWaits adds one sample of the database's active sessions (other than the harness's) by wait event.
func sampleWaits(ctx context.Context, db *testbed.Database, waits map[string]int) error {
	rows, err := db.Pool.Query(ctx, `SELECT coalesce(wait_event_type || ':' || wait_event, 'running'), count(*)::int
FROM pg_stat_activity
WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
  AND application_name NOT LIKE 'bench%' GROUP BY 1`)
	if err != nil {
		return err
	}
	defer rows.Close()
	waits["active"] += 0
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			return err
		}
		waits[w] += n
		waits["active"] += n
	}
	return rows.Err()
}

func describeWaits(waits map[string]int, samples int) string {
	if samples == 0 {
		return "no database samples"
	}
	type kv struct {
		k string
		v int
	}
	var top []kv
	for k, v := range waits {
		if k != "active" && k != "running" && v > 0 {
			top = append(top, kv{k, v})
		}
	}
	slices.SortFunc(top, func(a, b kv) int { return b.v - a.v })
	s := fmt.Sprintf("db sessions active %.1f, running %.1f", float64(waits["active"])/float64(samples), float64(waits["running"])/float64(samples))
	for _, e := range top[:min(len(top), 3)] {
		s += fmt.Sprintf(", %s %.1f", e.k, float64(e.v)/float64(samples))
	}
	return s
}

// settle waits (up to 30 s) until no delivery of ts is pending or in flight, then checks through SQL that
// every one is delivered with exactly one attempt, and through the receiver that each arrived once.
func (b *Bench) settle(ctx context.Context, db *testbed.Database, ts *tenantSetup, n int) (testbed.Tally, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		open, err := db.Count(ctx, "SELECT count(*) FROM webhook_deliveries WHERE state IN ('pending', 'in_flight') AND tenant_id = $1", ts.tenant)
		if err != nil {
			return testbed.Tally{}, err
		}
		if open == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t := b.rc.Tally(n)
	var rows, delivered, attempts int
	// By the drain's tenant and subscriptions: the database may hold other history (the history phases).
	err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1),
	(SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered' AND tenant_id = $1),
	(SELECT count(*) FROM webhook_attempts WHERE subscription_id = ANY($2::uuid[]))`, ts.tenant, ts.subs).
		Scan(&rows, &delivered, &attempts)
	if err != nil {
		return t, err
	}
	if rows != n || delivered != n || attempts != n {
		return t, fmt.Errorf("in SQL: %d deliveries, %d delivered, %d attempts; want %d of each (%s)", rows, delivered, attempts, n, t)
	}
	return t, nil
}
