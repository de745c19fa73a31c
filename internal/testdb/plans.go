package testdb

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
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
	args := d.Args
	// A query exec mode passed as the first argument (the engine's per-call plans) is pgx's option, not
	// the statement's: dropped, the arguments are the statement's own, ready to EXPLAIN.
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			args = args[1:]
		}
	}
	for _, name := range s.names {
		if strings.HasPrefix(d.SQL, "-- name: "+name+" ") {
			s.mu.Lock()
			s.sql[name], s.args[name] = d.SQL, args
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

// Plan is a plan PostgreSQL ran (EXPLAIN (ANALYZE, FORMAT JSON)): its root node and the text form.
type Plan struct {
	root   PlanNode
	text   string
	execMS float64
}

// Buffers is how many shared buffers the statement touched (found in the cache or read), its whole plan's:
// what it read of the database, which, unlike its time, does not depend on what else the machine does.
func (p Plan) Buffers() int {
	return int(p.root.num("Shared Hit Blocks") + p.root.num("Shared Read Blocks"))
}

// PlanNode is one node of a Plan, as EXPLAIN's JSON gives it.
type PlanNode map[string]any

// ExplainAnalyze runs the statement under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) and returns its plan. The
// statement really runs: call it inside a transaction that is rolled back.
func ExplainAnalyze(t testing.TB, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, statement string, args ...any) Plan {
	t.Helper()
	var out []struct {
		Plan   PlanNode `json:"Plan"`
		ExecMS float64  `json:"Execution Time"`
	}
	if err := q.QueryRow(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+statement, args...).Scan(&out); err != nil {
		t.Fatalf("explain analyze: %v", err)
	}
	if len(out) != 1 {
		t.Fatalf("explain analyze: %d plans", len(out))
	}
	text, _ := json.MarshalIndent(out[0].Plan, "", "  ")
	return Plan{root: out[0].Plan, text: string(text), execMS: out[0].ExecMS}
}

// Rows is how many rows the statement returned (its root node's).
func (p Plan) Rows() int { return int(p.root.num("Actual Rows")) }

// ExecMS is how long the statement ran, in milliseconds (EXPLAIN's Execution Time).
func (p Plan) ExecMS() float64 { return p.execMS }

// Nodes lists every node of the plan, InitPlans and CTEs included.
func (p Plan) Nodes() []PlanNode {
	var all []PlanNode
	var walk func(PlanNode)
	walk = func(n PlanNode) {
		all = append(all, n)
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			if m, ok := c.(map[string]any); ok {
				walk(m)
			}
		}
	}
	walk(p.root)
	return all
}

// Loops adds up the loops of the nodes that match: how often they ran.
func (p Plan) Loops(match func(PlanNode) bool) int {
	n := 0
	for _, node := range p.Nodes() {
		if match(node) {
			n += node.Loops()
		}
	}
	return n
}

func (p Plan) String() string { return p.text }

// Type is the node's type ("Seq Scan", "Aggregate", ...).
func (n PlanNode) Type() string { s, _ := n["Node Type"].(string); return s }

// Relation is the table the node reads or writes, if any.
func (n PlanNode) Relation() string { s, _ := n["Relation Name"].(string); return s }

// Loops is how many times the node ran.
func (n PlanNode) Loops() int { return int(n.num("Actual Loops")) }

func (n PlanNode) num(key string) float64 { v, _ := n[key].(float64); return v }

// seqScan is a sequential scan's line in a text plan: the relation and its estimated cost.
var seqScan = regexp.MustCompile(`Seq Scan on (\S+)(?: \S+)?\s+\(cost=([0-9.]+)\.\.([0-9.]+)`)

// WholeScans lists the relations a text plan reads whole (Seq Scan) whose name starts with prefix, leaving
// out those PostgreSQL reads whole because it knows them empty (a partition made ahead, cost 0..0): a
// plan that scans a history partition with rows in it is what plan tests look for.
func WholeScans(plan, prefix string) []string {
	var whole []string
	for _, m := range seqScan.FindAllStringSubmatch(plan, -1) {
		if strings.HasPrefix(m[1], prefix) && m[3] != "0.00" {
			whole = append(whole, m[1])
		}
	}
	return whole
}

// ExplainExecute is the plan PostgreSQL's plan cache runs statement with args by: prepared under name on
// conn, then EXPLAIN EXECUTE, custom or generic as the session's plan_cache_mode says. EXECUTE takes
// values, not bind parameters, so each argument is written as the literal of its parameter's type.
func ExplainExecute(t testing.TB, conn *pgx.Conn, name, statement string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	_ = conn.Deallocate(ctx, name) // an earlier call's, if any
	sd, err := conn.Prepare(ctx, name, statement)
	if err != nil {
		t.Fatalf("explain execute: prepare: %v", err)
	}
	literals := make([]string, len(args))
	for i, a := range args {
		text, err := conn.TypeMap().Encode(sd.ParamOIDs[i], pgtype.TextFormatCode, a, nil)
		if err != nil {
			t.Fatalf("explain execute: argument %d: %v", i+1, err)
		}
		literals[i] = "NULL"
		if text != nil {
			literals[i] = "'" + strings.ReplaceAll(string(text), "'", "''") + "'"
		}
	}
	exec := "EXECUTE " + pgx.Identifier{name}.Sanitize()
	if len(args) > 0 {
		exec += "(" + strings.Join(literals, ", ") + ")"
	}
	return Explain(t, conn, exec)
}
