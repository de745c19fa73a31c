package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var l latencies
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(101-i)*time.Millisecond)
	}
	for p, want := range map[float64]float64{50: 50, 95: 95, 99: 99, 100: 100, 1: 1} {
		if got := l.ms(p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := (latencies{}).ms(50); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
	if got := (latencies{7 * time.Millisecond}).ms(99); got != 7 {
		t.Errorf("single p99 = %v", got)
	}
}

func TestTally(t *testing.T) {
	tl := tally{expected: 10, unique: 9, total: 12, dups: []string{"a/s0", "b/s0"}}
	if tl.lost() != 1 || tl.duplicates() != 3 {
		t.Fatalf("lost %d duplicates %d", tl.lost(), tl.duplicates())
	}
	if s := tl.String(); !strings.Contains(s, "lost 1, duplicates 3") || !strings.Contains(s, "a/s0, b/s0") {
		t.Errorf("String() = %q", s)
	}
}

func TestCountingProblemsAndRatio(t *testing.T) {
	var r Results
	b := &bench{res: &r}
	b.record("drain", "a", tally{expected: 5, unique: 5, total: 5})
	if p := r.countingProblems(); p != "" {
		t.Fatalf("clean run reported %q", p)
	}
	b.record("drain", "b", tally{expected: 5, unique: 4, total: 6})
	if p := r.countingProblems(); !strings.Contains(p, "b lost: 1 lost") || !strings.Contains(p, "b duplicates: 2") {
		t.Errorf("countingProblems() = %q", p)
	}
	r.add("drain", "a: 1 endpoint, instant receiver", 3000, "deliveries/s", "")
	r.add("ceiling", "claim+record, no HTTP", 10000, "deliveries/s", "")
	r.add("drain", "a CPU per delivery: database", 100, "µs", "")
	r.add("ceiling", "sql CPU per delivery: database", 80, "µs", "")
	r.derive()
	if v, ok := r.get("ratio", "drain (a) / ceiling"); !ok || v != 0.3 {
		t.Errorf("ratio %v %v", v, ok)
	}
	if v, ok := r.get("ratio", "database CPU per delivery: ceiling / drain (a)"); !ok || v != 0.8 {
		t.Errorf("CPU ratio %v %v", v, ok)
	}
	var out bytes.Buffer
	r.printTable(&out)
	if !strings.Contains(out.String(), "10,000") || !strings.Contains(out.String(), "0.30") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestReceiverCounts(t *testing.T) {
	rc, err := startReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.close()
	reached := rc.reset(2, true)
	hc := newClient("").hc
	for _, id := range []string{"e1", "e2", "e1"} {
		if err := post(t.Context(), hc, rc.url(0, "s0"), id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-reached:
	default:
		t.Fatal("target of 2 deliveries not signalled")
	}
	tl := rc.tally(2)
	if tl.lost() != 0 || tl.duplicates() != 1 || len(tl.dups) != 1 || tl.dups[0] != "e1/s0" {
		t.Errorf("tally %s", tl)
	}
	if _, ok := rc.arrival("e2/s0"); !ok {
		t.Error("arrival of e2 not tracked")
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{1234567: "1,234,567", 0.305: "0.30", 25.64: "25.6", 3: "3", 150.4: "150"} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestDiffResults(t *testing.T) {
	dir := t.TempDir()
	before, after := &Results{}, &Results{}
	before.add("drain", "a", 1000, "deliveries/s", "")
	after.add("drain", "a", 2500, "deliveries/s", "")
	after.add("drain", "new", 7, "ms", "")
	if err := before.write(dir + "/b.json"); err != nil {
		t.Fatal(err)
	}
	if err := after.write(dir + "/a.json"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := diffResults(&out, dir+"/b.json", dir+"/a.json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2.50×") || !strings.Contains(out.String(), "new") {
		t.Errorf("diff:\n%s", out.String())
	}
}

// processCPU reads this process's own CPU time, and it grows with work done.
func TestProcessCPU(t *testing.T) {
	before, ok := processCPU(os.Getpid())
	if !ok {
		t.Fatal("cannot read /proc/self's CPU time")
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	after, _ := processCPU(os.Getpid())
	if after <= before {
		t.Errorf("CPU time %v then %v after 200 ms of work (%d)", before, after, x)
	}
	if _, ok := processCPU(-1); ok {
		t.Error("a process that does not exist has a CPU time")
	}
	_, _, _, ok = cpuUse{}.perDelivery(cpuUse{ok: true}, 10)
	if ok {
		t.Error("a failed reading gave a figure")
	}
}
