package pgfail

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
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
	ctx := t.Context()
	nobody, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody.Close() // a port nothing listens on
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = nobody.Addr().String()
	closedPort := u.String()

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
