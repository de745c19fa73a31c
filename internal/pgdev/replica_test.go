package pgdev

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A synchronous standby has every commit the primary acknowledged, refuses writes until promoted, and a
// multi-host URL with target_session_attrs=read-write reaches whichever of the two accepts writes.
func TestPrimaryStandbyKillPromote(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := tempDir(t)
	primary, err := StartPrimary(ctx, filepath.Join(dir, "primary"), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Stop() })
	standby, err := primary.StartStandby(ctx, filepath.Join(dir, "standby"), "test_standby", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	multi, err := MultiHostURL(Database, standby, primary) // the standby first: it must be skipped
	if err != nil {
		t.Fatal(err)
	}

	exec := func(url, sql string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	port := func(url string) int {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var p int
		if err := conn.QueryRow(ctx, "SELECT current_setting('port')::int").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := port(multi); p != primary.Port {
		t.Fatalf("the multi-host URL reached port %d, want the primary's %d", p, primary.Port)
	}
	if err := exec(multi, "CREATE TABLE t (n int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := exec(standby.URL(Database), "INSERT INTO t VALUES (2)"); err == nil {
		t.Fatal("the standby accepted a write")
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := exec(multi, "SELECT 1"); err == nil {
		t.Fatal("connected with the primary killed and the standby not promoted")
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if p := port(multi); p != standby.Port {
		t.Fatalf("after the promotion the multi-host URL reached port %d, want the standby's %d", p, standby.Port)
	}
	if err := exec(multi, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, multi)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows on the promoted standby: %d (%v), want the primary's one and its own", n, err)
	}
}
