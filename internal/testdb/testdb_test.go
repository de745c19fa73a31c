package testdb

import (
	"context"
	"encoding/hex"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db/schema"
)

var dbURL string

func TestMain(m *testing.M) { Main(m, "testdb", func(u string) { dbURL = u }) }

func TestMainDatabase(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var name string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "testdb_") {
		t.Fatalf("database %q", name)
	}
	var migrated bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('goose_db_version') IS NOT NULL").Scan(&migrated); err != nil || !migrated {
		t.Fatalf("migrations not applied: %v %v", migrated, err)
	}
}

func TestCreateDrop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, drop, err := Create(ctx, "Create-Drop")
	if err != nil {
		t.Fatal(err)
	}
	if u == dbURL {
		t.Fatal("same URL as the package database")
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	// conn stays open: DROP ... WITH (FORCE) must still work.
	drop()
	conn.Close(ctx)

	admin, err := AdminURL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	var exists bool
	if err := ac.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || exists {
		t.Fatalf("database %s still exists after drop (err %v)", name, err)
	}
}

func TestDBName(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	for _, p := range []string{"api", "Create-Drop", "", "9lives", strings.Repeat("x", 100), "ünïcode/pkg"} {
		n, err := dbName(p)
		if err != nil {
			t.Fatal(err)
		}
		if !valid.MatchString(n) || len(n) > 63 {
			t.Errorf("dbName(%q) = %q", p, n)
		}
	}
	a, _ := dbName("x")
	b, _ := dbName("x")
	if a == b {
		t.Errorf("names not random: %q", a)
	}
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u@h:5/admin?sslmode=disable":         "postgres://u@h:5/new?sslmode=disable",
		"postgresql://u:p@h/?dbname=old&sslmode=disable": "postgresql://u:p@h/new?sslmode=disable",
		"host=h user=u dbname=admin":                     "host=h user=u dbname=admin dbname=new",
	} {
		got, err := withDatabase(in, "new")
		if err != nil || got != want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Databases are copies of one migrated template per set of migrations: packages creating theirs at the
// same moment (as go test's parallel processes do) all get a fully migrated database, and the template
// is built once.
func TestCreateCopiesOneMigratedTemplate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	admin, err := AdminURL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := fs.Glob(schema.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	urls := make([]string, 4)
	errs := make([]error, 4)
	for i := range urls {
		wg.Go(func() {
			var drop func()
			urls[i], drop, errs[i] = Create(ctx, "template_copy")
			if errs[i] == nil {
				t.Cleanup(drop)
			}
		})
	}
	wg.Wait()
	for i, u := range urls {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var applied int
		err = conn.QueryRow(ctx, "SELECT count(*) FROM goose_db_version WHERE version_id > 0 AND is_applied").Scan(&applied)
		conn.Close(ctx)
		if err != nil || applied != len(entries) {
			t.Fatalf("database %d: %d migrations applied of %d (%v)", i, applied, len(entries), err)
		}
	}
	sum, err := migrationsHash()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var templates int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE $1",
		"hookline_template_"+hex.EncodeToString(sum[:8])+"%").Scan(&templates); err != nil || templates != 1 {
		t.Fatalf("%d templates for these migrations (%v), want 1 and none left building", templates, err)
	}
}
