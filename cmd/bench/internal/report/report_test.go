package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPercentile(t *testing.T) {
	t.Parallel()
	var l Latencies
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(101-i)*time.Millisecond)
	}
	for p, want := range map[float64]float64{50: 50, 95: 95, 99: 99, 100: 100, 1: 1} {
		if got := l.Millis(p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := (Latencies{}).Millis(50); got != 0 {
		t.Errorf("empty p50 = %v", got)
	}
	if got := (Latencies{7 * time.Millisecond}).Millis(99); got != 7 {
		t.Errorf("single p99 = %v", got)
	}
}

func TestFormatValue(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{1234567: "1,234,567", 0.305: "0.30", 25.64: "25.6", 3: "3", 150.4: "150"} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	before, after := &Results{}, &Results{}
	before.Add("drain", "a", 1000, "deliveries/s", "")
	after.Add("drain", "a", 2500, "deliveries/s", "")
	after.Add("drain", "new", 7, "ms", "")
	if err := before.Write(dir + "/b.json"); err != nil {
		t.Fatal(err)
	}
	if err := after.Write(dir + "/a.json"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Diff(&out, dir+"/b.json", dir+"/a.json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2.50×") || !strings.Contains(out.String(), "new") {
		t.Errorf("diff:\n%s", out.String())
	}
}
