package phases

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// HistoryOptions are the sizes of the history and retention phases (main's -history-* and -retention-*
// flags).
type HistoryOptions struct {
	Deliveries  int           // history: deliveries of history loaded
	Days        int           // history: the days before today they are spread over
	Rounds      int           // history: drains (a) measured on each side
	LoadWorkers int           // history and retention: days loaded at once
	DropN       int           // retention: deliveries of the day dropped
	DayN        int           // retention: deliveries of each simulated day
	SimDays     int           // retention: days simulated
	Keep        time.Duration // retention: the simulated days' delivered and dead retention
}

// historyDeadShare is the share of dead deliveries in loaded history.
const historyDeadShare = 0.05

// historyMeasure is what the history phase measures on each side of the load.
type historyMeasure struct {
	drains []float64 // drain (a) rounds, deliveries/s
	// the drains' CPU per delivery, µs (when the database is on this machine): it moves much less with
	// the machine's load than a rate
	dbCPU, serverCPU []float64
	idle             *oneByOne
	pages            []pageLatency
}

type pageLatency struct {
	name string
	lat  report.Latencies
}

// history: whether the server slows down with history in its database. On one database and one server
// process: drain (a), idle pickup and a tenant's pages with an empty history, then -history-n deliveries
// of history loaded with SQL over the -history-days days before today (4 tenants × 10 subscriptions, half
// of it the measured tenant's; fan-out 2, 5 % dead, 1–2 attempts each), then the same again.
func (b *Bench) history(ctx context.Context) error {
	h := b.o.History
	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -h.Days)
	db, err := b.o.Server.FreshDB(ctx, "history")
	if err != nil {
		return err
	}
	defer db.Close()
	// Before anything is stored: the history of past days goes in their own partitions.
	if err := startHistoryAt(ctx, db, first); err != nil {
		return err
	}
	// The plans of the server's statements slower than -drain-slow-plan (off by default: it slows the drains),
	// set before the server opens its sessions.
	plans := testbed.EnableSlowPlans(ctx, db, b.o.DrainSlowPlan)
	defer plans.Report(filepath.Join(".data", "bench-slow-plans-history.txt"))
	s, err := b.o.Server.Start(ctx, db.URL, b.drainEnv(drainVariants[0])...)
	if err != nil {
		return err
	}
	defer func() { s.Stop() }()
	c := testbed.NewClient(s.Base)
	owners, err := b.ownersByAPI(ctx, c, 4, 10)
	if err != nil {
		return err
	}
	idleTenant, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	const email, password = "bench-tenant@example.com", "bench-tenant-password-1"
	if _, err := c.Call(ctx, "POST", "/tenants/"+owners.tenants[0]+"/users", map[string]any{"email": email, "password": password}, nil, nil); err != nil {
		return err
	}
	web, err := testbed.SignIn(ctx, s.Base, email, password)
	if err != nil {
		return err
	}
	empty, err := b.historyMeasureOnce(ctx, "empty", db, s, c, web, owners, idleTenant)
	if err != nil {
		return err
	}
	if err := b.loadHistory(ctx, db, owners, first); err != nil {
		return err
	}
	loaded, err := b.historyMeasureOnce(ctx, "with history", db, s, c, web, owners, idleTenant)
	if err != nil {
		return err
	}
	b.reportHistory(empty, loaded)
	return nil
}

