package delivery

import (
	"context"

	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// customPlans runs statements through the unnamed prepared statement, so PostgreSQL plans each call with
// its actual arguments. The engine pool otherwise caches prepared statements, and after a few calls
// PostgreSQL may settle on a generic plan that guesses every array argument holds ten elements. For the
// batched completion that guess picks a nested loop over the in-flight rows and the batch, which grows with
// the square of the batch (6 of 9 ms at 100 rows, measured); planned with the real batch it hashes. The
// statement descriptions stay cached, so this costs no extra round trip.
type customPlans struct{ db.DBTX }

func withCustomPlans(q db.DBTX) *db.Queries { return db.New(customPlans{q}) }

func (c customPlans) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return c.DBTX.Exec(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

func (c customPlans) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.DBTX.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

func (c customPlans) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.DBTX.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}
