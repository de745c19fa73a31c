package phases

import (
	"bytes"
	"strings"
	"testing"

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
