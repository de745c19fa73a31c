package pgfail

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "pgfail", func(u string) { dbURL = u }) }

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Each error as a real server (or a missing one) gives it: the database away, or the statement wrong.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	closedPort := closedPortURL(t)

	cases := []struct {
		name string
		err  func(t *testing.T) error
		want bool
	}{
		{"no server on the port", func(t *testing.T) error {
			_, err := pgx.Connect(ctx, closedPort)
			return err
		}, true},
		{"session terminated by the server", func(t *testing.T) error {
			conn := connect(t, dbURL)
			_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
			if err == nil {
				_, err = conn.Exec(ctx, "SELECT 1")
			}
			return err
		}, true},
		{"connection closed under the statement", func(t *testing.T) error {
			conn := connect(t, dbURL)
			_ = conn.PgConn().Conn().Close()
			_, err := conn.Exec(ctx, "SELECT 1")
			return err
		}, true},
		{"statement cut off by its deadline", func(t *testing.T) error {
			conn := connect(t, dbURL)
			dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := conn.Exec(dctx, "SELECT pg_sleep(5)")
			return err
		}, true},
		{"write on a read-only session (a standby)", func(t *testing.T) error {
			conn := connect(t, dbURL)
			if _, err := conn.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
				t.Fatal(err)
			}
			_, err := conn.Exec(ctx, "CREATE TABLE pgfail_never (n int)")
			return err
		}, true},
		{"no such database (a setting to fix, not to wait out)", func(t *testing.T) error {
			v, _ := url.Parse(dbURL)
			v.Path = "/pgfail_no_such_database"
			_, err := pgx.Connect(ctx, v.String())
			return err
		}, false},
		{"syntax error", func(t *testing.T) error {
			_, err := connect(t, dbURL).Exec(ctx, "SELEC 1")
			return err
		}, false},
		{"unique violation", func(t *testing.T) error {
			_, err := connect(t, dbURL).Exec(ctx, "CREATE TEMP TABLE u (n int PRIMARY KEY); INSERT INTO u VALUES (1), (1)")
			return err
		}, false},
		{"no rows", func(t *testing.T) error {
			var n int
			return connect(t, dbURL).QueryRow(ctx, "SELECT 1 WHERE false").Scan(&n)
		}, false},
		{"the caller's own cancellation", func(t *testing.T) error { return context.Canceled }, false},
		{"other", func(t *testing.T) error { return errors.New("boom") }, false},
		{"nil", func(t *testing.T) error { return nil }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.err(t)
			if c.want && err == nil {
				t.Fatal("no error")
			}
			if got := Unavailable(err); got != c.want {
				t.Errorf("Unavailable(%v) = %v, want %v", err, got, c.want)
			}
		})
	}
}

// A statement that ran out of time, told from one that failed and from a connection that broke, each as
// a real server gives it.
func TestTimedOut(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cases := []struct {
		name string
		err  func(t *testing.T) error
		want bool
	}{
		{"statement cut off by its context's deadline", func(t *testing.T) error {
			dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := connect(t, dbURL).Exec(dctx, "SELECT pg_sleep(5)")
			return err
		}, true},
		{"statement_timeout", func(t *testing.T) error {
			conn := connect(t, dbURL)
			if _, err := conn.Exec(ctx, "SET statement_timeout = 50"); err != nil {
				t.Fatal(err)
			}
			_, err := conn.Exec(ctx, "SELECT pg_sleep(5)")
			return err
		}, true},
		{"lock_timeout", func(t *testing.T) error { return lockTimeout(t) }, true},
		{"session terminated by the server", func(t *testing.T) error {
			conn := connect(t, dbURL)
			_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
			if err == nil {
				_, err = conn.Exec(ctx, "SELECT 1")
			}
			return err
		}, false},
		{"no server on the port", func(t *testing.T) error {
			_, err := pgx.Connect(ctx, closedPortURL(t))
			return err
		}, false},
		{"syntax error", func(t *testing.T) error {
			_, err := connect(t, dbURL).Exec(ctx, "SELEC 1")
			return err
		}, false},
		{"nil", func(t *testing.T) error { return nil }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.err(t)
			if c.want && err == nil {
				t.Fatal("no error")
			}
			if got := TimedOut(err); got != c.want {
				t.Errorf("TimedOut(%v) = %v, want %v", err, got, c.want)
			}
		})
	}
}

// A timeout is the database being away only when the database does not answer either: a slow statement
// (a lock wait, statement_timeout, its own deadline) on a database that answers is not an outage, while a
// broken connection, or a timeout on a database that accepts connections and says nothing, is.
func TestAway(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	live, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	deadline := func(t *testing.T, pool *pgxpool.Pool) error {
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := pool.Exec(dctx, "SELECT pg_sleep(5)")
		if err == nil {
			t.Fatal("no error")
		}
		return err
	}

	// A listener that takes connections and never says a word: a primary's machine gone silent.
	silentLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silentLn.Close()
	go func() {
		for {
			c, err := silentLn.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	u, _ := url.Parse(dbURL)
	u.Host = silentLn.Addr().String()
	silent, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	if Away(ctx, live, deadline(t, live)) {
		t.Error("a statement past its deadline on a database that answers counts as the database away")
	}
	if err := lockTimeout(t); Away(ctx, live, err) {
		t.Errorf("a lock_timeout (%v) counts as the database away", err)
	}
	// The same timeout, on a pool whose database stopped answering: its connection attempt hangs too.
	if err := deadline(t, live); !Away(ctx, silent, err) {
		t.Errorf("a timeout (%v) on a database that does not answer does not count as away", err)
	}
	_, err = pgx.Connect(ctx, closedPortURL(t))
	if !Away(ctx, live, err) {
		t.Errorf("a refused connection (%v) does not count as away", err)
	}
	if _, err := live.Exec(ctx, "SELEC 1"); Away(ctx, live, err) {
		t.Errorf("a syntax error (%v) counts as away", err)
	}
}

// lockTimeout is the error of a statement that gave up waiting for a lock another transaction holds. The
// table is the test's own: tests running in parallel neither create it at once nor wait on each other's
// lock.
func lockTimeout(t *testing.T) error {
	ctx := t.Context()
	table := pgx.Identifier{"pgfail_locked_" + strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))}.Sanitize()
	holder := connect(t, dbURL)
	if _, err := holder.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (n int)"); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	waiter := connect(t, dbURL)
	if _, err := waiter.Exec(ctx, "SET lock_timeout = 50"); err != nil {
		t.Fatal(err)
	}
	_, err = waiter.Exec(ctx, "SELECT * FROM "+table)
	return err
}

// closedPortURL is the test database's URL on a port nothing listens on.
func closedPortURL(t *testing.T) string {
	nobody, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody.Close()
	u, _ := url.Parse(dbURL)
	u.Host = nobody.Addr().String()
	return u.String()
}
