// Package pgfail tells errors of a database that is away (down, restarting, failing over, unreachable)
// from errors of the statement itself, so the loops that must outlive a failover (the worker's completer,
// the replay runner) wait for the database instead of giving up on work that is fine.
package pgfail

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Unavailable reports whether err says the database could not be reached or went away while the statement
// ran, rather than that the statement failed: no connection could be made (every host refused, or none
// accepted writes), the connection broke (EOF, reset, timeout), or the server was shutting down, crashed,
// was starting or is a read-only standby. The same statement may succeed once a primary answers again.
// A connection refused for its settings (authentication, a missing database, no CONNECT privilege) is
// not unavailability: waiting will not mend it.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection_exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		case pgErr.Code == "25006": // read_only_sql_transaction: the session is on a standby
			return true
		case strings.HasPrefix(pgErr.Code, "28"), pgErr.Code == "3D000", pgErr.Code == "42501":
			// invalid authorization, invalid_catalog_name (no such database), insufficient_privilege
			return false
		}
		var connectErr *pgconn.ConnectError
		return errors.As(err, &connectErr) // e.g. one host in recovery, the next one refusing TCP
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}

// TimedOut reports whether err says a statement ran out of time rather than that it failed or that its
// connection broke: its context's deadline passed, or PostgreSQL cancelled it (statement_timeout or a
// cancel request: query_canceled) or stopped it waiting for a lock (lock_timeout: lock_not_available). A
// connection that could not be made at all is not a timeout but unavailability, whatever stopped it.
//
// A timeout alone does not say whether the statement was slow (a lock wait, a bad plan) or the database
// stopped answering (a crashed primary's machine, a partition): Away asks the database.
func TimedOut(err error) bool {
	if err == nil {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57014" || pgErr.Code == "55P03" // query_canceled, lock_not_available
	}
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// Moved reports whether err says a row the statement was to change or lock was moved to another partition
// by a transaction that committed meanwhile (a delivery leaving or joining the queue's partition): PostgreSQL
// cannot follow a row across partitions, so it fails the statement with serialization_failure (40001)
// where it would otherwise have read the row's new version. The statement, run again, reads the row where
// it now is and decides from its state then.
func Moved(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// MovedTries is how often a change that finds its row moved (Moved) is tried in all.
const MovedTries = 3

// ProbeTimeout bounds Away's question to the database.
const ProbeTimeout = 2 * time.Second

// Away reports whether err, from a statement run on pool, means the database is away rather than that the
// statement failed. A broken or refused connection (Unavailable) is away. A timeout (TimedOut) is away
// only when the database does not answer a ping on pool within ProbeTimeout either: one that answers was
// there all along, and the statement was slow. Loops that wait out an outage without counting its tries
// (the completer, the replay runner) count a slow statement's, so it cannot hold them for good.
func Away(ctx context.Context, pool *pgxpool.Pool, err error) bool {
	if !TimedOut(err) {
		return Unavailable(err)
	}
	if ctx.Err() != nil {
		return false // the caller's own end, not the database's
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	return pool.Ping(pctx) != nil
}
