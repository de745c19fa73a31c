// Package testbed is what the benchmark harness's phases run against: the server binary measured (started
// as a subprocess, so its memory and CPU time can be read from /proc), fresh databases it migrates, the
// loopback receiver every delivery goes to, clients of the JSON API and the dashboard, CPU readings of the
// server, the database's backends and the harness, PostgreSQL's slow plans, and an OTLP collector.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
)

// adminToken is the admin token every server started here accepts, and every Client sends.
const adminToken = "bench-admin-token-0123456789abcdef"

// ServerBinary is the server binary measured and how the harness starts it: every database a phase uses
// is migrated by it, and every server a phase talks to runs it.
type ServerBinary struct {
	Path    string   // the binary (-server)
	Env     []string // KEY=VALUE added to every start, after the harness's and the phase's own (-server-env)
	ShowLog bool     // copy the server's log to the harness's stdout and stderr (-v)
}

// Database is a fresh, migrated database for one phase, with a pool for the harness's own SQL.
type Database struct {
	URL  string
	Pool *pgxpool.Pool
	drop func()
}

// FreshDB creates an empty database and has the server binary migrate it (`server migrate`), so the
// schema is always the one of the binary measured, even one built from another commit (-server).
func (sb ServerBinary) FreshDB(ctx context.Context, phase string) (*Database, error) {
	u, drop, err := testdb.CreateEmpty(ctx, "bench_"+phase)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, sb.Path, "migrate")
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
	return &Database{URL: u, Pool: pool, drop: drop}, nil
}

// Close closes the pool and drops the database.
func (d *Database) Close() {
	d.Pool.Close()
	d.drop()
}

// Count runs a query of one integer, a count.
func (d *Database) Count(ctx context.Context, sql string, args ...any) (int, error) {
	var n int
	err := d.Pool.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// Server is one running bin/server process.
type Server struct {
	cmd  *exec.Cmd
	Base string // http://127.0.0.1:port
	done chan error
	log  *tailBuffer
}

// Start starts the server binary on a free loopback port against dbURL, with the harness's settings,
// then env (KEY=VALUE), then the binary's Env, and waits until /readyz answers 200.
func (sb ServerBinary) Start(ctx context.Context, dbURL string, env ...string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(sb.Path)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"HOOKLINE_ADDR="+addr,
		"HOOKLINE_ADMIN_TOKEN="+adminToken,
		"HOOKLINE_ALLOW_PRIVATE_NETWORKS=true",
		"HOOKLINE_LOG_FORMAT=text",
		"HOOKLINE_DEMO=false",
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Env = append(cmd.Env, sb.Env...)
	s := &Server{cmd: cmd, Base: "http://" + addr, done: make(chan error, 1), log: &tailBuffer{max: 64 << 10}}
	if sb.ShowLog {
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
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get(s.Base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("server not ready within 60 s; its log:\n%s", s.log.String())
		}
	}
}

// Stop sends SIGTERM and waits (SIGKILL after 30 s).
func (s *Server) Stop() {
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

// Memory reads VmRSS and VmHWM (peak) in MiB from /proc.
func (s *Server) Memory() (rss, hwm float64, err error) {
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

// ResetPeak makes VmHWM start again from the current RSS.
func (s *Server) ResetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0)
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
