// Package retention deletes old deliveries, their attempts and their events (HOOKLINE_RETENTION_DELIVERED,
// HOOKLINE_RETENTION_DEAD), archiving dead ones first when HOOKLINE_ARCHIVE_DIR is set.
//
// A Sweeper is registered as a task with the maintenance leader, so one process sweeps; each sweep also
// holds its own advisory lock, because leadership can briefly overlap during a handover and two sweeps
// would otherwise archive the same rows twice. Deletes run in bounded batches found by the partial indexes
// on delivered and dead rows, each batch its own short transaction with a pause after it, so the sweep
// never holds many locks or a long transaction. The pause is also paced by a token bucket of deleted rows
// (HOOKLINE_RETENTION_RATE), so a large sweep (the first after enabling retention, or after a long leader
// outage) spreads its deletes out instead of taking the database from the workers while it runs. The
// bucket is per process, which is per deployment: only the leader sweeps.
package retention

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/bounded"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/sleep"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Statement is how each of a sweep's batches runs (bounded.Do): within 30 s a try, three counted
// failures. A failed batch's transaction deleted nothing, so trying it again is safe.
var Statement = bounded.Policy{PerTry: 30 * time.Second, Tries: 3}

// LockKey is the advisory lock a sweep holds ("hookrete"), distinct from the maintenance leader's and
// goose's keys.
const LockKey int64 = 0x686f6f6b_72657465

// AttemptMinutesKept is how long the health's per-minute attempt counts (attempt_minutes) are kept: the
// longest health range (7 days) and a day to spare. They are swept whatever the retention settings say:
// nothing reads them later.
const AttemptMinutesKept = 8 * 24 * time.Hour

// eventGrace keeps the scan for events without deliveries away from events being published right now:
// an event's id is taken just before its transaction, which inserts it with its deliveries.
const eventGrace = 10 * time.Minute

// Options configure a Sweeper. Zero values take the defaults noted.
type Options struct {
	// Delivered is how long delivered deliveries are kept after their last attempt (0: forever).
	Delivered time.Duration
	// Dead is how long dead (failed or expired, discarded or not) deliveries are kept after dead_at (0: forever).
	Dead time.Duration
	// ArchiveDir, when set, receives dead deliveries as gzipped JSON Lines before they are deleted.
	ArchiveDir string
	// BatchSize is how many deliveries one statement deletes (default 1000).
	BatchSize int
	// Pause is the least wait after each batch (default 10 ms). The wait is at least as long as the batch
	// took, so a sweep keeps at most half of one connection's time.
	Pause time.Duration
	// Rate is the most deliveries (each with its attempts, and its event once it has no other delivery)
	// a sweep deletes per second (HOOKLINE_RETENTION_RATE). After each batch the sweep waits until a token
	// bucket filling at Rate and holding one batch has paid for the batch, if that is longer than the
	// pause; the events that never had a delivery and the per-minute attempt counts draw on the same
	// bucket, a row for a row. 0: no pace beyond the pause.
	Rate float64
	// Limiter, when set, paces the batches instead of one made from Rate (tests inject one).
	Limiter *rate.Limiter
	// Clock is the pace's clock and Sleep the wait between batches (defaults time.Now and a timer that
	// ctx cuts short); tests inject both to see the waits without sleeping.
	Clock func() time.Time
	Sleep func(ctx context.Context, d time.Duration) bool
	// PartitionInterval is the span of the history's time partitions (HOOKLINE_PARTITION_INTERVAL, default
	// 24 h): a partition goes within one of them of its retention.
	PartitionInterval time.Duration
	// Interval is the pause between sweeps (HOOKLINE_RETENTION_INTERVAL), only to warn when a paced sweep
	// outlasts it: if that keeps happening, rows expire faster than Rate deletes them.
	Interval time.Duration
	// Now is the clock the cutoffs are computed from (default time.Now).
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics
}

