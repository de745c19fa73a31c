package testdb

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Statements is a pgx.QueryTracer (set it as a pool's ConnConfig.Tracer) that keeps the SQL and arguments
// of the last run of each named sqlc query, so a test can EXPLAIN a query exactly as the code ran it.
type Statements struct {
	names []string
	mu    sync.Mutex
	sql   map[string]string
	args  map[string][]any
}

// RecordStatements records the sqlc queries of these names ("-- name: <name> ...").
func RecordStatements(names ...string) *Statements {
	return &Statements{names: names, sql: map[string]string{}, args: map[string][]any{}}
}

func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	for _, name := range s.names {
		if strings.HasPrefix(d.SQL, "-- name: "+name+" ") {
			s.mu.Lock()
			s.sql[name], s.args[name] = d.SQL, d.Args
			s.mu.Unlock()
		}
	}
	return ctx
}

func (s *Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Last is the SQL and arguments of the last run of the query named name; it fails the test when the
// query has not run.
func (s *Statements) Last(t testing.TB, name string) (string, []any) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	sql, ok := s.sql[name]
	if !ok {
		t.Fatalf("%s has not run", name)
	}
	return sql, s.args[name]
}

// Explain is the plan PostgreSQL chooses for the statement with these arguments (EXPLAIN, as text).
func Explain(t testing.TB, conn *pgx.Conn, statement string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "EXPLAIN "+statement, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return strings.Join(lines, "\n")
}
