package testbed

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// SlowPlans logs, through PostgreSQL's auto_explain, the plan of every statement of one database slower
// than a threshold, and reads them back from the project-managed cluster's log. It works only with that
// cluster (whose log file the harness knows, and where it is superuser); elsewhere it does nothing.
type SlowPlans struct {
	log    string // the cluster's log file
	offset int64
}

// EnableSlowPlans makes new sessions of db log the plans of statements over threshold. Sessions open
// already are not affected: call it before starting the server whose statements are of interest.
func EnableSlowPlans(ctx context.Context, db *Database, threshold time.Duration) *SlowPlans {
	if threshold <= 0 || os.Getenv("TEST_DATABASE_URL") != "" || os.Getenv("DATABASE_URL") != "" {
		return nil
	}
	u, err := url.Parse(db.URL)
	if err != nil {
		return nil
	}
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
	for _, stmt := range []string{
		"ALTER DATABASE " + name + " SET session_preload_libraries = 'auto_explain'",
		fmt.Sprintf("ALTER DATABASE %s SET auto_explain.log_min_duration = '%dms'", name, threshold.Milliseconds()),
	} {
		if _, err := db.Pool.Exec(ctx, stmt); err != nil {
			fmt.Printf("  (slow plans not logged: %v)\n", err)
			return nil
		}
	}
	p := &SlowPlans{log: filepath.Join(".data", "postgres", "server.log")}
	if fi, err := os.Stat(p.log); err == nil {
		p.offset = fi.Size()
	} else {
		return nil
	}
	return p
}

var (
	logEntryStart = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	planDuration  = regexp.MustCompile(`LOG:  duration: ([0-9.]+) ms  plan:`)
	queryName     = regexp.MustCompile(`-- name: (\w+)`)
)

// Report writes every plan logged since EnableSlowPlans to path and prints one line per statement name:
// how many were slow and the slowest.
func (p *SlowPlans) Report(path string) {
	if p == nil {
		return
	}
	f, err := os.Open(p.log)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(p.offset, io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return
	}
	entries := splitLogEntries(string(data))
	type stat struct {
		n   int
		max float64
	}
	stats := map[string]*stat{}
	var out strings.Builder
	for _, e := range entries {
		m := planDuration.FindStringSubmatch(e)
		if m == nil {
			continue
		}
		ms, _ := strconv.ParseFloat(m[1], 64)
		name := "(unnamed)"
		if q := queryName.FindStringSubmatch(e); q != nil {
			name = q[1]
		}
		s := stats[name]
		if s == nil {
			s = &stat{}
			stats[name] = s
		}
		s.n++
		s.max = max(s.max, ms)
		out.WriteString(e)
		out.WriteString("\n")
	}
	if len(stats) == 0 {
		fmt.Println("  no statement of the server was slow enough to log its plan")
		return
	}
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(stats[b].max - stats[a].max) })
	for _, n := range names {
		fmt.Printf("  slow statement %s: %d times, slowest %.0f ms\n", n, stats[n].n, stats[n].max)
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err == nil {
		fmt.Printf("  their plans: %s\n", path)
	}
}

// splitLogEntries splits a PostgreSQL stderr log into entries (a timestamped line and its continuation lines).
func splitLogEntries(log string) []string {
	var entries []string
	var cur strings.Builder
	for line := range strings.SplitSeq(log, "\n") {
		if logEntryStart.MatchString(line) && cur.Len() > 0 {
			entries = append(entries, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteString("\n")
		}
		cur.WriteString(line)
	}
	if strings.TrimSpace(cur.String()) != "" {
		entries = append(entries, cur.String())
	}
	return entries
}
