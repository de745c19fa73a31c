package main

import (
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Started while no database host accepts writes (all down, or a failover under way), the server waits and
// tries again instead of exiting, and serves once the database answers. A database that answers but
// refuses the settings (here a database that does not exist) still ends the start at once.
func TestStartWaitsForTheDatabase(t *testing.T) {
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

	addr := freeAddr(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+u.String(), "HOOKLINE_ADDR="+addr, "HOOKLINE_LOG_FORMAT=text")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	// Two refusals: it tried, waited and tried again, and is still running.
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(logs.String(), "database unavailable at start") < 2 {
		select {
		case err := <-exited:
			exited <- err // for the deferred stop
			t.Fatalf("the server exited while the database was away: %v\n%s", err, logs.Tail(20))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second try within 20 s\n%s", logs.Tail(20))
		}
	}

	// The database comes up at its address.
	ln, err := net.Listen("tcp", dbAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
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
	}()
	waitReady(t, "http://"+addr)

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
