package history

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The history's gauges are read from the database when Prometheus scrapes, by every process, like the
// queue gauges, rather than set by the maintenance leader's partition task: the figures are the
// database's, not a process's, so every instance serves the same current ones and any of them answers
// (the rules take max or min over instances). A gauge the leader set would be served by one process only,
// absent elsewhere and after a restart until the task's next turn (TaskInterval), and left at its last
// values by a process that lost the leadership, which would look current. A read costs four statements
// (one row per partition from the catalog, then three of one index probe per partition), within
// readTimeout, and one read serves the scrapes of readEvery; the ages are taken against the clock at each scrape, so a cached
// read never makes them stand still.
const (
	readEvery   = 15 * time.Second
	readTimeout = 2 * time.Second
)

// RegisterMetrics registers the history's gauges on reg, read through m when scraped. A read that fails
// leaves the database's figures unknown (NaN) until one succeeds, rather than repeating the last ones as if
// they were current (partitions running out while their query times out would look fine), and log says
// so: when the failures start, at most once a minute while they last, and when they end.
func RegisterMetrics(reg prometheus.Registerer, m *Monitor, log *slog.Logger) {
	registerMetrics(reg, m, log, readEvery)
}

// registerMetrics is RegisterMetrics with one read serving the scrapes of every (tests: 0, every scrape reads).
func registerMetrics(reg prometheus.Registerer, m *Monitor, log *slog.Logger, every time.Duration) {
	r := &scrapeReader{m: m, log: log, every: every}
	gauge := func(name, help string, labels prometheus.Labels, v func(Status) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, func() float64 {
			s, ok := r.status()
			if !ok {
				return math.NaN()
			}
			return v(s)
		})
	}
	for _, table := range Tables {
		labels := prometheus.Labels{"table": table}
		reg.MustRegister(
			gauge("webhook_history_partitions", "Time partitions of a history table, the legacy one included.", labels,
				func(s Status) float64 { return float64(s.table(table).Partitions) }),
			gauge("webhook_history_partition_bytes", "Size on disk of a history table's time partitions (indexes and TOAST included).", labels,
				func(s Status) float64 { return float64(s.table(table).Bytes) }),
		)
	}
	reg.MustRegister(
		gauge("webhook_history_partitions_ahead_seconds", "How long from now every history table has partitions made: rows made later are refused until the maintenance leader makes more.", nil,
			func(s Status) float64 { return s.Ahead().Seconds() }),
		gauge("webhook_history_oldest_row_age_seconds", "Age of the oldest finished delivery kept (by the time in its id); 0 when none is kept.", nil,
			func(s Status) float64 { return s.OldestAge().Seconds() }),
		gauge("webhook_history_retention_overdue_seconds", "How long past its retention setting (HOOKLINE_RETENTION_DELIVERED after the last attempt, HOOKLINE_RETENTION_DEAD after death) the delivery kept longest past it is; 0 when none is.", nil,
			func(s Status) float64 { over, _ := s.Overdue(); return over.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "webhook_history_partition_interval_seconds",
			Help: "The time span of one history partition (HOOKLINE_PARTITION_INTERVAL).",
		}, func() float64 { return m.Interval().Seconds() }),
	)
}

// table is the status of one of Tables.
func (s Status) table(name string) TableStatus {
	for _, t := range s.Tables {
		if t.Table == name {
			return t
		}
	}
	return TableStatus{Table: name}
}

// scrapeReader reads the Status for the gauges: at most once per every, so every gauge of a scrape comes
// from the same read.
type scrapeReader struct {
	m     *Monitor
	log   *slog.Logger
	every time.Duration

	mu     sync.Mutex
	readAt time.Time // when the last read was tried (the process's own clock)
	parts  []Partition
	kept   Kept
	failed bool
	// failingSince and toldAt pace the failure's log lines.
	failingSince, toldAt time.Time
}

// status is the Status now from the last read, reading again when it is older than every; false when that
// read failed.
func (r *scrapeReader) status() (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.readAt.IsZero() || time.Since(r.readAt) >= r.every {
		r.read()
	}
	if r.failed {
		return Status{}, false
	}
	return r.m.summarize(r.parts, r.kept), true
}

func (r *scrapeReader) read() {
	r.readAt = time.Now()
	t := r.readAt
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	parts, kept, err := r.m.read(ctx)
	if err != nil {
		r.failed, r.parts, r.kept = true, nil, Kept{}
		switch {
		case r.failingSince.IsZero():
			r.failingSince, r.toldAt = t, t
			r.log.Warn("reading the history gauges failed: they read NaN until a read succeeds", "err", err)
		case t.Sub(r.toldAt) >= time.Minute:
			r.toldAt = t
			r.log.Warn("reading the history gauges still fails: they read NaN", "err", err, "failing_for", t.Sub(r.failingSince).Round(time.Second))
		}
		return
	}
	if !r.failingSince.IsZero() {
		r.log.Info("reading the history gauges works again", "failed_for", t.Sub(r.failingSince).Round(time.Second))
		r.failingSince = time.Time{}
	}
	r.failed, r.parts, r.kept = false, parts, kept
}
