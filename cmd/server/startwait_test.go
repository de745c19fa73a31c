package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Started while no database host accepts writes (all down, or a failover under way), the server waits and
// tries again instead of exiting, and serves once the database answers. A database that answers but
// refuses the settings (here a database that does not exist) still ends the start at once.
func TestStartWaitsForTheDatabase(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	dbAddr := freeAddr(t) // nothing listens there yet: connections are refused
	u.Host = dbAddr
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()

	p := startProcess(t, bin, "DATABASE_URL="+u.String(), "HOOKLINE_LOG_FORMAT=text")
	defer p.stop()
	// Two refusals: it tried, waited and tried again, and is still running.
	eventually(t, 20*time.Second, func() string { return fmt.Sprintf("no second try within 20 s\n%s", p.logs.Tail(20)) }, func() bool {
		if exited, err := p.exited(); exited {
			t.Fatalf("the server exited while the database was away: %v\n%s", err, p.logs.Tail(20))
		}
		return strings.Count(p.logs.String(), "database unavailable at start") >= 2
	})

	// The database comes up at its address.
	ln, err := net.Listen("tcp", dbAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forward(ln, target)
	waitReady(t, p.base)

	// A database that does not exist is a setting to fix: no waiting.
	u.Host = target
	u.Path = "/no_such_database"
	bad := exec.Command(bin)
	bad.Env = append(os.Environ(), "DATABASE_URL="+u.String(), "HOOKLINE_ADDR="+freeAddr(t))
	done := make(chan struct{})
	var out []byte
	var badErr error
	go func() { out, badErr = bad.CombinedOutput(); close(done) }()
	select {
	case <-done:
		if badErr == nil || !strings.Contains(string(out), "no_such_database") {
			t.Errorf("with a missing database: %v\n%s", badErr, out)
		}
	case <-time.After(15 * time.Second):
		_ = bad.Process.Kill()
		t.Fatal("with a missing database the server did not exit")
	}
}

// forward passes every connection ln accepts on to target, until ln is closed.
func forward(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			_, _ = io.Copy(c, up)
		}()
	}
}
