package phases

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

func TestCountingProblemsAndRatio(t *testing.T) {
	t.Parallel()
	var r report.Results
	b := &Bench{res: &r}
	b.record("drain", "a", testbed.Tally{Expected: 5, Unique: 5, Total: 5})
	if p := r.CountingProblems(); p != "" {
		t.Fatalf("clean run reported %q", p)
	}
	b.record("drain", "b", testbed.Tally{Expected: 5, Unique: 4, Total: 6})
	if p := r.CountingProblems(); !strings.Contains(p, "b lost: 1 lost") || !strings.Contains(p, "b duplicates: 2") {
		t.Errorf("CountingProblems() = %q", p)
	}
	r.Add("drain", "a: 1 endpoint, instant receiver", 3000, "deliveries/s", "")
	r.Add("ceiling", "claim+record, no HTTP", 10000, "deliveries/s", "")
	r.Add("drain", "a CPU per delivery: database", 100, "µs", "")
	r.Add("ceiling", "sql CPU per delivery: database", 80, "µs", "")
	r.Derive()
	if v, ok := r.Get("ratio", "drain (a) / ceiling"); !ok || v != 0.3 {
		t.Errorf("ratio %v %v", v, ok)
	}
	if v, ok := r.Get("ratio", "database CPU per delivery: ceiling / drain (a)"); !ok || v != 0.8 {
		t.Errorf("CPU ratio %v %v", v, ok)
	}
	var out bytes.Buffer
	r.PrintTable(&out)
	if !strings.Contains(out.String(), "10,000") || !strings.Contains(out.String(), "0.30") {
		t.Errorf("table:\n%s", out.String())
	}
}

// The history phase's figures are the ones its goals are marked by.
func TestHistoryGoalsMarked(t *testing.T) {
	t.Parallel()
	var r report.Results
	b := &Bench{res: &r, o: Options{DrainN: 1000, IdleN: 3}}
	side := func(drain float64, pickup, page time.Duration) *historyMeasure {
		return &historyMeasure{
			drains: []float64{drain, drain, drain},
			idle:   &oneByOne{fromStart: report.Latencies{pickup, pickup, pickup}},
			pages:  []pageLatency{{"API deliveries", report.Latencies{page}}, {"dashboard deliveries", report.Latencies{2 * page}}},
		}
	}
	b.reportHistory(side(1000, time.Millisecond, time.Millisecond), side(850, 2*time.Millisecond, 30*time.Millisecond))
	r.MarkGoals()
	want := map[string]string{
		"with history: drain ≥ 0.9 × over an empty history": "NOT met",
		"with history: idle pickup p50 ≤ 3 ms":              "met",
		"with history: a tenant's pages p95 ≤ 50 ms":        "NOT met", // the dashboard's 60 ms
	}
	for _, f := range r.Figures {
		if f.Phase == "goal" {
			if w, ok := want[f.Name]; ok && f.Note == w {
				delete(want, f.Name)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("goals not marked as expected: %v\n%+v", want, r.Figures)
	}
}
