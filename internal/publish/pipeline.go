package publish

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Running two sqlc queries in one round trip: a queueing DBTX takes each generated method's statement
// and arguments into a pgx.Batch (the method then returns errQueued), the batch goes out at once, and a
// batchReader DBTX hands each method, called again in the same order, its statement's result to scan.
// The statements of a batch share one Sync, so PostgreSQL runs them as one implicit transaction that
// commits after the last: a failure in any rolls all of them back.

var errQueued = errors.New("statement queued")

type queueing struct{ b *pgx.Batch }

func (q queueing) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	q.b.Queue(sql, args...)
	return nil, errQueued
}

func (q queueing) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.b.Queue(sql, args...)
	return pgconn.CommandTag{}, errQueued
}

func (q queueing) QueryRow(context.Context, string, ...any) pgx.Row {
	panic("queueing: QueryRow cannot be pipelined (its row is scanned at once)")
}

type batchReader struct{ br pgx.BatchResults }

func (r batchReader) Query(context.Context, string, ...any) (pgx.Rows, error) { return r.br.Query() }

func (r batchReader) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return r.br.Exec()
}

func (r batchReader) QueryRow(context.Context, string, ...any) pgx.Row { return r.br.QueryRow() }