// loadHistory loads -history-n deliveries over the days from first to yesterday and reports how long it
// took and how big the database is.
func (b *Bench) loadHistory(ctx context.Context, db *testbed.Database, owners *historyOwners, first time.Time) error {
	h := b.o.History
	var days []historyDay
	for i := range h.Days {
		days = append(days, historyDay{start: first.AddDate(0, 0, i), deliveries: h.Deliveries / h.Days, deadShare: historyDeadShare})
	}
	t0 := time.Now()
	if err := loadHistoryDays(ctx, db, owners, days, h.LoadWorkers); err != nil {
		return err
	}
	took := time.Since(t0)
	n := h.Deliveries / h.Days / 2 * 2 * h.Days
	size, err := db.Count(ctx, "SELECT pg_database_size(current_database())")
	if err != nil {
		return err
	}
	fmt.Printf("history: %d deliveries of history loaded in %s (%.0f deliveries/s); the database is %d MiB\n",
		n, took.Round(time.Second), float64(n)/took.Seconds(), size>>20)
	b.res.Add("history", "history loaded", float64(n), "deliveries",
		fmt.Sprintf("over %d days; with %d events and their attempts", h.Days, n/2))
	b.res.Add("history", "load time", took.Seconds(), "s", "SQL into tables without indexes, vacuumed, then attached (the indexes built)")
	b.res.Add("history", "load rate", float64(n)/took.Seconds(), "deliveries/s", "")
	b.res.Add("history", "database size with history", float64(size>>20), "MiB", "")
	return nil
}

// historyMeasureOnce measures idle pickup, the pages and -history-rounds drains (a), in that order (a
// drain churns the queue, which the idle pickup would measure too), the drains after one not counted (the
// first drain after a while finds PostgreSQL's and the kernel's caches cold, and ran up to a third slower).
func (b *Bench) historyMeasureOnce(ctx context.Context, side string, db *testbed.Database, s *testbed.Server, c *testbed.Client,
	web *testbed.WebClient, owners *historyOwners, idleTenant *tenantSetup) (*historyMeasure, error) {
	m := &historyMeasure{}
	settled, err := settleHistory(ctx, db)
	if err != nil {
		return nil, err
	}
	fmt.Printf("history %s: checkpoint, sync and autovacuum done in %s\n", side, settled.Round(time.Millisecond))
	b.res.Add("history", side+": settling before the measurements", settled.Seconds(), "s",
		"CHECKPOINT, sync(2) and the database's autovacuum workers done (at most 2 min)")
	b.rc.Reset(0, true)
	time.Sleep(time.Second) // let the server settle into idle
	if m.idle, err = b.publishOneByOne(ctx, c, idleTenant, b.o.IdleN, b.o.IdleGap); err != nil {
		return nil, fmt.Errorf("%s: idle pickup: %w", side, err)
	}
	time.Sleep(200 * time.Millisecond)
	b.record("history", side+": idle pickup", b.rc.Tally(len(m.idle.publish)))
	fmt.Printf("history %s: idle pickup: publish → receiver p50 %.2f ms, p99 %.2f ms\n", side, m.idle.fromStart.Millis(50), m.idle.fromStart.Millis(99))
	if m.pages, err = b.historyPages(ctx, c, web, owners); err != nil {
		return nil, fmt.Errorf("%s: %w", side, err)
	}
	for _, p := range m.pages {
		fmt.Printf("history %s: %s: p50 %.1f ms, p95 %.1f ms\n", side, p.name, p.lat.Millis(50), p.lat.Millis(95))
	}
	if _, _, err := b.drainOn(ctx, "history", db, []*testbed.Server{s}, drainVariants[0], b.o.DrainN, nil); err != nil {
		return nil, fmt.Errorf("%s: warm-up drain: %w", side, err)
	}
	for round := 1; round <= b.o.History.Rounds; round++ {
		var cpu [2]testbed.CPUUse
		b.lastDrainCPU = &cpu
		rate, t, err := b.drainOn(ctx, "history", db, []*testbed.Server{s}, drainVariants[0], b.o.DrainN, nil)
		b.lastDrainCPU = nil
		if err != nil {
			return nil, fmt.Errorf("%s: drain round %d: %w", side, round, err)
		}
		m.drains = append(m.drains, rate)
		if server, database, _, ok := cpu[0].PerDelivery(cpu[1], b.o.DrainN); ok {
			m.serverCPU, m.dbCPU = append(m.serverCPU, server), append(m.dbCPU, database)
		}
		b.record("history", fmt.Sprintf("%s: drain round %d", side, round), t)
	}
	return m, nil
}

