package phases

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/retention"
)

// retention: what retention by partition costs. First, on one database and server: the time to drop a
// day's partitions (history_compact, as the retention sweep calls it) of -retention-drop-n deliveries all
// delivered, and of a tenth of that (a drop is meant to cost the same whatever the rows), and to compact a
// day of -retention-drop-n with 5 % dead deliveries (kept: copied into a new partition); the first and the
// last during a drain (a), against the same drain without. Then -retention-days simulated days on a
// database of their own, each a day of -retention-day-n deliveries loaded and a retention sweep with its
// clock at the day's end (-retention-keep delivered and dead): the database's size after each.
func (b *Bench) retention(ctx context.Context) error {
	if err := b.retentionDrop(ctx); err != nil {
		return err
	}
	return b.retentionDays(ctx)
}

// compaction is one history_compact of a day's partitions, timed.
type compaction struct {
	day     historyDay
	outcome string
	took    time.Duration
	// failed is the error of a try during a drain (a deadlock with the drain's statements, say), after
	// which it was made again alone: the retention sweep tries again at its next run.
	failed error
}

// retryAlone makes a compaction that failed during a drain again, up to three times, as the retention
// sweep would at its next runs; the last failure is its outcome.
func (cp *compaction) retryAlone(ctx context.Context, d *testbed.Database) {
	for try := 1; try <= 3; try++ {
		err := cp.run(ctx, d)
		if err == nil {
			return
		}
		fmt.Printf("retention: alone, try %d: %v\n", try, err)
	}
}

// noun names what history_compact did: the drop, the compaction.
func (cp *compaction) noun() string {
	switch cp.outcome {
	case "dropped":
		return "drop"
	case "compacted":
		return "compaction"
	case "failed":
		return "failed compaction"
	}
	return "check (" + cp.outcome + ")"
}

func (cp *compaction) run(ctx context.Context, d *testbed.Database) error {
	t0 := time.Now()
	var err error
	cp.outcome, err = db.New(d.Pool).CompactHistoryPartition(ctx, db.CompactHistoryPartitionParams{
		Part: cp.day.partition(), KeepDeliveredAfter: time.Now(),
	})
	cp.took = time.Since(t0)
	if err != nil {
		cp.outcome = "failed"
		return fmt.Errorf("history_compact %s: %w", cp.day.partition(), err)
	}
	fmt.Printf("retention: %s of %d deliveries (%.0f %% dead): %s in %s\n", cp.day.partition(), cp.day.deliveries,
		100*cp.day.deadShare, cp.outcome, cp.took.Round(time.Millisecond))
	return nil
}

// drainWindow is the receiver's arrivals over a window of a drain: from when a quarter of its backlog has
// arrived, for a second or as long as an operation run then takes, whichever is longer.
type drainWindow struct {
	arrived int
	length  time.Duration
	ended   bool // the drain was over before the window
	err     error
}

func (w *drainWindow) rate() float64 { return float64(w.arrived) / w.length.Seconds() }

