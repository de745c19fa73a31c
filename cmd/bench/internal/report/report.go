// Package report is what a run of the benchmark harness found: every figure, the goals marked met or
// not, the table printed at the end, bench/results.json, and -diff of two runs. It also holds the
// percentiles the phases report their latencies by.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Results is what bench/results.json holds.
type Results struct {
	Machine   Machine  `json:"machine"`
	StartedAt string   `json:"started_at"`
	DurationS float64  `json:"duration_s"`
	Args      []string `json:"args"`
	Figures   []Figure `json:"figures"`
}

// Machine describes where the run happened.
type Machine struct {
	Cores      int    `json:"cores"`
	MemoryMiB  int    `json:"memory_mib"`
	PostgreSQL string `json:"postgresql"`
	Go         string `json:"go"`
	Commit     string `json:"commit"`
	Server     string `json:"server"` // the commit the server binary was built from (its Go build info)
	Kernel     string `json:"kernel,omitempty"`
}

// Figure is one measurement: phase ("drain"), name ("a one endpoint, instant"), value and unit.
type Figure struct {
	Phase string  `json:"phase"`
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Note  string  `json:"note,omitempty"`
}

// Add records one figure.
func (r *Results) Add(phase, name string, value float64, unit, note string) {
	r.Figures = append(r.Figures, Figure{Phase: phase, Name: name, Value: value, Unit: unit, Note: note})
}

// Get returns the first figure with that phase and name.
func (r *Results) Get(phase, name string) (float64, bool) {
	for _, f := range r.Figures {
		if f.Phase == phase && f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

// Derive adds the ratios that need figures of two phases: drain (a) against the ceilings.
func (r *Results) Derive() {
	a, ok := r.Get("drain", "a: 1 endpoint, instant receiver")
	if !ok {
		return
	}
	if c, ok := r.Get("ceiling", "claim+record, no HTTP"); ok && c > 0 {
		r.Add("ratio", "drain (a) / ceiling", a/c, "×", "target ≥ 0.7")
	}
	if c, ok := r.Get("ceiling", "claim+POST+record"); ok && c > 0 {
		r.Add("ratio", "drain (a) / ceiling+HTTP", a/c, "×", "")
	}
	// The same comparison in the database's work alone: the ceiling's CPU per delivery over the drain's,
	// free of the HTTP that shares the machine's cores with it (1 would be the engine doing no more than
	// the bare SQL loop).
	if d, ok := r.Get("drain", "a CPU per delivery: database"); ok && d > 0 {
		if c, ok := r.Get("ceiling", "sql CPU per delivery: database"); ok {
			r.Add("ratio", "database CPU per delivery: ceiling / drain (a)", c/d, "×", "")
		}
	}
}

// CountingProblems names every lost or duplicated delivery figure that is not zero.
func (r *Results) CountingProblems() string {
	var bad []string
	for _, f := range r.Figures {
		if (f.Unit == "lost" || f.Unit == "duplicates") && f.Value != 0 {
			bad = append(bad, fmt.Sprintf("%s %s: %.0f %s", f.Phase, f.Name, f.Value, f.Unit))
		}
	}
	return strings.Join(bad, "; ")
}

// SortFigures orders the figures by phase (phases, the order they run, each ratio after the ceiling, the
// memory figures last), keeping the order within a phase.
func (r *Results) SortFigures(phases []string) {
	order := map[string]int{}
	for i, p := range phases {
		order[p] = 2 * i
	}
	order["ratio"] = order["ceiling"] + 1
	order["rss"] = 1000
	order["goal"] = 1001
	slices.SortStableFunc(r.Figures, func(a, b Figure) int { return order[a.Phase] - order[b.Phase] })
}

// PrintTable prints the machine and every figure as a table.
func (r *Results) PrintTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "machine: %d cores, %d MiB, PostgreSQL %s, %s, commit %s, server built from %s (figures comparable only within one run)\n",
		m.Cores, m.MemoryMiB, m.PostgreSQL, m.Go, m.Commit, m.Server)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tmeasure\tvalue\tunit\tnote")
	for _, f := range r.Figures {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Phase, f.Name, formatValue(f.Value), f.Unit, f.Note)
	}
	tw.Flush()
}

// formatValue prints whole numbers with thousands separators and small ones with two decimals.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return thousands(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Write writes the results as indented JSON to path, making its directory.
func (r *Results) Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// percentile of sorted durations (nearest rank); 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// Latencies collects durations and reports percentiles in milliseconds.
type Latencies []time.Duration

// Millis is the p-th percentile in milliseconds; 0 for none.
func (l Latencies) Millis(p float64) float64 {
	s := slices.Clone(l)
	slices.Sort(s)
	return float64(percentile(s, p)) / float64(time.Millisecond)
}

