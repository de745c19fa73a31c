package phases

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/testbed"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
)

// aged: whether a server gets slower the more deliveries have gone through it. On one server process (no
// restart) and one database: idle pickup and publish latency fresh (as the idle phase: -idle-n events one
// at a time, -idle-gap apart), then a backlog of -aged-n deliveries drained through the same server and
// subscription (inserted in SQL while the subscription is paused, as drain (a) does, but not analyzed:
// publishes through the API would not have been), then, as soon as the receiver has every one, the same
// measurement again. Each delivery leaves row versions behind in webhook_deliveries (pending → in_flight
// → delivered) that only vacuum removes, so the phase runs twice: with the cluster's default settings, and
// with autovacuum off for every table of the phase's database (-aged-autovacuum). With -aged-diagnose
// it then also measures a new server process on the aged database (its connections plan afresh; the dead
// versions stay) and the same after a VACUUM of webhook_deliveries, which tells plans from dead versions.
func (b *Bench) aged(ctx context.Context) error {
	clusterOn, err := b.clusterAutovacuum(ctx)
	if err != nil {
		return err
	}
	for v := range strings.SplitSeq(b.o.AgedAutovacuum, ",") {
		switch strings.TrimSpace(v) {
		case "on":
			if !clusterOn {
				fmt.Println("aged default settings: not measured: the cluster runs with autovacuum off (the same as the variant with it off)")
				continue
			}
			err = b.agedOnce(ctx, agedVariant{name: "default settings"})
		case "off":
			err = b.agedOnce(ctx, agedVariant{name: "autovacuum off", autovacuumOff: true})
		default:
			return fmt.Errorf("-aged-autovacuum: %q is neither on nor off", v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// reportedStatements are the server's statements whose cost per call the phase adds as figures (when
// pg_stat_statements is loaded): the publish's two and the completion of an attempt. It prints every
// named statement's.
var reportedStatements = []string{"PublishEvents", "ClaimDeliveries", "CompleteAttempts"}

type agedVariant struct {
	name          string // "default settings", "autovacuum off": the start of each of its figures' names
	autovacuumOff bool   // ALTER TABLE … SET (autovacuum_enabled = off) on every table, before the server starts
}

// agedMeasure is one measurement of a variant ("fresh", "aged", …).
type agedMeasure struct {
	step    string
	started time.Time // the first publish
	*oneByOne
	serverCPU, dbCPU float64 // µs per publish; 0 when not read
	statements       map[string]testbed.StatementUse
	table            testbed.TableState // webhook_deliveries right after the measurement
}

func (b *Bench) agedOnce(ctx context.Context, v agedVariant) error {
	db, err := b.o.Server.FreshDB(ctx, "aged")
	if err != nil {
		return err
	}
	defer db.Close()
	if v.autovacuumOff {
		if err := disableAutovacuum(ctx, db); err != nil {
			return err
		}
	}
	stats := testbed.EnableStatementStats(ctx, db)
	plans := testbed.EnableSlowPlans(ctx, db, b.o.DrainSlowPlan)
	defer plans.Report(filepath.Join(".data", "bench-slow-plans-aged-"+strings.ReplaceAll(v.name, " ", "-")+".txt"))
	env := fmt.Sprintf("HOOKLINE_ENDPOINT_CONCURRENCY=%d", b.o.DrainCap) // the drain's, as in drain (a)
	s, err := b.o.Server.Start(ctx, db.URL, env)
	if err != nil {
		return err
	}
	defer func() { s.Stop() }()
	c := testbed.NewClient(s.Base)
	ts, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	fresh, err := b.agedMeasureOnce(ctx, v, "fresh", db, s, c, ts, stats)
	if err != nil {
		return err
	}
	rate, drained, err := b.ageServer(ctx, v, db, c, ts)
	if err != nil {
		return err
	}
	aged, err := b.agedMeasureOnce(ctx, v, "aged", db, s, c, ts, stats)
	if err != nil {
		return err
	}
	since := aged.started.Sub(drained)
	b.res.Add("aged", v.name+": drain that aged the server", rate, "deliveries/s", fmt.Sprintf("%d deliveries, one subscription", b.o.AgedN))
	b.res.Add("aged", v.name+": the drain's end → the aged measurement", since.Seconds(), "s", "target ≤ 5")
	measures := []*agedMeasure{fresh, aged}
	if b.o.AgedDiagnose {
		more, err := b.agedDiagnose(ctx, v, db, &s, ts, stats, env)
		if err != nil {
			return err
		}
		measures = append(measures, more...)
	}
	b.reportAged(v, measures)
	return checkAged(ctx, db, ts.tenant, b.o.AgedN)
}

// agedDiagnose measures the aged database again on a new server process (new connections: every statement
// planned afresh, the dead row versions still there), then once more after a VACUUM of webhook_deliveries
// (which removes them). *s is replaced by the new server.
func (b *Bench) agedDiagnose(ctx context.Context, v agedVariant, db *testbed.Database, s **testbed.Server, ts *tenantSetup,
	stats *testbed.StatementStats, env string) ([]*agedMeasure, error) {
	(*s).Stop()
	var err error
	if *s, err = b.o.Server.Start(ctx, db.URL, env); err != nil {
		return nil, err
	}
	c := testbed.NewClient((*s).Base)
	restarted, err := b.agedMeasureOnce(ctx, v, "aged, restarted", db, *s, c, ts, stats)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if _, err := db.Pool.Exec(ctx, "VACUUM webhook_deliveries"); err != nil {
		return nil, err
	}
	fmt.Printf("aged %s: VACUUM webhook_deliveries took %s\n", v.name, time.Since(t0).Round(time.Millisecond))
	vacuumed, err := b.agedMeasureOnce(ctx, v, "aged, restarted, vacuumed", db, *s, c, ts, stats)
	if err != nil {
		return nil, err
	}
	return []*agedMeasure{restarted, vacuumed}, nil
}

// agedMeasureOnce is one idle-pickup measurement (after a second of letting the server settle into idle,
// as the idle phase does), with the CPU it cost per publish and, when pg_stat_statements is loaded, what
// each of the server's statements cost meanwhile.
func (b *Bench) agedMeasureOnce(ctx context.Context, v agedVariant, step string, db *testbed.Database, s *testbed.Server,
	c *testbed.Client, ts *tenantSetup, stats *testbed.StatementStats) (*agedMeasure, error) {
	b.rc.Reset(0, true)
	time.Sleep(time.Second)
	stats.Reset(ctx)
	before := testbed.ReadCPU(ctx, db, s)
	started := time.Now()
	r, err := b.publishOneByOne(ctx, c, ts, b.o.IdleN, b.o.IdleGap)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", v.name, step, err)
	}
	m := &agedMeasure{step: step, started: started, oneByOne: r, statements: stats.Read(ctx)}
	if sv, d, _, ok := before.PerDelivery(testbed.ReadCPU(ctx, db, s), len(r.publish)); ok {
		m.serverCPU, m.dbCPU = sv, d
	}
	if m.table, err = testbed.ReadTableState(ctx, db, "webhook_deliveries"); err != nil {
		return nil, err
	}
	fmt.Printf("aged %s, %s: publish → receiver p50 %.2f ms, p99 %.2f ms; publish → 202 p50 %.2f ms; CPU per publish: server %.0f µs, database %.0f µs; webhook_deliveries %s\n",
		v.name, step, r.fromStart.Millis(50), r.fromStart.Millis(99), r.publish.Millis(50), m.serverCPU, m.dbCPU, m.table)
	testbed.PrintStatements(m.statements)
	printVacuums(ctx, db)
	time.Sleep(200 * time.Millisecond)
	b.record("aged", v.name+", "+step, b.rc.Tally(len(r.publish)))
	return m, nil
}

// ageServer drains -aged-n deliveries through the server: a backlog inserted while ts's subscription is
// paused, then resumed. It returns the drain's rate and when the receiver had the last one.
func (b *Bench) ageServer(ctx context.Context, v agedVariant, db *testbed.Database, c *testbed.Client, ts *tenantSetup) (float64, time.Time, error) {
	if err := ts.setState(ctx, c, "pause"); err != nil {
		return 0, time.Time{}, err
	}
	t0 := time.Now()
	if err := insertBacklog(ctx, db, ts, b.o.AgedN, b.o.Payload, ""); err != nil {
		return 0, time.Time{}, err
	}
	fmt.Printf("aged %s: %d pending deliveries inserted in SQL in %s; resuming\n", v.name, b.o.AgedN, time.Since(t0).Round(time.Millisecond))
	reached := b.rc.Reset(b.o.AgedN, false)
	start := time.Now()
	if err := ts.setState(ctx, c, "resume"); err != nil {
		return 0, time.Time{}, err
	}
	elapsed, err := b.waitReceived(ctx, db, reached, start, b.o.AgedN)
	drained := time.Now()
	if err != nil {
		return 0, drained, err
	}
	rate := float64(b.o.AgedN) / elapsed.Seconds()
	fmt.Printf("aged %s: %d deliveries in %s: %.0f deliveries/s\n", v.name, b.o.AgedN, elapsed.Round(time.Millisecond), rate)
	b.record("aged", v.name+", the drain", b.rc.Tally(b.o.AgedN))
	return rate, drained, nil
}

// reportAged adds a variant's figures: each measurement's (the fresh one first), and each later one's
// ratios to the fresh one.
func (b *Bench) reportAged(v agedVariant, measures []*agedMeasure) {
	for _, m := range measures {
		b.reportAgedMeasure(v, measures[0], m)
	}
}

func (b *Bench) reportAgedMeasure(v agedVariant, fresh, m *agedMeasure) {
	name := v.name + ", " + m.step + ": "
	note := ""
	if m.step == "fresh" {
		note = fmt.Sprintf("%d events one at a time, %s apart, on one server; aged: the same after it drained %d deliveries",
			b.o.IdleN, b.o.IdleGap, b.o.AgedN)
	}
	b.res.Add("aged", name+"publish → receiver p50", m.fromStart.Millis(50), "ms", note)
	b.res.Add("aged", name+"publish → receiver p99", m.fromStart.Millis(99), "ms", "")
	b.res.Add("aged", name+"publish → 202 p50", m.publish.Millis(50), "ms", "")
	if m.dbCPU > 0 {
		b.res.Add("aged", name+"database CPU per publish", m.dbCPU, "µs", "PostgreSQL backends of the phase's database")
		b.res.Add("aged", name+"server CPU per publish", m.serverCPU, "µs", "")
	}
	b.res.Add("aged", name+"dead row versions in webhook_deliveries", float64(m.table.Dead), "rows",
		fmt.Sprintf("%d live; vacuumed %d times, analyzed %d times", m.table.Live, m.table.Vacuums, m.table.Analyzes))
	for _, st := range reportedStatements {
		if u, ok := m.statements[st]; ok {
			b.res.Add("aged", name+st+" per call", u.MillisPerCall(), "ms", fmt.Sprintf("%d calls (pg_stat_statements)", u.Calls))
			b.res.Add("aged", name+st+" buffers per call", u.BuffersPerCall(), "blocks", "shared blocks hit or read")
		}
	}
	if m == fresh {
		return
	}
	ratio := v.name + ", " + m.step + " / fresh: "
	add := func(what string, a, f float64) {
		if f > 0 {
			b.res.Add("aged", ratio+what, a/f, "×", "")
		}
	}
	add("publish → receiver p50", m.fromStart.Millis(50), fresh.fromStart.Millis(50))
	add("publish → 202 p50", m.publish.Millis(50), fresh.publish.Millis(50))
	add("database CPU per publish", m.dbCPU, fresh.dbCPU)
	for _, st := range reportedStatements {
		add(st+" per call", m.statements[st].MillisPerCall(), fresh.statements[st].MillisPerCall())
	}
}

// checkAged checks in SQL, once every measurement is over (its scans would tidy up what the
// measurements are about), that every delivery of the aging backlog was delivered with one attempt.
func checkAged(ctx context.Context, db *testbed.Database, tenant string, n int) error {
	var delivered, attempts int
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE d.state = 'delivered' AND d.total_attempts = 1),
	(SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries b ON b.id = a.delivery_id
	 WHERE b.tenant_id = $1 AND b.event_type = 'bench.backlog')
FROM webhook_deliveries d WHERE d.tenant_id = $1 AND d.event_type = 'bench.backlog'`, tenant).Scan(&delivered, &attempts)
	if err != nil {
		return err
	}
	if delivered != n || attempts != n {
		return fmt.Errorf("in SQL: %d of the aging backlog's %d deliveries delivered with one attempt, %d attempts", delivered, n, attempts)
	}
	return nil
}

// clusterAutovacuum says whether the cluster runs autovacuum at all, and adds it as a figure.
func (b *Bench) clusterAutovacuum(ctx context.Context) (bool, error) {
	admin, err := testdb.AdminURL(ctx)
	if err != nil {
		return false, err
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var on bool
	if err := conn.QueryRow(ctx, "SELECT current_setting('autovacuum') = 'on'").Scan(&on); err != nil {
		return false, err
	}
	value, what := 0.0, "autovacuum = off: the default-settings variant is not measured"
	if on {
		value, what = 1, "autovacuum = on"
	}
	b.res.Add("aged", "the cluster runs autovacuum", value, "yes/no", what)
	return on, nil
}

// disableAutovacuum turns autovacuum (and its ANALYZE) off for every table of db and their TOAST tables.
func disableAutovacuum(ctx context.Context, db *testbed.Database) error {
	_, err := db.Pool.Exec(ctx, `DO $$
DECLARE t regclass;
BEGIN
    FOR t IN SELECT c.oid FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off, toast.autovacuum_enabled = off)', t);
    END LOOP;
END $$`)
	return err
}

// hotTables are the tables the publish, the claim and the completion read and write.
// (webhook_deliveries_queue: the partition the hot path reads; webhook_deliveries: all its partitions)
var hotTables = []string{"webhook_deliveries_queue", "webhook_deliveries", "events", "webhook_attempts", "subscriptions", "subscription_finished"}

// printVacuums prints how often each hot table was vacuumed and analyzed so far: with autovacuum on, an
// ANALYZE of any table a cached plan reads makes every session plan that statement again.
func printVacuums(ctx context.Context, db *testbed.Database) {
	line := "  vacuumed/analyzed so far:"
	for _, t := range hotTables {
		if st, err := testbed.ReadTableState(ctx, db, t); err == nil {
			line += fmt.Sprintf(" %s %d/%d", t, st.Vacuums, st.Analyzes)
		}
	}
	fmt.Println(line)
}
