package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// `server version` and `server -version` print the stamped version and commit, need no database and read
// no settings (a malformed one must not stop them).
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "server")
	pkg := "github.com/hookline/hookline/internal/version"
	out, err := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X "+pkg+".Version=v9.8.7 -X "+pkg+".Commit=0123456789abcdef", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, arg := range []string{"version", "-version"} {
		cmd := exec.Command(bin, arg)
		cmd.Env = append(os.Environ(), "DATABASE_URL=postgres://nowhere.invalid/x", "HOOKLINE_LOG_FORMAT=nonsense")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("server %s: %v\n%s", arg, err, out)
		}
		want := "hookline v9.8.7 commit 0123456789abcdef " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
		if string(out) != want {
			t.Errorf("server %s printed %q, want %q", arg, out, want)
		}
	}
}

// Unstamped, the commit comes from the VCS information the toolchain records (GOFLAGS may turn it off,
// hence -buildvcs=true), and it is the checkout's HEAD.
func TestVersionFromBuildInfo(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	recorded := ""
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			recorded = s.Value
		}
	}
	if recorded == "" {
		// The go command finds no repository in a linked git worktree (its .git is a file), so it records
		// nothing; a clone (as CI's) records the revision.
		t.Skip("the toolchain recorded no VCS revision here")
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("server version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), " commit "+strings.TrimSpace(string(head))) || !strings.Contains(string(out), runtime.Version()) {
		t.Errorf("server version printed %q, want commit %s and %s", out, head, runtime.Version())
	}
}
