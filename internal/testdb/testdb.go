// Package testdb gives each test package a fresh, migrated PostgreSQL
// database.
//
// The admin connection is, in order: $TEST_DATABASE_URL, $DATABASE_URL, or the
// project-managed cluster under <repo>/.data/postgres (started by pgdev.Ensure
// when needed). Typical use:
//
//	var dbURL string
//
//	func TestMain(m *testing.M) { testdb.Main(m, "api", func(u string) { dbURL = u }) }
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/hookline/hookline/internal/migrate"
	"github.com/hookline/hookline/internal/pgdev"
)

// migrateUp is migrate.Up; a variable so this package's own tests can swap it.
var migrateUp = migrate.Up

// AdminURL returns the URL of the server tests create their databases on.
func AdminURL(ctx context.Context) (string, error) {
	for _, env := range []string{"TEST_DATABASE_URL", "DATABASE_URL"} {
		if u := os.Getenv(env); u != "" {
			return u, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := pgdev.FindRepoRoot(wd)
	if err != nil {
		return "", fmt.Errorf("testdb: TEST_DATABASE_URL and DATABASE_URL are unset and %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return pgdev.Ensure(ctx, filepath.Join(root, ".data", "postgres"), log)
}

// Create makes a new database named prefix + "_" + a random suffix on the
// admin server, migrated, and returns its URL and a func that drops it. The
// database is a copy of a template migrated once per set of migrations on
// that server (see migratedTemplate): copying is a file copy, where running
// every migration again was a second of statements per package.
func Create(ctx context.Context, prefix string) (dbURL string, drop func(), err error) {
	admin, err := AdminURL(ctx)
	if err != nil {
		return "", nil, err
	}
	template, err := migratedTemplate(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	dbURL, drop, err = create(ctx, admin, prefix, template)
	if err != nil {
		return "", nil, err
	}
	if err := makeHistoryPartitions(ctx, dbURL); err != nil {
		drop()
		return "", nil, err
	}
	return dbURL, drop, nil
}

// makeHistoryPartitions makes the copy's history partitions up to three days from now, as a server's start
// does: a template made on an earlier day has them only up to three days from then.
func makeHistoryPartitions(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("testdb: history partitions: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT history_make_partitions(interval '1 day', now() + interval '3 days')"); err != nil {
		return fmt.Errorf("testdb: history partitions: %w", err)
	}
	return nil
}

// CreateEmpty is Create without the migrations, for tests of migrating itself.
func CreateEmpty(ctx context.Context, prefix string) (dbURL string, drop func(), err error) {
	admin, err := AdminURL(ctx)
	if err != nil {
		return "", nil, err
	}
	return create(ctx, admin, prefix, "")
}

// create makes the database, a copy of template when it is not "".
func create(ctx context.Context, admin, prefix, template string) (dbURL string, drop func(), err error) {
	name, err := dbName(prefix)
	if err != nil {
		return "", nil, err
	}
	dbURL, err = withDatabase(admin, name)
	if err != nil {
		return "", nil, err
	}
	statement := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		statement += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := adminExec(ctx, admin, statement); err != nil {
		return "", nil, fmt.Errorf("testdb: create database %s: %w", name, err)
	}
	drop = func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(dctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: drop database %s: %v\n", name, err)
		}
	}
	return dbURL, drop, nil
}

// Main is for TestMain: it creates the database, passes its URL to setURL, runs the tests, checks that
// they left no goroutine running (goleak; ignore names what may outlive them, and why, at the caller),
// drops the database and exits with the tests' code.
func Main(m *testing.M, prefix string, setURL func(string), ignore ...goleak.Option) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	dbURL, drop, err := Create(ctx, prefix)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	setURL(dbURL)
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(ignore...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: the tests left goroutines running: %v\n", err)
			code = 1
		}
	}
	drop()
	os.Exit(code)
}

func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// dbName turns prefix into a valid lower-case identifier and appends a
// random suffix; the result fits PostgreSQL's 63-byte limit.
func dbName(prefix string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToLower(prefix) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	p := b.String()
	if p == "" || (p[0] >= '0' && p[0] <= '9') {
		p = "t_" + p
	}
	if len(p) > 40 {
		p = p[:40]
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return p + "_" + hex.EncodeToString(rnd[:]), nil
}

// withDatabase returns admin with its database replaced by name. admin may be
// a URL or a keyword/value connection string.
func withDatabase(admin, name string) (string, error) {
	if strings.HasPrefix(admin, "postgres://") || strings.HasPrefix(admin, "postgresql://") {
		u, err := url.Parse(admin)
		if err != nil {
			return "", fmt.Errorf("testdb: admin URL: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		q := u.Query()
		if q.Has("dbname") {
			q.Del("dbname")
			u.RawQuery = q.Encode()
		}
		return u.String(), nil
	}
	return admin + " dbname=" + name, nil // the last dbname wins
}