// Result counts what one sweep did.
type Result struct {
	Delivered int64 // delivered deliveries deleted
	Dead      int64 // dead deliveries deleted
	Events    int64 // events deleted (left without deliveries, or never matched a subscription)
	Archived  int64 // dead deliveries written to the archive
	Minutes   int64 // per-minute attempt counts past AttemptMinutesKept deleted
	// PartitionsDropped and PartitionsCompacted count the time partitions past retention dropped whole or
	// replaced by what is still kept of them.
	PartitionsDropped, PartitionsCompacted int
	// ArchiveFile is the file this sweep appended to, if any.
	ArchiveFile string
	// Skipped says another sweep held the lock, so this one did nothing.
	Skipped  bool
	Duration time.Duration
}

// Metrics are retention's Prometheus counters.
type Metrics struct {
	Deleted  *prometheus.CounterVec
	Archived prometheus.Counter
}

// NewMetrics registers retention's metrics on reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookline_retention_deleted_total",
			Help: "Rows deleted by retention sweeps: delivered and dead deliveries (with their attempts), and events.",
		}, []string{"kind"}),
		Archived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookline_retention_archived_total",
			Help: "Dead deliveries written to HOOKLINE_ARCHIVE_DIR before deletion.",
		}),
	}
	for _, k := range []string{"delivered", "dead", "events"} {
		m.Deleted.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.Deleted, m.Archived)
	}
	return m
}

// Sweeper deletes what the retention settings say is old.
type Sweeper struct {
	pool *pgxpool.Pool
	o    Options
	log  *slog.Logger

	// mu serialises this process's sweeps and guards watermark.
	mu sync.Mutex
	// watermark: every event with a smaller id has been checked for deliveries by an earlier sweep. Events
	// never gain deliveries after their publish, so the scan for ones that had none starts here instead of
	// rereading the whole table each minute. It lives in memory: a new leader rescans once.
	watermark uuid.UUID
}