func read(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Diff prints the figures of two runs side by side with after / before.
func Diff(w io.Writer, beforePath, afterPath string) error {
	before, err := read(beforePath)
	if err != nil {
		return err
	}
	after, err := read(afterPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "before: %s, server %s\nafter:  %s, server %s\n", beforePath, before.Machine.Server, afterPath, after.Machine.Server)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tmeasure\tbefore\tafter\tunit\tafter / before")
	for _, f := range after.Figures {
		b, ok := before.Get(f.Phase, f.Name)
		ratio := "-"
		if ok && b != 0 {
			ratio = fmt.Sprintf("%.2f×", f.Value/b)
		}
		bs := "-"
		if ok {
			bs = formatValue(b)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Phase, f.Name, bs, formatValue(f.Value), f.Unit, ratio)
	}
	return tw.Flush()
}

// The goals' first-class rows (the goals phase and ingest add them; MarkGoals marks each met or not).
const (
	RatioDrainLoop   = "drain (a) / loop with a POST per row"
	RatioDrainLoopDB = "database CPU per delivery: drain (a) / loop"
	RatioManyOne     = "drain over 100 subscriptions (c) / one endpoint (a)"
	RatioIngestFloor = "fan-out 1 / one committed INSERT per call"
	RatioFilters     = "ingest with a filter on each of 100 subscriptions / without"
	RatioOrdered     = "drain of an ordered endpoint with 1,000 keys / the same backlog unordered"
)

// goal is one of the performance goals `make bench` checks: a figure against a target.
type goal struct {
	name          string
	phase, figure string
	atMost        bool // the figure must be at most target (else at least)
	target        float64
	// onlyIf, when set, says whether this run can check the goal at all, and why not.
	onlyIf func(r *Results) (bool, string)
}

func flushes(r *Results) bool {
	v, ok := r.Get("ingest", "database flushes commits")
	return ok && v == 1
}

var goals = []goal{
	{name: "drain (a) ≥ 0.8 × the loop with a POST per row", phase: "goals", figure: RatioDrainLoop, target: 0.8},
	{name: "database CPU per delivery, drain (a) ≤ the loop's", phase: "goals", figure: RatioDrainLoopDB, atMost: true, target: 1},
	{name: "drain over 100 subscriptions ≥ 0.8 × one endpoint", phase: "goals", figure: RatioManyOne, target: 0.8},
	{name: "ingest, fan-out 1 ≥ 3,000 events/s", phase: "ingest", figure: "fan-out 1", target: 3000,
		onlyIf: func(r *Results) (bool, string) {
			return !flushes(r), "set for the project-managed PostgreSQL (fsync off); this database flushes"
		}},
	{name: "ingest with a database that flushes ≥ 1.3 × one committed INSERT per call", phase: "ingest", figure: RatioIngestFloor, target: 1.3,
		onlyIf: func(r *Results) (bool, string) {
			return flushes(r), "this database does not flush; run with DATABASE_URL pointed at one that does"
		}},
	{name: "ingest, 100 subscriptions with filters ≥ 0.9 × without", phase: "filters", figure: RatioFilters, target: 0.9},
	{name: "ordered endpoint with 1,000 keys drains ≥ 0.7 × unordered", phase: "ordered", figure: RatioOrdered, target: 0.7},
	{name: "latency at half the drain rate: publish → receiver p99 < 50 ms", phase: "latency", figure: "publish → receiver p99", atMost: true, target: 50},
	{name: "idle pickup: publish → receiver p50 ≤ 3 ms", phase: "idle", figure: "publish → receiver p50", atMost: true, target: 3},
	// A server as fast after -aged-n deliveries as fresh, whether or not vacuum has come round (the aged phase).
	{name: "aged server, default settings: idle pickup p50 ≤ 3 ms", phase: "aged", figure: "default settings, aged: publish → receiver p50", atMost: true, target: 3},
	{name: "aged server, default settings: publish p50 ≤ 1.1 × fresh", phase: "aged", figure: "default settings, aged / fresh: publish → 202 p50", atMost: true, target: 1.1},
	{name: "aged server, autovacuum off: idle pickup p50 ≤ 3 ms", phase: "aged", figure: "autovacuum off, aged: publish → receiver p50", atMost: true, target: 3},
	{name: "aged server, autovacuum off: publish p50 ≤ 1.1 × fresh", phase: "aged", figure: "autovacuum off, aged / fresh: publish → 202 p50", atMost: true, target: 1.1},
}

// The history at scale goals' figures (the history and retention phases add them).
const (
	HistoryDrainRatio   = "drain with history / empty"
	HistoryIdleP50      = "with history: idle pickup p50"
	HistorySlowestPage  = "with history: slowest page p95"
	RetentionDropTime   = "drop of the large day: time"
	RetentionDrainRatio = "drain during the drop / without"
	RetentionSizeRatio  = "database size, last day / first day at retention"
)

// historyGoals are the goals of a history that grows without the server slowing down or the database
// growing past its retention.
var historyGoals = []goal{
	{name: "with history: drain ≥ 0.9 × over an empty history", phase: "history", figure: HistoryDrainRatio, target: 0.9},
	{name: "with history: idle pickup p50 ≤ 3 ms", phase: "history", figure: HistoryIdleP50, atMost: true, target: 3},
	{name: "with history: a tenant's pages p95 ≤ 50 ms", phase: "history", figure: HistorySlowestPage, atMost: true, target: 50},
	{name: "dropping a day's partitions < 1 s", phase: "retention", figure: RetentionDropTime, atMost: true, target: 1},
	{name: "drain during the drop ≥ 0.95 × without", phase: "retention", figure: RetentionDrainRatio, target: 0.95},
	{name: "database size flat once retention is reached (≤ 1.05 ×)", phase: "retention", figure: RetentionSizeRatio, atMost: true, target: 1.05},
}

// MarkGoals adds a "goal" figure for every goal this run measured: the figure, and met or not in the note.
func (r *Results) MarkGoals() {
	for _, g := range slices.Concat(goals, historyGoals) {
		v, ok := r.Get(g.phase, g.figure)
		if !ok {
			continue
		}
		if g.onlyIf != nil {
			if can, why := g.onlyIf(r); !can {
				r.Add("goal", g.name, 0, "", "not checked: "+why)
				continue
			}
		}
		met := v >= g.target
		if g.atMost {
			met = v <= g.target
		}
		verdict := "met"
		if !met {
			verdict = "NOT met"
		}
		r.Add("goal", g.name, v, "", verdict)
	}
}
