package testbed

import (
	"context"
	"fmt"
	"slices"
)

// StatementStats reads, through pg_stat_statements, what each of the server's named statements (sqlc's
// "-- name: X" first line) cost on one database between a Reset and a Read: calls, execution time and
// the shared buffers touched, a figure the machine's load does not move. It needs the extension in the
// cluster's shared_preload_libraries (docs/benchmarks.md says how for the project-managed one); without
// it EnableStatementStats says so and returns nil, whose methods do nothing.
type StatementStats struct{ db *Database }

// StatementUse is one named statement's calls between a Reset and a Read.
type StatementUse struct {
	Calls   int64
	TotalMS float64
	Buffers int64 // shared blocks hit or read
}

// MillisPerCall is the mean execution time; 0 without calls.
func (u StatementUse) MillisPerCall() float64 {
	if u.Calls == 0 {
		return 0
	}
	return u.TotalMS / float64(u.Calls)
}

// BuffersPerCall is the mean of shared blocks hit or read; 0 without calls.
func (u StatementUse) BuffersPerCall() float64 {
	if u.Calls == 0 {
		return 0
	}
	return float64(u.Buffers) / float64(u.Calls)
}

// EnableStatementStats creates pg_stat_statements in db when the cluster loads it.
func EnableStatementStats(ctx context.Context, db *Database) *StatementStats {
	var loaded bool
	err := db.Pool.QueryRow(ctx, "SELECT 'pg_stat_statements' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ','))").Scan(&loaded)
	if err != nil || !loaded {
		fmt.Println("  (statements not timed: pg_stat_statements is not in the cluster's shared_preload_libraries)")
		return nil
	}
	if _, err := db.Pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		fmt.Printf("  (statements not timed: %v)\n", err)
		return nil
	}
	return &StatementStats{db: db}
}

// Reset forgets what db's statements have cost so far.
func (s *StatementStats) Reset(ctx context.Context) {
	if s == nil {
		return
	}
	_, _ = s.db.Pool.Exec(ctx, "SELECT pg_stat_statements_reset(0, d.oid, 0) FROM pg_database d WHERE d.datname = current_database()")
}

// Read is what each named statement of db cost since the last Reset (nil when not enabled or unreadable).
func (s *StatementStats) Read(ctx context.Context) map[string]StatementUse {
	if s == nil {
		return nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT substring(s.query FROM '^-- name: (\w+)'), sum(s.calls)::bigint, sum(s.total_exec_time),
       sum(s.shared_blks_hit + s.shared_blks_read)::bigint
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid AND d.datname = current_database()
WHERE s.query LIKE '-- name: %' GROUP BY 1`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[string]StatementUse{}
	for rows.Next() {
		var name string
		var u StatementUse
		if rows.Scan(&name, &u.Calls, &u.TotalMS, &u.Buffers) != nil {
			return nil
		}
		out[name] = u
	}
	return out
}

// PrintStatements prints each statement's calls, time and buffers per call, the most time first.
func PrintStatements(uses map[string]StatementUse) {
	names := make([]string, 0, len(uses))
	for n := range uses {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		ta, tb := uses[a].TotalMS, uses[b].TotalMS
		switch {
		case ta > tb:
			return -1
		case ta < tb:
			return 1
		}
		return 0
	})
	for _, n := range names {
		u := uses[n]
		fmt.Printf("  %-36s %6d calls, %7.3f ms and %7.1f buffers per call\n", n, u.Calls, u.MillisPerCall(), u.BuffersPerCall())
	}
}

// TableState is what PostgreSQL's statistics say of one table: its live and dead row versions, and how
// often it was vacuumed and analyzed (by hand or by autovacuum).
type TableState struct {
	Live, Dead        int64
	Vacuums, Analyzes int64
}

func (t TableState) String() string {
	return fmt.Sprintf("%d live, %d dead row versions; vacuumed %d times, analyzed %d", t.Live, t.Dead, t.Vacuums, t.Analyzes)
}

// ReadTableState reads table's statistics in db: of a partitioned table, its partitions' added up.
func ReadTableState(ctx context.Context, db *Database, table string) (TableState, error) {
	var t TableState
	err := db.Pool.QueryRow(ctx, `SELECT coalesce(sum(n_live_tup), 0)::bigint, coalesce(sum(n_dead_tup), 0)::bigint,
	       coalesce(sum(vacuum_count + autovacuum_count), 0)::bigint, coalesce(sum(analyze_count + autoanalyze_count), 0)::bigint
FROM pg_stat_user_tables s JOIN pg_partition_tree($1::regclass) p ON p.relid = s.relid`, table).Scan(&t.Live, &t.Dead, &t.Vacuums, &t.Analyzes)
	return t, err
}
