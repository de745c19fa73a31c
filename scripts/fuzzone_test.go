package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFuzzOne runs scripts/fuzz-one against a stand-in for `go test -fuzz` that prints what Go prints in
// each case, so the one failure it lets through stays exactly Go's own deadline race.
func TestFuzzOne(t *testing.T) {
	t.Parallel()
	const raceOutput = `fuzz: elapsed: 10s, execs: 48589 (9477/sec), new interesting: 6 (total: 30)
--- FAIL: FuzzX (10.10s)
    context deadline exceeded
FAIL
exit status 1
FAIL	example.com/p	10.631s`
	cases := []struct {
		name      string
		output    string
		rc        int
		writes    bool // the stand-in writes a failing input to the corpus
		wantPass  bool
		wantInOut string
	}{
		{name: "pass", output: "PASS\nok  \texample.com/p\t10.4s", rc: 0, wantPass: true},
		{name: "deadline race", output: raceOutput, rc: 1, wantPass: true, wantInOut: "golang/go#75804"},
		{name: "failing input", rc: 1, writes: true, output: `--- FAIL: FuzzX (0.20s)
    --- FAIL: FuzzX (0.00s)
        fuzz_test.go:10: boom
    Failing input written to testdata/fuzz/FuzzX/abc
FAIL`},
		{name: "deadline text but an input written", output: raceOutput, rc: 1, writes: true},
		{name: "panic", rc: 2, output: "panic: runtime error: index out of range\nFAIL"},
		{name: "two failures", rc: 1, output: raceOutput + "\n--- FAIL: FuzzX (0.01s)\n    context deadline exceeded"},
		{name: "another message", rc: 1, output: "--- FAIL: FuzzX (10.10s)\n    fuzzing process hung or terminated unexpectedly: exit status 2\nFAIL"},
		{name: "build failure", rc: 1, output: "# example.com/p\n./p.go:3:1: syntax error\nFAIL\texample.com/p [build failed]"},
	}
	script, err := filepath.Abs("fuzz-one")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pkg := filepath.Join(dir, "p")
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "output"), []byte(c.output+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			write := ""
			if c.writes {
				write = `mkdir -p "$pkg/testdata/fuzz/FuzzX" && echo 'go test fuzz v1' > "$pkg/testdata/fuzz/FuzzX/abc"` + "\n"
			}
			fakeGo := "#!/bin/bash\npkg=\"${@: -1}\"\n" + write + "cat " + filepath.Join(dir, "output") + "\nexit " + string(rune('0'+c.rc)) + "\n"
			if err := os.WriteFile(filepath.Join(dir, "go"), []byte(fakeGo), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(script, pkg, "FuzzX", "10s", "2s")
			cmd.Env = append(os.Environ(), "GO="+filepath.Join(dir, "go"))
			out, err := cmd.CombinedOutput()
			if passed := err == nil; passed != c.wantPass {
				t.Fatalf("passed = %v, want %v; output:\n%s", passed, c.wantPass, out)
			}
			if !strings.Contains(string(out), c.wantInOut) {
				t.Fatalf("output lacks %q:\n%s", c.wantInOut, out)
			}
		})
	}
}
