// Package pgfail tells errors of a database that is away (down, restarting, failing over, unreachable)
// from errors of the statement itself, so the loops that must outlive a failover (the worker's completer,
// the replay runner) wait for the database instead of giving up on work that is fine.
package pgfail

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
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
