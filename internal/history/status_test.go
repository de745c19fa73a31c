package history_test

import (
	"bytes"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// recordingDatabase is newDatabase whose pool records the statements named.
func recordingDatabase(t *testing.T, names ...string) (*pgxpool.Pool, *testdb.Statements) {
	t.Helper()
	url, drop, err := testdb.Create(t.Context(), "history_"+strings.ToLower(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	tr := testdb.RecordStatements(names...)
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, tr
}

// storeDeliveries writes deliveries in state, one made at each of ats (no events or attempts: the oldest
// delivery is read from webhook_deliveries alone).
func (f fixture) storeDeliveries(t *testing.T, pool *pgxpool.Pool, state string, ats []time.Time) {
	t.Helper()
	ids := make([]uuid.UUID, len(ats))
	for i, at := range ats {
		ids[i] = idAt(at)
	}
	dead := state == "failed" || state == "expired"
	if _, err := pool.Exec(t.Context(), `
		INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, give_up_at, created_at,
		                                last_attempt_at, dead_at, lease_expires_at)
		SELECT d.id, $3, d.id, $4, 'order.created', $5, d.at, d.at, d.at, CASE WHEN $6 THEN d.at END,
		       CASE WHEN $5 = 'in_flight' THEN d.at END
		FROM unnest($1::uuid[], $2::timestamptz[]) AS d (id, at)`,
		ids, ats, f.tenant, f.subscription, state, dead); err != nil {
		t.Fatal(err)
	}
}

// Status in words: partitions ahead are short under two intervals; retention is behind once a delivery is
// kept over an interval past its own retention (delivered: after its last attempt, dead: after it died),
// whatever the age of its partition; a kind kept forever is never behind.
func TestStatusJudgesAheadAndRetention(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 5, 10, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	r := history.Retention{Delivered: 30 * day, Dead: 90 * day}
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name       string
		madeUntil  time.Time
		kept       history.Kept
		r          history.Retention
		short      bool
		overdue    time.Duration
		kind       string
		behind     bool
		intervalsA float64
	}{
		{"three ahead, nothing kept", now.Add(3 * day), history.Kept{}, r, false, 0, "", false, 3},
		{"within retention", now.Add(3 * day), history.Kept{OldestMade: ago(93 * day), StalestDelivered: ago(30 * day), StalestDead: ago(89 * day)},
			r, false, 0, "", false, 3},
		{"two ahead, past retention within an interval", now.Add(2 * day), history.Kept{OldestMade: ago(95 * day), StalestDelivered: ago(31 * day), StalestDead: ago(91 * day)},
			r, false, day, "delivered", false, 2},
		{"under two ahead, dead ones behind", now.Add(2*day - time.Second), history.Kept{OldestMade: ago(99 * day), StalestDelivered: ago(30 * day), StalestDead: ago(96 * day)},
			r, true, 6 * day, "dead", true, 2 - 1.0/86400},
		{"delivered a second past the interval", now.Add(-day), history.Kept{OldestMade: ago(40 * day), StalestDelivered: ago(31*day + time.Second)},
			r, true, day + time.Second, "delivered", true, -1},
		// Resent 100 days after it was made and delivered again a day ago: old, but kept by its retention.
		{"an old delivery resent", now.Add(3 * day), history.Kept{OldestMade: ago(100 * day), StalestDelivered: ago(day), StalestDead: ago(10 * day)},
			r, false, 0, "", false, 3},
		{"delivered kept forever", now.Add(3 * day), history.Kept{OldestMade: ago(400 * day), StalestDelivered: ago(400 * day), StalestDead: ago(day)},
			history.Retention{Dead: 90 * day}, false, 0, "", false, 3},
		{"dead kept forever, delivered behind", now.Add(3 * day), history.Kept{OldestMade: ago(400 * day), StalestDelivered: ago(40 * day), StalestDead: ago(400 * day)},
			history.Retention{Delivered: 30 * day}, false, 10 * day, "delivered", true, 3},
	} {
		var parts []history.Partition
		for _, table := range history.Tables {
			parts = append(parts, history.Partition{Table: table, Legacy: true, StartsAt: time.Unix(0, 0), EndsAt: now.Add(-5 * day), Bytes: 100},
				history.Partition{Table: table, StartsAt: now.Add(-5 * day), EndsAt: c.madeUntil, Bytes: 20})
		}
		s := history.Summarize(parts, c.kept, now, day, c.r)
		over, kind := s.Overdue()
		if s.ShortAhead() != c.short || over != c.overdue || kind != c.kind || s.Behind() != c.behind || math.Abs(s.IntervalsAhead()-c.intervalsA) > 1e-9 {
			t.Errorf("%s: short %v, overdue %s %q, behind %v, intervals ahead %v; want %v, %s %q, %v, %v", c.name,
				s.ShortAhead(), over, kind, s.Behind(), s.IntervalsAhead(), c.short, c.overdue, c.kind, c.behind, c.intervalsA)
		}
		if want := now.Sub(c.kept.OldestMade); c.kept.OldestMade.IsZero() && s.OldestAge() != 0 || !c.kept.OldestMade.IsZero() && s.OldestAge() != want {
			t.Errorf("%s: oldest age %s", c.name, s.OldestAge())
		}
		for _, ts := range s.Tables {
			if ts.Partitions != 2 || ts.Bytes != 120 || !ts.Legacy || !ts.Cutover.Equal(now.Add(-5*day)) ||
				!ts.Oldest.Equal(now.Add(-5*day)) || !ts.MadeUntil.Equal(c.madeUntil) {
				t.Errorf("%s: %+v", c.name, ts)
			}
		}
	}
}

// Read: every table's partitions, the oldest finished delivery (the legacy partition's included) and the
// delivered and dead deliveries kept longest past their retention's start; the deliveries still waiting
// are not history, however old.
func TestMonitorReadsPartitionsAndTheDeliveriesKept(t *testing.T) {
	t.Parallel()
	pool, _ := recordingDatabase(t)
	f := newFixture(t, pool)
	c := &clock{now: time.Now()}
	parts := history.New(pool, history.Options{Interval: 24 * time.Hour, Now: c.Now})
	if _, err := parts.Make(t.Context()); err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	m := history.NewMonitor(parts, history.Retention{Delivered: day, Dead: 2 * day})
	s, err := m.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !s.OldestMade.IsZero() || !s.StalestDelivered.IsZero() || !s.StalestDead.IsZero() || s.Behind() {
		t.Errorf("with no delivery: %+v", s)
	}

	f.storeDeliveries(t, pool, "pending", []time.Time{c.Now().Add(-30 * day)}) // legacy, waiting: not history
	f.storeDeliveries(t, pool, "in_flight", []time.Time{c.Now().Add(-time.Hour)})
	oldest := c.Now().Add(-5 * day) // legacy (its cut-over is the start of the test database's first day)
	f.storeDeliveries(t, pool, "failed", []time.Time{oldest, c.Now()})
	f.storeDeliveries(t, pool, "delivered", []time.Time{c.Now().Add(-2 * day), c.Now()})
	if s, err = m.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	ms := func(t time.Time) time.Time { return t.Truncate(time.Millisecond) } // ids hold milliseconds
	if !s.OldestMade.Equal(ms(oldest)) {
		t.Errorf("oldest made %s, want %s (the oldest finished delivery)", s.OldestMade, oldest)
	}
	// storeDeliveries dates each delivery's last attempt and death at its making.
	if !s.StalestDead.Round(time.Millisecond).Equal(oldest.Round(time.Millisecond)) ||
		!s.StalestDelivered.Round(time.Millisecond).Equal(c.Now().Add(-2*day).Round(time.Millisecond)) {
		t.Errorf("stalest dead %s, delivered %s; want %s and %s", s.StalestDead, s.StalestDelivered, oldest, c.Now().Add(-2*day))
	}
	// Dead 5 days ago against 2 days: 3 days past; delivered 2 days ago against 1: 1 day past.
	if over, kind := s.Overdue(); kind != "dead" || over < 3*day-time.Millisecond || over > 3*day+time.Millisecond || !s.Behind() {
		t.Errorf("overdue %s %q, behind %v; want 3 days, dead, behind", over, kind, s.Behind())
	}
	list, err := parts.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !s.MadeUntil.Equal(history.MadeUntil(list)) || s.IntervalsAhead() < history.Ahead {
		t.Errorf("made until %s (%.2f intervals ahead), want %s, at least %d ahead", s.MadeUntil, s.IntervalsAhead(), history.MadeUntil(list), history.Ahead)
	}
	for _, ts := range s.Tables {
		n := 0
		for _, p := range list {
			if p.Table == ts.Table {
				n++
			}
		}
		if ts.Partitions != n || n < history.Ahead+1 || !ts.Legacy || ts.Bytes <= 0 {
			t.Errorf("%s: %+v, want %d partitions with the legacy one and their size", ts.Table, ts, n)
		}
	}
}

// The deliveries kept (the oldest by id, the stalest delivered and dead ones) are each found by one index
// probe per partition, whatever they hold: no partition is read whole or sorted, and each scan returns at
// most the one row it is asked for.
func TestDeliveriesKeptReadOneEntryPerPartition(t *testing.T) {
	t.Parallel()
	queries := []string{"OldestHistoryDelivery", "StalestDelivered", "StalestDead"}
	pool, tr := recordingDatabase(t, queries...)
	f := newFixture(t, pool)
	c := &clock{now: time.Now()}
	// Hourly partitions after the migration's first three days, until six days from now: over sixty
	// partitions of finished deliveries.
	parts := history.New(pool, history.Options{Interval: time.Hour, Now: func() time.Time { return c.Now().Add(6 * 24 * time.Hour) }})
	if _, err := parts.Make(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ats []time.Time
	for i := range 3000 { // from three days on, over 60 hours: one every 72 seconds
		ats = append(ats, c.Now().Add(3*24*time.Hour+time.Duration(i)*72*time.Second))
	}
	f.storeDeliveries(t, pool, "delivered", ats)
	f.storeDeliveries(t, pool, "failed", ats[:500])
	f.storeDeliveries(t, pool, "pending", []time.Time{c.Now().Add(-48 * time.Hour), c.Now().Add(-time.Minute)})
	if _, err := pool.Exec(t.Context(), "ANALYZE webhook_deliveries"); err != nil {
		t.Fatal(err)
	}
	s, err := history.NewMonitor(parts, history.Retention{}).Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b time.Time) bool { return a.Sub(b).Abs() < time.Millisecond }
	if !near(s.OldestMade, ats[0]) || !near(s.StalestDelivered, ats[0]) || !near(s.StalestDead, ats[0]) {
		t.Errorf("oldest made %s, stalest delivered %s, dead %s; want each %s", s.OldestMade, s.StalestDelivered, s.StalestDead, ats[0])
	}
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	for _, name := range queries {
		sql, args := tr.Last(t, name)
		plan := testdb.ExplainAnalyze(t, tx, sql, args...)
		scans := 0
		for _, n := range plan.Nodes() {
			switch n.Type() {
			case "Seq Scan", "Sort", "Bitmap Heap Scan":
				t.Errorf("%s: the plan has a %s (on %q):\n%s", name, n.Type(), n.Relation(), plan)
			case "Index Scan", "Index Only Scan":
				scans++
				if rows, _ := n["Actual Rows"].(float64); rows > 1 {
					t.Errorf("%s: the scan of %s returned %v rows, want at most 1:\n%s", name, n.Relation(), rows, plan)
				}
			}
		}
		if scans < 60 {
			t.Errorf("%s: %d index scans: the test meant to cover over sixty partitions:\n%s", name, scans, plan)
		}
	}
}

// A history gauge whose read fails reads NaN (unknown) rather than the last values as if they were
// current, and the log says why. The partition interval is a setting, not read: it stays.
func TestHistoryGaugesSayWhenTheyCannotBeRead(t *testing.T) {
	t.Parallel()
	pool, _ := recordingDatabase(t)
	parts := history.New(pool, history.Options{Interval: 24 * time.Hour})
	if _, err := parts.Make(t.Context()); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	history.RegisterMetricsReadingEvery(reg, history.NewMonitor(parts, history.Retention{}), slog.New(slog.NewTextHandler(&logs, nil)), 0)
	gauge := func(name, table string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				if table == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == table) {
					return m.GetGauge().GetValue()
				}
			}
		}
		t.Fatalf("no %s{table=%q}", name, table)
		return 0
	}
	if v := gauge("webhook_history_partitions", "events"); v < history.Ahead+1 {
		t.Fatalf("events partitions %v, want at least %d", v, history.Ahead+1)
	}
	if v := gauge("webhook_history_retention_overdue_seconds", ""); v != 0 {
		t.Errorf("retention overdue %v with nothing kept, want 0", v)
	}
	pool.Close() // every later read fails
	for _, g := range []struct{ name, table string }{
		{"webhook_history_partitions", "webhook_deliveries"}, {"webhook_history_partition_bytes", "events"},
		{"webhook_history_partitions_ahead_seconds", ""}, {"webhook_history_oldest_row_age_seconds", ""},
		{"webhook_history_retention_overdue_seconds", ""},
	} {
		if v := gauge(g.name, g.table); !math.IsNaN(v) {
			t.Errorf("%s{%s} = %v after the read failed, want NaN", g.name, g.table, v)
		}
	}
	if v := gauge("webhook_history_partition_interval_seconds", ""); v != 86400 {
		t.Errorf("interval %v, want 86400", v)
	}
	if !strings.Contains(logs.String(), "reading the history gauges failed") {
		t.Errorf("the failed read was not logged:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
