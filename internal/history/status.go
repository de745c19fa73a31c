package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file is what operators see of the history (the /admin overview, the webhook_history_* metrics):
// its partitions, how far ahead they are made and whether retention keeps up.

// Retention is what the retention settings keep, to judge whether retention keeps up.
type Retention struct {
	// Delivered and Dead are HOOKLINE_RETENTION_DELIVERED and HOOKLINE_RETENTION_DEAD (0: kept forever).
	Delivered, Dead time.Duration
	// RetryWindow is HOOKLINE_RETRY_WINDOW: a delivery's retention counts from its last attempt or from when
	// it died, which come up to the window after it was made (the time its partition is chosen by).
	RetryWindow time.Duration
}

// Longest is how old a finished delivery may be made and still be kept: the longer of Delivered and Dead,
// after the retry window. false when one kind is kept forever (no age is then too old).
func (r Retention) Longest() (time.Duration, bool) {
	if r.Delivered <= 0 || r.Dead <= 0 {
		return 0, false
	}
	return max(r.Delivered, r.Dead) + r.RetryWindow, true
}

// TableStatus is one history table's partitions.
type TableStatus struct {
	Table      string
	Partitions int
	// Legacy says the oldest partition is the legacy one, holding every row made before Cutover (it has no
	// start); otherwise Oldest is the start of the oldest partition.
	Legacy  bool
	Cutover time.Time
	Oldest  time.Time
	// MadeUntil is the end of the newest partition: rows made before it have a partition.
	MadeUntil time.Time
	// Bytes is the partitions' size on disk, indexes and TOAST included.
	Bytes int64
}

// Status is the history as operators see it, read at At.
type Status struct {
	At       time.Time
	Interval time.Duration
	Tables   []TableStatus
	// MadeUntil is the end of the newest partition every table has (MadeUntil of the partitions).
	MadeUntil time.Time
	// OldestMade is when the oldest finished delivery kept was made; zero when none is kept.
	OldestMade time.Time
	Retention  Retention
}

// Summarize makes the Status of these partitions and oldest finished delivery at now.
func Summarize(parts []Partition, oldestMade, now time.Time, interval time.Duration, r Retention) Status {
	s := Status{At: now, Interval: interval, MadeUntil: MadeUntil(parts), OldestMade: oldestMade, Retention: r}
	for _, table := range Tables {
		ts := TableStatus{Table: table}
		for _, p := range parts { // oldest first per table (List)
			if p.Table != table {
				continue
			}
			ts.Partitions++
			ts.Bytes += p.Bytes
			switch {
			case p.Legacy:
				ts.Legacy, ts.Cutover = true, p.EndsAt
			case ts.Oldest.IsZero() || p.StartsAt.Before(ts.Oldest):
				ts.Oldest = p.StartsAt
			}
			if p.EndsAt.After(ts.MadeUntil) {
				ts.MadeUntil = p.EndsAt
			}
		}
		s.Tables = append(s.Tables, ts)
	}
	return s
}

// Ahead is how long from now rows still find their partition (negative: past the newest one).
func (s Status) Ahead() time.Duration { return s.MadeUntil.Sub(s.At) }

// IntervalsAhead is Ahead in intervals; the maintenance leader keeps it above Ahead (3) minus the time
// since its last turn.
func (s Status) IntervalsAhead() float64 { return float64(s.Ahead()) / float64(s.Interval) }

// ShortAhead says fewer than two intervals are made ahead: the leader has not made partitions for over an
// interval (stopped, or failing every turn), and the history's inserts fail when the rest runs out.
func (s Status) ShortAhead() bool { return s.Ahead() < 2*s.Interval }

// OldestAge is how old the oldest finished delivery kept is; 0 when none is kept.
func (s Status) OldestAge() time.Duration {
	if s.OldestMade.IsZero() {
		return 0
	}
	return max(s.At.Sub(s.OldestMade), 0)
}

// Behind is how much older the oldest finished delivery is than retention allows: its Longest setting
// and one interval (a partition goes once the newest row in it has had its retention, so its oldest rows
// are up to an interval older). 0 while retention keeps up, and when one kind is kept forever.
func (s Status) Behind() time.Duration {
	longest, ok := s.Retention.Longest()
	if !ok {
		return 0
	}
	return max(s.OldestAge()-longest-s.Interval, 0)
}

// Monitor reads the history's Status.
type Monitor struct {
	parts     *Partitions
	retention Retention
}

// NewMonitor reads the Status of parts' history against the retention settings r.
func NewMonitor(parts *Partitions, r Retention) *Monitor { return &Monitor{parts: parts, retention: r} }

// Interval is the span of one partition.
func (m *Monitor) Interval() time.Duration { return m.parts.Interval() }

// Retention is the settings retention is judged against.
func (m *Monitor) Retention() Retention { return m.retention }

// Now is the clock the history is made ahead of.
func (m *Monitor) Now() time.Time { return m.parts.o.Now() }

// Read reads the partitions and the oldest finished delivery: two statements, one row per partition and one
// index probe per partition.
func (m *Monitor) Read(ctx context.Context) (Status, error) {
	parts, oldest, err := m.read(ctx)
	if err != nil {
		return Status{}, err
	}
	return m.summarize(parts, oldest), nil
}

// read reads what Status is made of: the partitions and when the oldest finished delivery was made.
func (m *Monitor) read(ctx context.Context) ([]Partition, time.Time, error) {
	parts, err := m.parts.List(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	oldest, err := db.New(m.parts.pool).OldestHistoryDelivery(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return parts, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("history: oldest delivery: %w", err)
	}
	return parts, oldest, nil
}

// summarize is the Status of what read read, now.
func (m *Monitor) summarize(parts []Partition, oldest time.Time) Status {
	return Summarize(parts, oldest, m.Now(), m.parts.Interval(), m.retention)
}
