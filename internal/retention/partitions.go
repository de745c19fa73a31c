package retention

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/bounded"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Delivered deliveries in the history's time partitions are never deleted one by one: a time partition
// whose whole span is past HOOKLINE_RETENTION_DELIVERED is dropped, or replaced by a copy of what is still
// kept in it (history_compact, db/schema/00027_history_retention.sql). Half an interval of slack on top of
// the retention lets a partition go whole at its first look (every delivery made in it was delivered
// before it ended) and bounds how often a late one (a delivery resent long after it was made) makes its
// partition copied again: each delivery still goes within one interval of its retention.

// compactPartitions drops or compacts every time partition whose span ended more than the delivered
// retention and half an interval ago, oldest first, each in a transaction of its own.
func (s *Sweeper) compactPartitions(ctx context.Context, conn *pgxpool.Conn, now time.Time, res *Result) error {
	if s.o.Delivered <= 0 {
		return nil
	}
	q := db.New(conn)
	parts, err := q.ListHistoryPartitions(ctx)
	if err != nil {
		return fmt.Errorf("list history partitions: %w", err)
	}
	keepAfter := now.Add(-s.o.Delivered - s.o.PartitionInterval/2)
	for _, p := range parts {
		if p.Parent != "webhook_deliveries_finished" || p.EndsAt.After(keepAfter) {
			continue
		}
		part := strings.TrimPrefix(p.Name, "webhook_deliveries_")
		var outcome string
		err := bounded.Do(ctx, Statement, func(ctx context.Context) (err error) {
			outcome, err = q.CompactHistoryPartition(ctx, db.CompactHistoryPartitionParams{Part: part, KeepDeliveredAfter: keepAfter})
			return err
		})
		if err != nil {
			return fmt.Errorf("history partition %s: %w", part, err)
		}
		switch outcome {
		case "dropped":
			res.PartitionsDropped++
		case "compacted":
			res.PartitionsCompacted++
		}
		if outcome != "kept" {
			s.log.Info("history partition past retention", "partition", part, "outcome", outcome, "ended", p.EndsAt)
		}
	}
	// The detached partitions' files, removed outside the locks the compactions took.
	return bounded.Do(ctx, Statement, func(ctx context.Context) error {
		_, err := q.DropDetachedHistory(ctx)
		return err
	})
}

// legacyUntil is the first id after the legacy partitions: the rows before it are swept one by one, as
// before the history was partitioned.
func legacyUntil(ctx context.Context, q *db.Queries) (uuid.UUID, error) {
	until, err := q.HistoryCutover(ctx)
	if err != nil {
		return uuid.Nil, fmt.Errorf("history cut-over: %w", err)
	}
	return UUIDv7Floor(until), nil
}
