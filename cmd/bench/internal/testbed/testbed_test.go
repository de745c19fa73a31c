package testbed

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTally(t *testing.T) {
	t.Parallel()
	tl := Tally{Expected: 10, Unique: 9, Total: 12, Dups: []string{"a/s0", "b/s0"}}
	if tl.Lost() != 1 || tl.Duplicates() != 3 {
		t.Fatalf("lost %d duplicates %d", tl.Lost(), tl.Duplicates())
	}
	if s := tl.String(); !strings.Contains(s, "lost 1, duplicates 3") || !strings.Contains(s, "a/s0, b/s0") {
		t.Errorf("String() = %q", s)
	}
}

func TestReceiverCounts(t *testing.T) {
	t.Parallel()
	rc, err := StartReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	reached := rc.Reset(2, true)
	hc := NewClient("").hc
	defer hc.CloseIdleConnections()
	for _, id := range []string{"e1", "e2", "e1"} {
		if err := PostDelivery(t.Context(), hc, rc.URL(0, "s0"), id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-reached:
	default:
		t.Fatal("target of 2 deliveries not signalled")
	}
	tl := rc.Tally(2)
	if tl.Lost() != 0 || tl.Duplicates() != 1 || len(tl.Dups) != 1 || tl.Dups[0] != "e1/s0" {
		t.Errorf("tally %s", tl)
	}
	if _, ok := rc.Arrival("e2/s0"); !ok {
		t.Error("arrival of e2 not tracked")
	}
}

// ProcessCPU reads this process's own CPU time, and it grows with work done.
func TestProcessCPU(t *testing.T) {
	t.Parallel()
	before, ok := ProcessCPU(os.Getpid())
	if !ok {
		t.Fatal("cannot read /proc/self's CPU time")
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	after, _ := ProcessCPU(os.Getpid())
	if after <= before {
		t.Errorf("CPU time %v then %v after 200 ms of work (%d)", before, after, x)
	}
	if _, ok := ProcessCPU(-1); ok {
		t.Error("a process that does not exist has a CPU time")
	}
	_, _, _, ok = CPUUse{}.PerDelivery(CPUUse{OK: true}, 10)
	if ok {
		t.Error("a failed reading gave a figure")
	}
}
