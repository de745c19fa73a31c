package testdb

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var dbURL string

func TestMain(m *testing.M) { Main(m, "testdb", func(u string) { dbURL = u }) }

func TestMainDatabase(t *testing.T) {
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