// New returns a Sweeper on pool.
func New(pool *pgxpool.Pool, o Options) *Sweeper {
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.Pause <= 0 {
		o.Pause = 10 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PartitionInterval <= 0 {
		o.PartitionInterval = 24 * time.Hour
	}
	if o.Limiter == nil && o.Rate > 0 {
		o.Limiter = rate.NewLimiter(rate.Limit(o.Rate), o.BatchSize)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep.For
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return &Sweeper{pool: pool, o: o, log: o.Logger}
}

// Sweep deletes every delivery past its retention, archiving dead ones first when configured, then the
// events left without deliveries. It returns Skipped when another sweep holds the lock.
func (s *Sweeper) Sweep(ctx context.Context) (res Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	started := time.Now()
	now := s.o.Now()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("retention: %w", err)
	}
	defer conn.Release()
	got, err := db.New(conn).TryAdvisoryLock(ctx, LockKey)
	if err != nil {
		return res, fmt.Errorf("retention: lock: %w", err)
	}
	if !got {
		s.log.Debug("retention sweep skipped: another sweep is running")
		return Result{Skipped: true}, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, uerr := db.New(conn).AdvisoryUnlock(uctx, LockKey); uerr != nil {
			// A pooled connection must not go back still holding the lock: closing the session frees it
			// and makes the pool drop the connection.
			_ = conn.Conn().Close(uctx)
		}
	}()

	// Every statement runs on the locked connection: one connection, whatever the sweep's size.
	legacy, err := legacyUntil(ctx, db.New(conn))
	if err != nil {
		return s.done(res, started, err)
	}
	if s.o.Delivered > 0 {
		// Delivered deliveries one by one only in the legacy partition (from before partitioning); the
		// time partitions go whole (compactPartitions, after the dead ones have gone).
		if err := s.deleteBatches(ctx, conn, &res.Delivered, &res.Events, "delivered", func(ctx context.Context, q *db.Queries) ([]uuid.UUID, error) {
			return q.DeleteDeliveredBefore(ctx, db.DeleteDeliveredBeforeParams{Cutoff: now.Add(-s.o.Delivered), Max: int32(s.o.BatchSize), LegacyUntil: legacy})
		}); err != nil {
			return s.done(res, started, err)
		}
	}
	if s.o.Dead > 0 {
		cutoff := now.Add(-s.o.Dead)
		if s.o.ArchiveDir != "" {
			err = s.archiveDead(ctx, conn, cutoff, now, &res)
		} else {
			err = s.deleteBatches(ctx, conn, &res.Dead, &res.Events, "dead", func(ctx context.Context, q *db.Queries) ([]uuid.UUID, error) {
				return q.DeleteDeadBefore(ctx, db.DeleteDeadBeforeParams{Cutoff: cutoff, Max: int32(s.o.BatchSize)})
			})
		}
		if err != nil {
			return s.done(res, started, err)
		}
	}
	if err := s.compactPartitions(ctx, conn, now, &res); err != nil {
		return s.done(res, started, err)
	}
	if keep := s.eventRetention(); keep > 0 {
		if err := s.deleteUndeliveredEvents(ctx, conn, now.Add(-keep), legacy, &res); err != nil {
			return s.done(res, started, err)
		}
	}
	return s.done(res, started, s.deleteOldMinutes(ctx, conn, now.Add(-AttemptMinutesKept), &res))
}

// eventRetention is how long an event that never had a delivery is kept: the smaller retention, since
// such an event is worth no more than a delivered one. 0 means both kinds are kept forever.
func (s *Sweeper) eventRetention() time.Duration {
	keep := s.o.Delivered
	if s.o.Dead > 0 && (keep == 0 || s.o.Dead < keep) {
		keep = s.o.Dead
	}
	if keep > 0 {
		keep = max(keep, eventGrace)
	}
	return keep
}

func (s *Sweeper) done(res Result, started time.Time, err error) (Result, error) {
	res.Duration = time.Since(started)
	s.log.Info("retention sweep", "delivered", res.Delivered, "dead", res.Dead, "events", res.Events,
		"partitions_dropped", res.PartitionsDropped, "partitions_compacted", res.PartitionsCompacted,
		"minutes", res.Minutes, "archived", res.Archived, "archive_file", res.ArchiveFile, "duration", res.Duration, "err", err)
	if err == nil && s.o.Rate > 0 && s.o.Interval > 0 && res.Duration > s.o.Interval {
		s.log.Warn("the retention sweep took longer than HOOKLINE_RETENTION_INTERVAL, paced by HOOKLINE_RETENTION_RATE: "+
			"normal for a catch-up, but if it keeps happening deliveries expire faster than the rate deletes them; raise it",
			"rate_per_second", s.o.Rate, "duration", res.Duration, "interval", s.o.Interval)
	}
	if err != nil {
		err = fmt.Errorf("retention: %w", err)
	}
	return res, err
}

// deleteBatches runs del in its own transaction, together with deleting the events it left without
// deliveries, until a batch comes back short.
func (s *Sweeper) deleteBatches(ctx context.Context, conn *pgxpool.Conn, deleted, events *int64, kind string,
	del func(context.Context, *db.Queries) ([]uuid.UUID, error)) error {
	for {
		var n, ev int64
		start := time.Now()
		err := bounded.Do(ctx, Statement, func(ctx context.Context) error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				q := db.New(tx)
				eventIDs, err := del(ctx, q)
				if err != nil {
					return fmt.Errorf("delete %s deliveries: %w", kind, err)
				}
				n = int64(len(eventIDs))
				ev, err = deleteEmptiedEvents(ctx, q, eventIDs)
				return err
			})
		})
		if err != nil {
			return err
		}
		s.count(kind, n, deleted)
		s.count("events", ev, events)
		if n < int64(s.o.BatchSize) {
			return nil
		}
		if !s.pause(ctx, time.Since(start), n) {
			return ctx.Err()
		}
	}
}

