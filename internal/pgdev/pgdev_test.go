package pgdev

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func requirePostgres(t *testing.T) {
	t.Helper()
	if _, err := findBin(t.TempDir()); err != nil {
		if errors.Is(err, ErrNoPostgres) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// tempDir returns a directory that the postgres user can reach when the
// test runs as root (t.TempDir's parent is 0700).
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pgdev-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func selectOne(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %v %d", err, one)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != Database {
		t.Fatalf("current_database: %v %q", err, db)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestEnsureStartStopRestart(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(tempDir(t), ".data", "postgres")
	t.Cleanup(func() { _ = Stop(dir) })

	url, err := Ensure(ctx, dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "postgres://hookline@127.0.0.1:") || strings.HasSuffix(url, ":5432/hookline?sslmode=disable") {
		t.Fatalf("unexpected URL %q", url)
	}
	selectOne(t, url)
	if _, err := os.Stat(filepath.Join(dir, logFile)); err != nil {
		t.Errorf("log file: %v", err)
	}

	// Already running: same URL.
	url2, err := Ensure(ctx, dir, testLogger(t))
	if err != nil || url2 != url {
		t.Fatalf("second Ensure: %q %v (first %q)", url2, err, url)
	}

	if err := Stop(dir); err != nil {
		t.Fatal(err)
	}
	if err := Stop(dir); err != nil {
		t.Fatalf("Stop when stopped: %v", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	if c, err := pgx.Connect(cctx, url); err == nil {
		c.Close(cctx)
		t.Fatal("server still answers after Stop")
	}
	ccancel()

	// Restart of an existing cluster keeps the port.
	url3, err := Ensure(ctx, dir, testLogger(t))
	if err != nil || url3 != url {
		t.Fatalf("Ensure after Stop: %q %v (first %q)", url3, err, url)
	}
	selectOne(t, url3)
}

func TestEnsureConcurrent(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(tempDir(t), "postgres")
	t.Cleanup(func() { _ = Stop(dir) })

	const n = 8
	urls := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			urls[i], errs[i] = Ensure(ctx, dir, nil)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Ensure %d: %v", i, errs[i])
		}
		if urls[i] != urls[0] {
			t.Fatalf("different URLs: %q vs %q", urls[i], urls[0])
		}
		selectOne(t, urls[i])
	}
}

func TestStopNeverCreated(t *testing.T) {
	t.Parallel()
	if err := Stop(filepath.Join(t.TempDir(), "nothing")); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureRejectsForeignNonEmptyDir(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	dir := filepath.Join(tempDir(t), "postgres")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(context.Background(), dir, nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("want not-empty error, got %v", err)
	}
}

func TestVersionLess(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{{"9.6", "15"}, {"15", "17"}, {"10", "9.6"}} {
		if got := versionLess(c[0], c[1]); got != (c[0] != "10") {
			t.Errorf("versionLess(%q, %q) = %v", c[0], c[1], got)
		}
	}
}

func TestFindRepoRoot(t *testing.T) {
	t.Parallel()
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "pgdev", "pgdev.go")); err != nil {
		t.Fatalf("root %s: %v", root, err)
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	if got, want := URL(54321, "x"), "postgres://hookline@127.0.0.1:54321/x?sslmode=disable"; got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
}

// TestEnsureProcesses runs Ensure from several processes at once, like
// go test ./... does with many test packages.
func TestEnsureProcesses(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("PGDEV_HELPER_DIR"); dir != "" {
		url, err := Ensure(context.Background(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		selectOne(t, url)
		fmt.Println("URL=" + url)
		return
	}
	requirePostgres(t)
	dir := filepath.Join(tempDir(t), "postgres")
	t.Cleanup(func() { _ = Stop(dir) })
	const n = 6
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestEnsureProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), "PGDEV_HELPER_DIR="+dir)
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	var first string
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("process %d: %v\n%s", i, errs[i], outs[i])
		}
		_, after, ok := strings.Cut(outs[i], "URL=")
		if !ok {
			t.Fatalf("process %d printed no URL:\n%s", i, outs[i])
		}
		url := strings.Fields(after)[0]
		if first == "" {
			first = url
		} else if url != first {
			t.Fatalf("different URLs %q and %q", url, first)
		}
	}
}

// TestEnsurePortTaken: if the cluster's port is taken while it is stopped,
// Ensure picks another one.
func TestEnsurePortTaken(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(tempDir(t), "postgres")
	t.Cleanup(func() { _ = Stop(dir) })
	url, err := Ensure(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	port, err := readPort(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Stop(dir); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	url2, err := Ensure(ctx, dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if url2 == url {
		t.Fatalf("URL did not change: %q", url2)
	}
	selectOne(t, url2)
}

// TestEnsureRootPrivateParent: as root, a data dir below a 0700 directory
// still works (the parent gets o+x).
func TestEnsureRootPrivateParent(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	if os.Geteuid() != 0 {
		t.Skip("root only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	priv := filepath.Join(tempDir(t), "private")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(priv, "repo", ".data", "postgres")
	t.Cleanup(func() { _ = Stop(dir) })
	url, err := Ensure(ctx, dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	selectOne(t, url)
	st, err := os.Stat(priv)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o701 {
		t.Fatalf("mode of %s = %v, want 0701", priv, st.Mode().Perm())
	}
}

// Not parallel: it changes libDir and PATH, which every other test's Ensure reads (parallel tests wait
// until the serial ones have run).
func TestNoPostgresError(t *testing.T) {
	old := libDir
	libDir = t.TempDir()
	t.Cleanup(func() { libDir = old })
	t.Setenv("PATH", t.TempDir())
	_, err := Ensure(context.Background(), filepath.Join(t.TempDir(), "pg"), nil)
	if !errors.Is(err, ErrNoPostgres) || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
}
