package history

import (
	"context"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Every delivery enters the queue partition (webhook_deliveries_queue) when published and leaves it by a
// delete when it finishes (its row moves to its time partition), after an update or two in between: the
// queue's pages and index entries are mostly dead row versions after a busy while, and each claim and
// publish reads past them until a vacuum clears them. Autovacuum comes round when it can (not at all where
// it is off), so the maintenance leader vacuums the queue itself whenever it has churned: the queue holds
// only the work to do, so its vacuum is short however long the history.

// UpkeepInterval is how often the leader looks at the queue's churn and the partitions' statistics.
const UpkeepInterval = 5 * time.Second

// QueueVacuumAfter is how many dead row versions make the queue worth a vacuum (when they are also more
// than a quarter of its live rows: a long backlog's few dead versions are not).
const QueueVacuumAfter = 2000

// VacuumQueue vacuums and analyzes the queue partition when it has churned (QueueVacuumAfter) and says
// whether it did.
func VacuumQueue(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	q := db.New(pool)
	churn, err := q.QueueChurn(ctx)
	if err != nil {
		return false, fmt.Errorf("history: queue churn: %w", err)
	}
	if churn.Dead < QueueVacuumAfter || churn.Dead < churn.Live/4 {
		return false, nil
	}
	if err := q.VacuumQueue(ctx); err != nil {
		return false, fmt.Errorf("history: vacuum the queue: %w", err)
	}
	return true, nil
}

// Upkeep is the leader's care of the tables the hot path reads: the queue partition vacuumed when it has
// churned (VacuumQueue), then the queue and the time partitions analyzed when their statistics are out of
// date. PostgreSQL plans on those statistics and every connection caches its plans; a partition starts
// each interval empty, and the queue can go from empty to a million waiting rows in a minute, so plans
// made before would read them whole (measured: a claim over a million waiting deliveries took 2 s, the
// events of the day read whole, with autovacuum off). An ANALYZE makes every connection plan again.
func Upkeep(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := VacuumQueue(ctx, pool); err != nil {
		return err
	}
	q := db.New(pool)
	names, err := q.HistoryTablesToAnalyze(ctx)
	if err != nil {
		return fmt.Errorf("history: tables to analyze: %w", err)
	}
	for _, name := range names {
		if err := q.AnalyzeHistoryTable(ctx, name); err != nil {
			return fmt.Errorf("history: analyze %s: %w", name, err)
		}
	}
	return nil
}