// deleteOldMinutes deletes per-minute attempt counts older than cutoff, a batch at a time.
func (s *Sweeper) deleteOldMinutes(ctx context.Context, conn *pgxpool.Conn, cutoff time.Time, res *Result) error {
	q := db.New(conn)
	for {
		start := time.Now()
		var n int64
		err := bounded.Do(ctx, Statement, func(ctx context.Context) (err error) {
			n, err = q.DeleteAttemptMinutesBefore(ctx, db.DeleteAttemptMinutesBeforeParams{Cutoff: cutoff, Max: int32(s.o.BatchSize)})
			return err
		})
		if err != nil {
			return fmt.Errorf("delete old attempt minutes: %w", err)
		}
		res.Minutes += n
		if n < int64(s.o.BatchSize) || !s.pause(ctx, time.Since(start), n) {
			return ctx.Err()
		}
	}
}

// deleteEmptiedEvents deletes those of the events whose deliveries were just deleted that have none left.
func deleteEmptiedEvents(ctx context.Context, q *db.Queries, eventIDs []uuid.UUID) (int64, error) {
	if len(eventIDs) == 0 {
		return 0, nil
	}
	slices.SortFunc(eventIDs, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	n, err := q.DeleteEventsWithoutDeliveries(ctx, slices.Compact(eventIDs))
	if err != nil {
		return 0, fmt.Errorf("delete events left without deliveries: %w", err)
	}
	return n, nil
}

// deleteUndeliveredEvents deletes events older than cutoff that no subscription matched, scanning ids
// from the watermark up to the UUIDv7 boundary of cutoff in primary-key order.
// Only the legacy partition is scanned (ids before legacyUntil): a time partition's events without
// deliveries go with it.
func (s *Sweeper) deleteUndeliveredEvents(ctx context.Context, conn *pgxpool.Conn, cutoff time.Time, legacyUntil uuid.UUID, res *Result) error {
	before := UUIDv7Floor(cutoff)
	if slices.Compare(legacyUntil[:], before[:]) < 0 {
		before = legacyUntil
	}
	q := db.New(conn)
	for slices.Compare(s.watermark[:], before[:]) < 0 {
		start := time.Now()
		r, err := q.DeleteUndeliveredEventsInRange(ctx, db.DeleteUndeliveredEventsInRangeParams{
			After: s.watermark, Before: before, Max: int32(s.o.BatchSize),
		})
		if err != nil {
			return fmt.Errorf("delete events without deliveries: %w", err)
		}
		s.count("events", int64(r.Deleted), &res.Events)
		if int(r.Scanned) < s.o.BatchSize {
			// No id equals before (a real UUIDv7 has its version bits set), so nothing is skipped.
			s.watermark = before
			return nil
		}
		s.watermark = r.LastID
		// Paced by the rows deleted, not scanned: the scan reads ids only, and a new leader rescans the
		// whole table once, which at the deletes' pace would hold retention up for hours.
		if !s.pause(ctx, time.Since(start), int64(r.Deleted)) {
			return ctx.Err()
		}
	}
	return nil
}

func (s *Sweeper) count(kind string, n int64, total *int64) {
	*total += n
	if n > 0 {
		s.o.Metrics.Deleted.WithLabelValues(kind).Add(float64(n))
	}
}

// pause waits after a batch that took took and deleted rows: as long again, at least Pause, and, when
// paced, until the bucket has paid for the rows. It reports false when ctx ended first.
func (s *Sweeper) pause(ctx context.Context, took time.Duration, rows int64) bool {
	wait := max(s.o.Pause, took)
	if lim := s.o.Limiter; lim != nil && rows > 0 {
		now := s.o.Clock()
		// A batch never holds more rows than the bucket (it is made one batch deep), but an injected
		// limiter may be shallower: a reservation over its burst would never be granted.
		n := int(min(rows, int64(max(lim.Burst(), 1))))
		wait = max(wait, lim.ReserveN(now, n).DelayFrom(now))
	}
	return s.o.Sleep(ctx, wait)
}

// UUIDv7Floor is the smallest UUIDv7 of t's millisecond: every id made (by uuid_v7() or uuid.NewV7) before
// that millisecond sorts below it, as PostgreSQL compares uuids bytewise.
func UUIDv7Floor(t time.Time) uuid.UUID {
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(max(t.UnixMilli(), 0)))
	copy(u[:6], ms[2:])
	return u
}
