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

// Retention is the retention settings, to judge whether retention keeps up.
type Retention struct {
	// Delivered and Dead are HOOKLINE_RETENTION_DELIVERED (after a delivery's last attempt) and
	// HOOKLINE_RETENTION_DEAD (after it died); 0 keeps that kind forever.
	Delivered, Dead time.Duration
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
	// OldestMade is when the oldest finished delivery kept was made (the time in its id), whatever keeps it;
	// zero when none is kept.
	OldestMade time.Time
	// StalestDelivered is the last attempt of the delivered delivery kept longest since it, StalestDead when
	// the dead one kept longest since it died died: what retention counts from. Zero when none is kept.
	StalestDelivered, StalestDead time.Time
	Retention                     Retention
}

// Kept are the times read from the deliveries kept: Status's OldestMade, StalestDelivered and StalestDead.
type Kept struct {
	OldestMade, StalestDelivered, StalestDead time.Time
}

// Summarize makes the Status of these partitions and deliveries kept at now.
func Summarize(parts []Partition, kept Kept, now time.Time, interval time.Duration, r Retention) Status {
	s := Status{At: now, Interval: interval, MadeUntil: MadeUntil(parts), OldestMade: kept.OldestMade,
		StalestDelivered: kept.StalestDelivered, StalestDead: kept.StalestDead, Retention: r}
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

// Overdue is how long past its retention setting the delivery kept longest past it is, and its kind
// ("delivered" or "dead"); 0 and "" when none is past. A kind kept forever (its setting 0) is never past.
// Retention is measured as it deletes: from a delivered delivery's last attempt and from a dead one's
// death, so a delivery resent or replayed long after it was made is not overdue while its new retention
// runs, however old its partition.
func (s Status) Overdue() (time.Duration, string) {
	var over time.Duration
	kind := ""
	if s.Retention.Delivered > 0 && !s.StalestDelivered.IsZero() {
		if d := s.At.Sub(s.StalestDelivered) - s.Retention.Delivered; d > over {
			over, kind = d, "delivered"
		}
	}
	if s.Retention.Dead > 0 && !s.StalestDead.IsZero() {
		if d := s.At.Sub(s.StalestDead) - s.Retention.Dead; d > over {
			over, kind = d, "dead"
		}
	}
	return over, kind
}

// Behind says retention is behind: a delivery is kept over an interval past its retention. Within one
// interval is its normal course (a time partition goes once every delivered delivery in it is past its
// retention, half an interval after, at the next sweep).
func (s Status) Behind() bool {
	over, _ := s.Overdue()
	return over > s.Interval
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

// Read reads the partitions and the deliveries kept: four statements, one row per partition from the
// catalog and three times one index probe per partition.
func (m *Monitor) Read(ctx context.Context) (Status, error) {
	parts, kept, err := m.read(ctx)
	if err != nil {
		return Status{}, err
	}
	return m.summarize(parts, kept), nil
}

// read reads what Status is made of: the partitions and the times of the deliveries kept.
func (m *Monitor) read(ctx context.Context) ([]Partition, Kept, error) {
	parts, err := m.parts.List(ctx)
	if err != nil {
		return nil, Kept{}, err
	}
	q := db.New(m.parts.pool)
	var kept Kept
	for _, r := range []struct {
		what string
		into *time.Time
		read func(context.Context) (time.Time, error)
	}{
		{"oldest delivery", &kept.OldestMade, q.OldestHistoryDelivery},
		{"stalest delivered delivery", &kept.StalestDelivered, q.StalestDelivered},
		{"stalest dead delivery", &kept.StalestDead, q.StalestDead},
	} {
		t, err := r.read(ctx)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) { // no row: none kept, zero
			return nil, Kept{}, fmt.Errorf("history: %s: %w", r.what, err)
		}
		*r.into = t
	}
	return parts, kept, nil
}

// summarize is the Status of what read read, now.
func (m *Monitor) summarize(parts []Partition, kept Kept) Status {
	return Summarize(parts, kept, m.Now(), m.parts.Interval(), m.retention)
}
