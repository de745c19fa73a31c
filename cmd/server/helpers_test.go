package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// eventually polls cond every 20 ms until it holds, failing the test with what after timeout.
func eventually(t *testing.T, timeout time.Duration, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		<-tick.C
	}
}

// process is a run of the real binary, killed when the test ends unless it has exited.
type process struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	base string
	// done is closed when the process has exited, with err its exit.
	done chan struct{}
	err  error
}

// startProcess runs bin serving on a free address, with env added to the test's environment.
func startProcess(t *testing.T, bin string, env ...string) *process {
	t.Helper()
	addr := freeAddr(t)
	p := &process{cmd: exec.Command(bin), logs: &syncBuffer{}, base: "http://" + addr, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "HOOKLINE_ADDR="+addr), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// exited says whether the process has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// sigterm sends SIGTERM and waits up to within for the process to exit 0; it returns how long it took.
func (p *process) sigterm(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", p.err, p.logs)
		}
	case <-time.After(within):
		t.Fatalf("no exit within %s of SIGTERM\n%s", within, p.logs)
	}
	return time.Since(start)
}

// stop sends SIGTERM and waits up to 20 s for the process to exit, then kills it; how it exits is not
// checked.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}
