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

// The goals of an aged server read the aged phase's figures by name: renaming one would drop its goal
// from every run without a word.
func TestAgedFiguresMeetTheirGoals(t *testing.T) {
	t.Parallel()
	var r report.Results
	b := &Bench{res: &r, o: Options{IdleN: 2, AgedN: 10}}
	ms := func(d ...time.Duration) report.Latencies { return report.Latencies(d) }
	for _, v := range []agedVariant{{name: "default settings"}, {name: "autovacuum off", autovacuumOff: true}} {
		fresh := &agedMeasure{step: "fresh", oneByOne: &oneByOne{fromStart: ms(2*time.Millisecond, 2*time.Millisecond),
			publish: ms(time.Millisecond, time.Millisecond)}}
		aged := &agedMeasure{step: "aged", oneByOne: &oneByOne{fromStart: ms(9*time.Millisecond, 9*time.Millisecond),
			publish: ms(4*time.Millisecond, 4*time.Millisecond)}}
		b.reportAged(v, []*agedMeasure{fresh, aged})
	}
	r.MarkGoals()
	n := 0
	for _, f := range r.Figures {
		if f.Phase == "goal" && strings.HasPrefix(f.Name, "aged server") {
			n++
			if f.Note != "NOT met" {
				t.Errorf("goal %q: %q with an aged server 4.5 times slower", f.Name, f.Note)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d goals of an aged server marked, want 4 (pickup and publish, both variants)", n)
	}
	if v, ok := r.Get("aged", "autovacuum off, aged / fresh: publish → 202 p50"); !ok || v != 4 {
		t.Errorf("publish ratio %v %v, want 4", v, ok)
	}
	if v, ok := r.Get("aged", "default settings, fresh: publish → receiver p50"); !ok || v != 2 {
		t.Errorf("fresh pickup %v %v, want 2", v, ok)
	}
}
