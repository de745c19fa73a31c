package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/client"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

// The tests run the hookline binary, built once, as a subprocess against real Hookline servers on this
// package's fresh database, and check its stdout, stderr and exit status as a shell would see them.
var (
	dbURL string
	bin   string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

// testMain is testdb.Main with the binary built first and removed last (testdb.Main exits, so it cannot
// clean up after itself here).
func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hookline-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "hookline")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	u, drop, err := testdb.Create(ctx, "hookline_cli")
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer drop()
	dbURL = u
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: the tests left goroutines running: %v\n", err)
			code = 1
		}
	}
	return code
}

const adminToken = "hookline-cli-test-admin-token"

// env is one real Hookline server and an SDK client of it holding the admin token, to set up what a
// test runs the command against and to check what the command did.
type env struct {
	t     *testing.T
	base  string
	admin *client.Client
}

// newEnv starts a server for one test: its HTTP side only, or with the background services when the
// test needs deliveries made (delivered, dead, replayed).
func newEnv(t *testing.T, background bool) *env {
	t.Helper()
	cfg := servertest.Config(t, dbURL)
	cfg.AdminToken = adminToken
	start := servertest.Start
	if background {
		start = servertest.StartWithBackground
	}
	_, base := start(t, cfg, nil, server.Options{})
	e := &env{t: t, base: base}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(base, adminToken, client.WithHTTP(&http.Client{Transport: tr, Timeout: 20 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	e.admin = c
	return e
}

func (e *env) newTenant(name string) string {
	e.t.Helper()
	res, err := e.admin.CreateTenantWithResponse(e.t.Context(), nil, client.CreateTenantJSONRequestBody{Name: name})
	if err != nil || res.JSON201 == nil {
		e.t.Fatalf("create tenant: %v", err)
	}
	return res.JSON201.ID
}

func (e *env) newToken(tenantID string, scopes ...client.Scope) string {
	e.t.Helper()
	res, err := e.admin.CreateTokenWithResponse(e.t.Context(), tenantID, nil, client.CreateTokenJSONRequestBody{Name: "cli-test", Scopes: scopes})
	if err != nil || res.JSON201 == nil {
		e.t.Fatalf("create token: %v", err)
	}
	return res.JSON201.Token
}

// allScopes are every tenant scope.
var allScopes = []client.Scope{client.ScopeSubscriptionsRead, client.ScopeSubscriptionsWrite, client.ScopeEventsWrite,
	client.ScopeDeliveriesRead, client.ScopeDeliveriesWrite}

// subscription creates a subscription of tenantID to url, for every event type, and returns its id;
// paused, its deliveries wait as pending.
func (e *env) subscription(tenantID, url string, paused bool) string {
	e.t.Helper()
	ctx := e.t.Context()
	res, err := e.admin.CreateSubscriptionWithResponse(ctx, tenantID, nil, client.CreateSubscriptionJSONRequestBody{URL: &url})
	if err != nil || res.JSON201 == nil {
		e.t.Fatalf("create subscription: %v", err)
	}
	if paused {
		if _, err := e.admin.PauseSubscriptionWithResponse(ctx, tenantID, res.JSON201.ID, nil); err != nil {
			e.t.Fatalf("pause subscription: %v", err)
		}
	}
	return res.JSON201.ID
}

// receiver is a real HTTP endpoint answering status to every webhook.
func receiver(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hooks"
}

// delivery reads a delivery through the SDK.
func (e *env) delivery(tenantID, id string) *client.DeliveryDetail {
	e.t.Helper()
	res, err := e.admin.GetDeliveryWithResponse(e.t.Context(), tenantID, id, nil)
	if err != nil || res.JSON200 == nil {
		e.t.Fatalf("get delivery %s: %v", id, err)
	}
	return res.JSON200
}

// waitState waits, polling with a deadline, until the delivery is in state.
func (e *env) waitState(tenantID, id string, state client.DeliveryState) *client.DeliveryDetail {
	e.t.Helper()
	var d *client.DeliveryDetail
	eventually(e.t, fmt.Sprintf("delivery %s %s", id, state), func() bool {
		d = e.delivery(tenantID, id)
		return d.State == state
	})
	return d
}

// eventually polls cond until it holds, failing the test after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// result is what a run of the command left: its output and exit status.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs `hookline args...` against the env's server with token (HOOKLINE_URL and HOOKLINE_TOKEN; an
// empty token sets neither) and returns what it printed and its exit status.
func (e *env) run(token string, args ...string) result {
	e.t.Helper()
	return e.runWith(token, nil, args...)
}

func (e *env) runWith(token string, stdin io.Reader, args ...string) result {
	e.t.Helper()
	var env []string
	if token != "" {
		env = []string{"HOOKLINE_URL=" + e.base, "HOOKLINE_TOKEN=" + token}
	}
	return runBinary(e.t, env, stdin, args...)
}

// runBinary runs the binary with exactly env as its environment.
func runBinary(t *testing.T, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("hookline %s: %v\n%s", strings.Join(args, " "), err, r)
	}
	return r
}

// want fails the test unless r exited with code and its stdout and stderr contain the strings given.
func want(t *testing.T, what string, r result, code int, stdout, stderr []string) {
	t.Helper()
	ok := r.code == code
	for _, s := range stdout {
		ok = ok && strings.Contains(r.stdout, s)
	}
	for _, s := range stderr {
		ok = ok && strings.Contains(r.stderr, s)
	}
	if !ok {
		t.Errorf("%s: want exit %d, stdout with %q, stderr with %q; got %s", what, code, stdout, stderr, r)
	}
}

// output is a process's output as it arrives, for a test waiting on it with a deadline: each write
// wakes the waiters, so none sleeps.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return n, err
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output so far satisfies cond, failing the test after timeout.
func (o *output) waitFor(t *testing.T, what string, timeout time.Duration, cond func(string) bool) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		s, changed := o.buf.String(), o.changed
		o.mu.Unlock()
		if cond(s) {
			return s
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; the output so far:\n%s", what, s)
		}
	}
}
