package db_test

// Citus-readiness: every query in db/query names the tenant, except those listed in tenantExemptions.
//
// The rule. On Citus the tenant's tables would be distributed by tenant_id and colocated (docs/scaling.md,
// "Distributing by tenant on Citus"). A statement runs on one shard, with all of PostgreSQL, when each
// distributed table in it is pinned to the tenant: its tenant_id equals a parameter or constant
// (tenant_id = @tenant_id, tenant_id IN (…), tenant_id = ANY(@tenant_ids)), or equals the tenant_id of a
// table that is itself pinned (a join on tenant_id). The distributed tables are found in the migrated
// schema, not listed by hand:
//   - every table with a tenant_id column, except the few that stay on the coordinator
//     (coordinatorTables: looked up before the tenant is known);
//   - every table without one that hangs off such a table by a key (ownerKeys: subscription_secrets and
//     subscription_finished by subscription_id, incident_operator_events by incident_id). These are owned
//     through their subscription or incident; on Citus they gain a tenant_id column and are colocated.
//     Until then they can only be tied to the tenant by their key, so a query that reads them is at
//     best "by key" (below).
//   - a partition counts as its partitioned table.
//
// Each query gets one of three verdicts:
//   - tenant: every distributed table in it is pinned. Nothing to list.
//   - by key: it names the tenant, but some table is reached only by a key from a pinned one
//     (JOIN subscriptions s ON s.id = d.subscription_id). Not a leak (the key belongs to the tenant), but
//     Citus cannot see that the join stays on one shard: it needs s.tenant_id = d.tenant_id as well.
//   - across tenants: some distributed table is not even tied to a tenant by key. Right for the worker's
//     claim, the maintenance leader's sweeps and the operator's console; a leak anywhere else.
//
// A query whose verdict is not "tenant" must be listed in tenantExemptions, with its kind and a reason; a
// listed query whose verdict no longer matches its kind (it names the tenant now, or lost it) fails too,
// as does a listed name that no query has. The check reads the SQL, not the plans: a condition behind an
// OR or a NOT counts for nothing, and a sub-select's condition on an outer column restricts the sub-select
// only.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "tenantscope", func(u string) { dbURL = u }) }

// ownerKeys are the columns that name a row of a tenant's table: the table a key column points to.
var ownerKeys = map[string]string{
	"subscription_id": "subscriptions",
	"event_id":        "events",
	"delivery_id":     "webhook_deliveries",
	"incident_id":     "incidents",
}

// ownerPreference: a table with several key columns is owned through the first it has.
// incident_operator_events is its incident's (the customer's), not its event's (the internal tenant's).
var ownerPreference = []string{"subscription_id", "incident_id", "delivery_id", "event_id"}

// coordinatorTables have a tenant_id column but would not be distributed by it: each is read by something
// else before the tenant is known, or has rows of no tenant. They stay on the coordinator (or become
// reference tables), so their queries need not name the tenant to be routed.
var coordinatorTables = map[string]string{
	"api_tokens":   "found by token hash on every API request, before the tenant is known; operator tokens have none",
	"users":        "found by email at sign-in; operators have no tenant",
	"portal_links": "found by token hash when a customer portal link is redeemed",
	"replays":      "a bulk replay spans tenants (tenant_id NULL); a reference table, written a few times a second at most",
}

// relation is one table of the migrated schema.
type relation struct {
	name        string
	cols        map[string]bool
	tenantCol   string // tenant_id; id for tenants itself; "" when it has none
	distributed bool   // its references must be pinned to a tenant
	owner       string // for a table owned through another: that table
}

type schema struct {
	tables     map[string]*relation
	partitions map[string]string // a partition's name: its partitioned table's
}

func (s *schema) table(name string) *relation {
	if root, ok := s.partitions[name]; ok {
		name = root
	}
	return s.tables[name]
}

