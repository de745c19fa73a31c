package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
)

const adminToken = "bench-admin-token-0123456789abcdef"

type bench struct {
	o   options
	res *Results
	rc  *receiver
	// lastDrainCPU, when set, is where drainOnce leaves the CPU readings taken around its drain (the
	// tracing phase compares them).
	lastDrainCPU *[2]cpuUse
}

func newBench(ctx context.Context, o options) (*bench, error) {
	b := &bench{o: o, res: &Results{StartedAt: time.Now().UTC().Format(time.RFC3339), Args: os.Args[1:]}}
	m := &b.res.Machine
	m.Cores = runtime.NumCPU()
	m.Go = runtime.Version()
	m.MemoryMiB = memTotalMiB()
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			m.Commit += "+dirty"
		}
	}
	if out, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	admin, err := testdb.AdminURL(ctx)
	if err != nil {
		return nil, err
	}
	pool, err := pgxuuid.NewPool(ctx, admin)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&m.PostgreSQL); err != nil {
		return nil, fmt.Errorf("PostgreSQL at DATABASE_URL or the project-managed one: %w", err)
	}
	if b.rc, err = startReceiver(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bench) close() { b.rc.close() }

func memTotalMiB() int {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb / 1024
		}
	}
	return 0
}

func buildServer(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/server")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// database is a fresh, migrated database for one phase, with a pool for the harness's own SQL.
type database struct {
	url  string
	pool *pgxpool.Pool
	drop func()
}

// freshDB creates an empty database and has the server binary migrate it (`server migrate`), so the
// schema is always the one of the binary measured, even one built from another commit (-server).
func (b *bench) freshDB(ctx context.Context, phase string) (*database, error) {
	u, drop, err := testdb.CreateEmpty(ctx, "bench_"+phase)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, b.o.serverBin, "migrate")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+u, "HOOKLINE_LOG_FORMAT=text")
	if out, err := cmd.CombinedOutput(); err != nil {
		drop()
		return nil, fmt.Errorf("server migrate: %w\n%s", err, out)
	}
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		drop()
		return nil, err
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.RuntimeParams["application_name"] = "bench"
	cfg.AfterConnect = pgxuuid.AfterConnect // as the server's pools (the ceiling's pool copies this config)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		drop()
		return nil, err
	}
	return &database{url: u, pool: pool, drop: drop}, nil
}

func (d *database) close() {
	d.pool.Close()
	d.drop()
}

func (d *database) count(ctx context.Context, sql string, args ...any) (int, error) {
	var n int
	err := d.pool.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// server is one running bin/server process.
type server struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:port
	done chan error
	log  *tailBuffer
}

// startServer starts the server binary on a free loopback port against dbURL, with the harness's
// settings, then env (KEY=VALUE), then -server-env, and waits until /readyz answers 200.
// serverPhase gives a phase its own fresh database, a server on it and a client of the server, and the
// cleanup that stops the server and drops the database.
func (b *bench) serverPhase(ctx context.Context, phase string, env ...string) (*database, *server, *client, func(), error) {
	db, err := b.freshDB(ctx, phase)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	s, err := b.startServer(ctx, db.url, env...)
	if err != nil {
		db.close()
		return nil, nil, nil, nil, err
	}
	return db, s, newClient(s.base), func() { s.stop(); db.close() }, nil
}

func (b *bench) startServer(ctx context.Context, dbURL string, env ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(b.o.serverBin)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"HOOKLINE_ADDR="+addr,
		"HOOKLINE_ADMIN_TOKEN="+adminToken,
		"HOOKLINE_ALLOW_PRIVATE_NETWORKS=true",
		"HOOKLINE_LOG_FORMAT=text",
		"HOOKLINE_DEMO=false",
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Env = append(cmd.Env, b.o.serverEnv...)
	s := &server{cmd: cmd, base: "http://" + addr, done: make(chan error, 1), log: &tailBuffer{max: 64 << 10}}
	if b.o.verbose {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, s.log), io.MultiWriter(os.Stderr, s.log)
	} else {
		cmd.Stdout, cmd.Stderr = s.log, s.log
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("server exited at start (%v); its log:\n%s", err, s.log.String())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("server not ready within 60 s; its log:\n%s", s.log.String())
		}
	}
}

// stop sends SIGTERM and waits (SIGKILL after 30 s).
func (s *server) stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// memory reads VmRSS and VmHWM (peak) in MiB from /proc.
func (s *server) memory() (rss, hwm float64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
		if k == "VmRSS" {
			rss = kb / 1024
		} else {
			hwm = kb / 1024
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return rss, hwm, nil
}

// resetPeak makes VmHWM start again from the current RSS.
func (s *server) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0)
}

// recordPeak adds the server's peak RSS since the last resetPeak as a figure.
func (b *bench) recordPeak(phase, what string, s *server) {
	if _, hwm, err := s.memory(); err == nil {
		b.res.add("rss", "peak during "+phase+" "+what, hwm, "MiB", "VmHWM")
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written (the server's log, shown when it fails).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
