package main

import (
	"debug/buildinfo"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// `server version` and `server -version` print the stamped version and commit, need no database and read
// no settings (a malformed one must not stop them).
func TestVersionStamped(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// `server healthcheck` passes only on a 200 from /readyz, at HOOKLINE_ADDR's port on loopback by default.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	ready := true
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if !ready {
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	env := func(addr string) func(string) string {
		return func(k string) string {
			if k == "HOOKLINE_ADDR" {
				return addr
			}
			return ""
		}
	}
	if err := healthcheck(nil, env(":"+port)); err != nil {
		t.Errorf("ready server on :%s: %v", port, err)
	}
	if err := healthcheck(nil, env("0.0.0.0:"+port)); err != nil {
		t.Errorf("ready server on 0.0.0.0:%s: %v", port, err)
	}
	if err := healthcheck([]string{srv.URL + "/readyz"}, env("")); err != nil {
		t.Errorf("ready server by URL: %v", err)
	}
	if !slices.Equal(paths, []string{"/readyz", "/readyz", "/readyz"}) {
		t.Errorf("asked for %v, want /readyz each time", paths)
	}
	ready = false
	if err := healthcheck(nil, env(":"+port)); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("unready server: %v, want a 503 error", err)
	}
	srv.Close()
	if err := healthcheck(nil, env(":"+port)); err == nil {
		t.Error("no server: passed")
	}
}
