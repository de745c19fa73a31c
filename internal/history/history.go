// Package history keeps the delivery history's time partitions. events, webhook_attempts and the finished
// deliveries are partitioned by the time in their ids (UUIDv7), one partition per interval
// (HOOKLINE_PARTITION_INTERVAL), with no default partition: a row whose time has no partition is refused.
// So partitions are made ahead: by every process as it starts (before it serves) and by the maintenance
// leader's task, at least Ahead intervals past now, and the leader runs that task several times an
// interval, so a leader that misses turns still leaves days of margin.
package history

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ahead is how many intervals past now partitions are kept made.
const Ahead = 3

// TaskInterval is how often the maintenance leader makes partitions ahead: a few times an hour, so even
// hourly partitions are made long before they are needed and a failed turn (a lock it would wait on too
// long) is tried again soon.
const TaskInterval = 10 * time.Minute

// Tables are the partitioned tables of the history, as their partitions are listed (the finished
// deliveries' time partitions are those of webhook_deliveries_finished; the legacy one hangs from
// webhook_deliveries itself).
var Tables = []string{"events", "webhook_attempts", "webhook_deliveries"}

// Options configure Partitions. Zero values take the defaults noted.
type Options struct {
	// Interval is one partition's span (default 24 h).
	Interval time.Duration
	// Now is the clock partitions are made ahead of (default time.Now); tests move it forward.
	Now    func() time.Time
	Logger *slog.Logger
}

// Partitions makes and lists the history's partitions.
type Partitions struct {
	pool *pgxpool.Pool
	o    Options
}

// New returns Partitions over pool.
func New(pool *pgxpool.Pool, o Options) *Partitions {
	if o.Interval <= 0 {
		o.Interval = 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Partitions{pool: pool, o: o}
}

// Interval is the span of the partitions this makes.
func (p *Partitions) Interval() time.Duration { return p.o.Interval }

// Make makes the partitions missing up to Ahead intervals past now and returns how many intervals it made
// (each a partition of every history table). Two callers take turns; one that would wait over two seconds
// for the tables' locks (a long statement on them) fails and is tried again at its next turn.
func (p *Partitions) Make(ctx context.Context) (int, error) {
	made, err := db.New(p.pool).MakeHistoryPartitions(ctx, db.MakeHistoryPartitionsParams{
		StepSeconds: p.o.Interval.Seconds(),
		Horizon:     p.o.Now().Add(Ahead * p.o.Interval),
	})
	if err != nil {
		return 0, fmt.Errorf("history: make partitions: %w", err)
	}
	if made > 0 {
		p.o.Logger.Info("history partitions made", "intervals", made, "interval", p.o.Interval)
	}
	return int(made), nil
}

// Partition is one time partition of a history table.
type Partition struct {
	Table string
	Name  string
	// Legacy is the partition of every row from before the history was partitioned: it has no start.
	Legacy   bool
	StartsAt time.Time
	EndsAt   time.Time
	Bytes    int64
}

// List returns every time partition, by table and then oldest first.
func (p *Partitions) List(ctx context.Context) ([]Partition, error) {
	rows, err := db.New(p.pool).ListHistoryPartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("history: list partitions: %w", err)
	}
	parts := make([]Partition, len(rows))
	for i, r := range rows {
		table := r.Parent
		if table == "webhook_deliveries_finished" {
			table = "webhook_deliveries"
		}
		parts[i] = Partition{Table: table, Name: r.Name, Legacy: r.Legacy, StartsAt: r.StartsAt, EndsAt: r.EndsAt, Bytes: r.Bytes}
	}
	return parts, nil
}

// MadeUntil is the end of the newest partition that every history table has: an insert of a time before
// it finds its partition. Zero when a table has none.
func MadeUntil(parts []Partition) time.Time {
	var until time.Time
	for i, table := range Tables {
		var newest time.Time
		for _, part := range parts {
			if part.Table == table && part.EndsAt.After(newest) {
				newest = part.EndsAt
			}
		}
		if i == 0 || newest.Before(until) {
			until = newest
		}
	}
	return until
}