// newSchema classifies tables (name: columns) by the rule above.
func newSchema(tables map[string][]string, partitions map[string]string) *schema {
	s := &schema{tables: map[string]*relation{}, partitions: partitions}
	for name, cols := range tables {
		r := &relation{name: name, cols: setOfNames(cols)}
		if r.cols["tenant_id"] {
			r.tenantCol = "tenant_id"
		}
		if name == "tenants" {
			r.tenantCol = "id"
		}
		_, local := coordinatorTables[name]
		r.distributed = r.tenantCol == "tenant_id" && !local
		s.tables[name] = r
	}
	for _, r := range s.tables {
		if r.tenantCol != "" || coordinatorTables[r.name] != "" {
			continue
		}
		for _, col := range ownerPreference {
			if o := s.tables[ownerKeys[col]]; r.cols[col] && o != nil && o.distributed {
				r.distributed, r.owner = true, o.name
				break
			}
		}
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// loadSchema reads the tables of the migrated database (partitions as their partitioned table).
func loadSchema(t *testing.T) *schema {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT c.relname::text, array_agg(a.attname::text ORDER BY a.attnum)
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		GROUP BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string][]string{}
	var name string
	var cols []string
	if _, err := pgx.ForEachRow(rows, []any{&name, &cols}, func() error { tables[name] = cols; return nil }); err != nil {
		t.Fatal(err)
	}
	rows, err = conn.Query(ctx, `
		SELECT c.relname::text, (SELECT r.relname::text FROM pg_class r WHERE r.oid = pg_partition_root(c.oid))
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relispartition`)
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]string{}
	var root string
	if _, err := pgx.ForEachRow(rows, []any{&name, &root}, func() error { partitions[name] = root; return nil }); err != nil {
		t.Fatal(err)
	}
	return newSchema(tables, partitions)
}

// query is one "-- name: X :kind" block of db/query.
type query struct{ name, file, sql string }

var queryName = regexp.MustCompile(`(?m)^-- name: (\w+) :\w+`)

func readQueries(t *testing.T) []query {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "db", "query", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no db/query/*.sql (%v)", err)
	}
	var out []query
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		marks := queryName.FindAllStringSubmatchIndex(string(text), -1)
		for i, m := range marks {
			end := len(text)
			if i+1 < len(marks) {
				end = marks[i+1][0]
			}
			out = append(out, query{name: string(text[m[2]:m[3]]), file: filepath.Base(f), sql: string(text[m[0]:end])})
		}
	}
	return out
}

// verdict is "tenant", "by key" or "across tenants" (see the top of this file).
func verdict(st *statement) string {
	switch {
	case len(st.unpinned(false)) == 0:
		return "tenant"
	case len(st.unpinned(true)) == 0:
		return "by key"
	}
	return "across tenants"
}

func TestEveryQueryNamesTheTenant(t *testing.T) {
	s := loadSchema(t)
	seen := map[string]bool{}
	for _, q := range readQueries(t) {
		seen[q.name] = true
		st, err := analyse(s, q.sql)
		if err != nil {
			t.Errorf("%s (%s): %v", q.name, q.file, err)
			continue
		}
		got, want := verdict(st), "tenant"
		exemption, listed := tenantExemptions[q.name]
		if listed {
			want = exemption.kind.verdict()
		}
		if got == want {
			continue
		}
		switch {
		case !listed && got == "by key":
			t.Errorf("%s (%s) %s: add the join on tenant_id too (x.tenant_id = y.tenant_id), or list it in "+
				"tenantExemptions as byKey with the reason", q.name, q.file, st.describe())
		case !listed:
			t.Errorf("%s (%s) does not name the tenant (%s): pin each with tenant_id = @tenant_id (or a join on "+
				"tenant_id to a table that is), or, for the operator's or the maintenance leader's work across "+
				"tenants, list it in tenantExemptions with the reason", q.name, q.file, st.describe())
		default:
			t.Errorf("%s (%s) is listed in tenantExemptions as %s (%s) but %s: correct or remove its entry",
				q.name, q.file, exemption.kind, want, st.describe())
		}
	}
	for _, name := range sortedKeys(tenantExemptions) {
		if !seen[name] {
			t.Errorf("tenantExemptions lists %s, which no query in db/query is called: remove it", name)
		}
	}
}

// The tables the test classifies are those docs/scaling.md places, so neither goes stale without the other.
func TestCitusPlanNamesEveryTable(t *testing.T) {
	s := loadSchema(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(doc), "Distributing by tenant on Citus")
	if !found {
		t.Fatal(`docs/scaling.md has no section "Distributing by tenant on Citus"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, name := range sortedKeys(s.tables) {
		r := s.tables[name]
		if name != "goose_db_version" && !strings.Contains(section, "`"+name+"`") {
			t.Errorf("docs/scaling.md's Citus section does not place `%s` (distributed: %v)", name, r.distributed)
		}
	}
	for _, name := range sortedKeys(coordinatorTables) {
		if r := s.tables[name]; r == nil || r.tenantCol != "tenant_id" {
			t.Errorf("coordinatorTables lists %s, which is not a table with a tenant_id column: remove it", name)
		}
	}
}