// during is what drainOn runs to measure w over a drain of n deliveries, running op (if any) in it and
// printing what the database's sessions waited for meanwhile.
func (b *Bench) during(db *testbed.Database, w *drainWindow, n int, op func(ctx context.Context) error) func(ctx context.Context) {
	return func(ctx context.Context) {
		deadline := time.Now().Add(b.o.Timeout)
		for u, _, _ := b.rc.Counts(); u < n/4; u, _, _ = b.rc.Counts() {
			if ctx.Err() != nil || time.Now().After(deadline) {
				w.err = fmt.Errorf("a quarter of the drain did not arrive")
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		before, _, _ := b.rc.Counts()
		start := time.Now()
		if op != nil {
			stop := sampleLockWaits(ctx, db)
			w.err = op(ctx)
			stop()
		}
		if rest := time.Second - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
		after, _, _ := b.rc.Counts()
		w.arrived, w.length, w.ended = after-before, time.Since(start), after >= n
	}
}

// retentionDrop loads three days (a tenth, all delivered; -retention-drop-n all delivered; as many with
// 5 % dead) and drops or compacts each, the latter two during drains.
func (b *Bench) retentionDrop(ctx context.Context) error {
	n := b.o.History.DropN
	today := time.Now().UTC().Truncate(24 * time.Hour)
	small := &compaction{day: historyDay{start: today.AddDate(0, 0, -3), deliveries: n / 10}}
	large := &compaction{day: historyDay{start: today.AddDate(0, 0, -2), deliveries: n}}
	withDead := &compaction{day: historyDay{start: today.AddDate(0, 0, -1), deliveries: n, deadShare: historyDeadShare}}
	d, err := b.o.Server.FreshDB(ctx, "retention")
	if err != nil {
		return err
	}
	defer d.Close()
	if err := startHistoryAt(ctx, d, small.day.start); err != nil {
		return err
	}
	s, err := b.o.Server.Start(ctx, d.URL, b.drainEnv(drainVariants[0])...)
	if err != nil {
		return err
	}
	defer func() { s.Stop() }()
	owners, err := b.ownersByAPI(ctx, testbed.NewClient(s.Base), 4, 10)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := loadHistoryDays(ctx, d, owners, []historyDay{small.day, large.day, withDead.day}, b.o.History.LoadWorkers); err != nil {
		return err
	}
	loaded := small.day.deliveries + large.day.deliveries + withDead.day.deliveries
	fmt.Printf("retention: %d deliveries loaded in %s\n", loaded, time.Since(t0).Round(time.Second))
	if _, err := settleHistory(ctx, d); err != nil {
		return err
	}
	return b.dropDuringDrains(ctx, d, s, small, large, withDead)
}

// dropDuringDrains runs a warm-up drain, then drains of twice -drain-n: without, during the large day's
// drop, without, during the compaction of the day with dead deliveries; then drops the small day alone.
func (b *Bench) dropDuringDrains(ctx context.Context, d *testbed.Database, s *testbed.Server, small, large, withDead *compaction) error {
	servers, v, n := []*testbed.Server{s}, drainVariants[0], 2*b.o.DrainN
	if _, _, err := b.drainOn(ctx, "retention", d, servers, v, max(b.o.DrainN/5, 1000), nil); err != nil {
		return fmt.Errorf("warm-up drain: %w", err)
	}
	var rates [4]float64
	var windows [4]drainWindow
	ops := [4]*compaction{nil, large, nil, withDead}
	for i, cp := range ops {
		var op func(context.Context) error
		if cp != nil {
			op = func(ctx context.Context) error {
				if cp.failed = cp.run(ctx, d); cp.failed != nil {
					fmt.Printf("retention: %v\n", cp.failed)
				}
				return nil
			}
		}
		rate, t, err := b.drainOn(ctx, "retention", d, servers, v, n, b.during(d, &windows[i], n, op))
		if err == nil {
			err = windows[i].err
		}
		if err != nil {
			return fmt.Errorf("drain %d: %w", i+1, err)
		}
		rates[i] = rate
		b.record("retention", fmt.Sprintf("drain %d", i+1), t)
		if cp != nil && cp.failed != nil {
			cp.retryAlone(ctx, d)
		}
		fmt.Printf("retention: drain %d: %.0f deliveries/s; %.0f/s over %s from its first quarter\n", i+1, rate,
			windows[i].rate(), windows[i].length.Round(time.Millisecond))
	}
	if small.failed = small.run(ctx, d); small.failed != nil {
		small.retryAlone(ctx, d)
	}
	b.reportDrops(small, large, withDead, rates, windows)
	return nil
}

func (b *Bench) reportDrops(small, large, withDead *compaction, rates [4]float64, windows [4]drainWindow) {
	for _, cp := range []*compaction{small, large, withDead} {
		name := fmt.Sprintf("a day of %d deliveries", cp.day.deliveries)
		if cp.day.deadShare > 0 {
			name += fmt.Sprintf(", %.0f %% dead", 100*cp.day.deadShare)
		}
		note := "history_compact, as the retention sweep runs it"
		if cp.failed != nil {
			note = fmt.Sprintf("alone, after failing during the drain (%v)", cp.failed)
		}
		b.res.Add("retention", name+", "+cp.outcome+": time", cp.took.Seconds(), "s", note)
	}
	when := "during a drain"
	if large.failed != nil {
		when = "alone, after failing during a drain"
	}
	b.res.Add("retention", report.RetentionDropTime, large.took.Seconds(), "s",
		fmt.Sprintf("%s, %d deliveries, %s; target < 1 s for 10 M", large.outcome, large.day.deliveries, when))
	without := (windows[0].rate() + windows[2].rate()) / 2
	b.res.Add("retention", "drain without: rate", (rates[0]+rates[2])/2, "deliveries/s", fmt.Sprintf("two drains of %d, mean", 2*b.o.DrainN))
	b.res.Add("retention", "drain without: rate over a second from its first quarter", without, "deliveries/s", "two drains, mean")
	for _, i := range []int{1, 3} {
		cp, w := large, windows[i]
		if i == 3 {
			cp = withDead
		}
		note := fmt.Sprintf("over %s from its first quarter", w.length.Round(time.Millisecond))
		if w.ended {
			note += "; the drain ended within it"
		}
		if cp.failed != nil {
			note += "; it failed: " + cp.failed.Error()
		}
		b.res.Add("retention", fmt.Sprintf("drain during the %s: rate", cp.noun()), rates[i], "deliveries/s", "the whole drain")
		b.res.Add("retention", fmt.Sprintf("drain during the %s: rate while it ran", cp.noun()), w.rate(), "deliveries/s", note)
		b.res.Add("retention", fmt.Sprintf("drain during the %s / without, while it ran", cp.noun()), w.rate()/without, "×", "")
	}
	b.res.Add("retention", report.RetentionDrainRatio, windows[1].rate()/without, "×",
		fmt.Sprintf("the %s of %d deliveries; while it ran, at least a second; target ≥ 0.95", large.noun(), large.day.deliveries))
}

// retentionDays simulates -retention-days days of -retention-day-n deliveries each, with a retention
// sweep at each day's end (the sweeper's clock injected; no server), and reports the database's size
// after each sweep and the last day's over the first day at which the sweep dropped a day.
func (b *Bench) retentionDays(ctx context.Context) error {
	h := b.o.History
	first := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -h.SimDays)
	d, err := b.o.Server.FreshDB(ctx, "retention_days")
	if err != nil {
		return err
	}
	defer d.Close()
	if err := startHistoryAt(ctx, d, first); err != nil {
		return err
	}
	owners, err := ownersBySQL(ctx, d, 4, 10)
	if err != nil {
		return err
	}
	var now time.Time
	sweeper := retention.New(d.Pool, retention.Options{
		Delivered: h.Keep, Dead: h.Keep, PartitionInterval: 24 * time.Hour, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	var sizes, histories []int
	reached := -1
	for i := range h.SimDays {
		day := historyDay{start: first.AddDate(0, 0, i), deliveries: h.DayN, deadShare: historyDeadShare}
		if err := loadHistoryDays(ctx, d, owners, []historyDay{day}, 1); err != nil {
			return err
		}
		now = day.start.Add(24 * time.Hour)
		res, err := sweeper.Sweep(ctx)
		if err != nil {
			return err
		}
		var size, history, minutes int
		if err := d.Pool.QueryRow(ctx, `SELECT pg_database_size(current_database()), (SELECT sum(bytes) FROM history_partitions()),
	pg_total_relation_size('attempt_minutes')`).Scan(&size, &history, &minutes); err != nil {
			return err
		}
		sizes, histories = append(sizes, size), append(histories, history)
		if reached < 0 && res.PartitionsDropped+res.PartitionsCompacted > 0 {
			reached = i
		}
		note := fmt.Sprintf("sweep at the day's end: %d dead deleted, %d days dropped, %d compacted, in %s",
			res.Dead, res.PartitionsDropped, res.PartitionsCompacted, res.Duration.Round(time.Millisecond))
		fmt.Printf("retention: day %d: database %d MiB, history partitions %d MiB, per-minute health counts %d MiB; %s\n",
			i+1, size>>20, history>>20, minutes>>20, note)
		b.res.Add("retention", fmt.Sprintf("day %d: database size", i+1), float64(size>>20), "MiB", note)
		b.res.Add("retention", fmt.Sprintf("day %d: history partitions", i+1), float64(history>>20), "MiB",
			fmt.Sprintf("per-minute health counts (kept 8 days) %d MiB", minutes>>20))
	}
	if reached < 0 {
		b.res.Add("retention", "database size: retention not reached", 0, "", fmt.Sprintf("no day dropped within %d days of %s retention", h.SimDays, h.Keep))
		return nil
	}
	last := len(sizes) - 1
	note := fmt.Sprintf("day %d / day %d (the first sweep that dropped a day); %d deliveries a day, %s retention", last+1, reached+1, h.DayN, h.Keep)
	b.res.Add("retention", report.RetentionSizeRatio, float64(sizes[last])/float64(sizes[reached]), "×", note)
	b.res.Add("retention", "history partitions, last day / first day at retention", float64(histories[last])/float64(histories[reached]), "×", note)
	return nil
}

// sampleLockWaits samples, every 50 ms until stopped, the locks the database's other sessions wait for,
// and then prints the statements that waited most and for what.
func sampleLockWaits(ctx context.Context, db *testbed.Database) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	waits := map[string]int{}
	samples := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := db.Pool.Query(ctx, `SELECT left(regexp_replace(a.query, '\s+', ' ', 'g'), 70) || ' → ' || l.mode || ' on ' || coalesce(l.relation::regclass::text, l.locktype)
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND a.datname = current_database() AND a.application_name NOT LIKE 'bench%'`)
			if err != nil {
				continue
			}
			for rows.Next() {
				var w string
				if rows.Scan(&w) == nil {
					waits[w]++
				}
			}
			rows.Close()
			samples++
		}
	}()
	return func() {
		cancel()
		<-done
		type kv struct {
			k string
			v int
		}
		var top []kv
		for k, v := range waits {
			top = append(top, kv{k, v})
		}
		slices.SortFunc(top, func(a, b kv) int { return b.v - a.v })
		for _, e := range top[:min(len(top), 5)] {
			fmt.Printf("  waiting in %d of %d samples: %s\n", e.v, samples, e.k)
		}
	}
}
