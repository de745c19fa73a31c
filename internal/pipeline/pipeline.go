// Package pipeline runs several sqlc queries in one round trip: a Queue DBTX takes each generated method's
// statement and arguments into a pgx.Batch (the method then returns ErrQueued), the batch goes out at once,
// and a Reader DBTX hands each method, called again in the same order, its statement's result to scan.
// The statements of a batch share one Sync, so PostgreSQL runs them as one implicit transaction that
// commits after the last: a failure in any rolls all of them back. Each statement still takes a snapshot
// of its own (READ COMMITTED), so a statement sees what an earlier one of the batch locked or wrote.
package pipeline

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrQueued is what a query method returns on a Queue: its statement was queued, not run.
var ErrQueued = errors.New("statement queued")

// Queue is a DBTX that queues every statement into B.
type Queue struct{ B *pgx.Batch }

func (q Queue) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	q.B.Queue(sql, args...)
	return nil, ErrQueued
}

func (q Queue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.B.Queue(sql, args...)
	return pgconn.CommandTag{}, ErrQueued
}

func (q Queue) QueryRow(context.Context, string, ...any) pgx.Row {
	panic("pipeline: QueryRow cannot be pipelined (its row is scanned at once)")
}

// Reader is a DBTX that hands out the results of a sent batch, in order.
type Reader struct{ BR pgx.BatchResults }

func (r Reader) Query(context.Context, string, ...any) (pgx.Rows, error) { return r.BR.Query() }

func (r Reader) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return r.BR.Exec()
}

func (r Reader) QueryRow(context.Context, string, ...any) pgx.Row { return r.BR.QueryRow() }