// historyPages times -page-calls calls of each of the measured tenant's pages: through the API its
// deliveries, its dead letters and a subscription's health; on the dashboard, signed in as the tenant's
// user, its deliveries page, the same showing dead letters, and a subscription's page (health and
// deliveries).
func (b *Bench) historyPages(ctx context.Context, c *testbed.Client, web *testbed.WebClient, o *historyOwners) ([]pageLatency, error) {
	base := "/tenants/" + o.tenants[0]
	sub := func(i int) string { return o.subs[i%o.perTenant] }
	calls := []struct {
		name string
		path func(i int) string
		web  bool
	}{
		{"API deliveries", func(int) string { return base + "/deliveries?limit=50" }, false},
		{"API dead letters", func(int) string { return base + "/deliveries?state=dead&limit=50" }, false},
		{"API subscription health", func(i int) string { return base + "/subscriptions/" + sub(i) + "/health" }, false},
		{"dashboard deliveries", func(int) string { return "/deliveries" }, true},
		{"dashboard dead letters", func(int) string { return "/deliveries?state=dead" }, true},
		{"dashboard subscription", func(i int) string { return "/subscriptions/" + sub(i) }, true},
	}
	var out []pageLatency
	for _, call := range calls {
		var lat report.Latencies
		for i := range b.o.PageCalls {
			t := time.Now()
			var err error
			if call.web {
				err = web.Get(ctx, call.path(i))
			} else {
				_, err = c.Call(ctx, "GET", call.path(i), nil, nil, nil)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", call.name, err)
			}
			lat = append(lat, time.Since(t))
		}
		out = append(out, pageLatency{call.name, lat})
	}
	return out, nil
}

// reportHistory adds both sides' figures and the ratios the goals are checked by.
func (b *Bench) reportHistory(empty, loaded *historyMeasure) {
	for _, side := range []struct {
		name string
		m    *historyMeasure
	}{{"empty", empty}, {"with history", loaded}} {
		b.res.Add("history", side.name+": drain (a)", median(side.m.drains), "deliveries/s",
			fmt.Sprintf("median of %d rounds of %d: %s", len(side.m.drains), b.o.DrainN, joinRates(side.m.drains)))
		b.res.Add("history", side.name+": idle pickup p50", side.m.idle.fromStart.Millis(50), "ms",
			fmt.Sprintf("publish → receiver, %d events %s apart", b.o.IdleN, b.o.IdleGap))
		b.res.Add("history", side.name+": idle pickup p99", side.m.idle.fromStart.Millis(99), "ms", "")
		for _, p := range side.m.pages {
			b.res.Add("history", side.name+": "+p.name+" p95", p.lat.Millis(95), "ms", fmt.Sprintf("%d calls; p50 %.1f ms", len(p.lat), p.lat.Millis(50)))
		}
	}
	ratio := median(loaded.drains) / median(empty.drains)
	b.res.Add("history", report.HistoryDrainRatio, ratio, "×", "medians; target ≥ 0.9")
	if len(empty.dbCPU) > 0 && len(loaded.dbCPU) > 0 {
		for _, c := range []struct {
			who          string
			empty, after []float64
		}{{"database", empty.dbCPU, loaded.dbCPU}, {"server", empty.serverCPU, loaded.serverCPU}} {
			b.res.Add("history", "drain (a) CPU per delivery, "+c.who+": empty", median(c.empty), "µs", "median of the rounds")
			b.res.Add("history", "drain (a) CPU per delivery, "+c.who+": with history", median(c.after), "µs", "median of the rounds")
			b.res.Add("history", "drain (a) CPU per delivery, "+c.who+": empty / with history", median(c.empty)/median(c.after), "×",
				"1: the history costs the drain nothing; moves less with the machine's load than the rates")
		}
	}
	slowest, which := 0.0, ""
	for _, p := range loaded.pages {
		if v := p.lat.Millis(95); v > slowest {
			slowest, which = v, p.name
		}
	}
	b.res.Add("history", report.HistorySlowestPage, slowest, "ms", which+"; target ≤ 50")
	fmt.Printf("history: drain with history / empty %.2f×; idle pickup p50 %.2f ms (empty %.2f); slowest page p95 %.1f ms (%s)\n",
		ratio, loaded.idle.fromStart.Millis(50), empty.idle.fromStart.Millis(50), slowest, which)
}

func joinRates(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}
