package server_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/server"
)

// A first host that accepts connections but never answers (a crashed machine behind a live address, a
// partition) is given up after DefaultConnectTimeout, and the next host of a multi-host DATABASE_URL is
// tried: without the default, the attempt would wait on the silent host for as long as TCP does.
func TestConnectSkipsASilentHostAfterTheDefaultTimeout(t *testing.T) {
	t.Parallel()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held <- c // open, and never a byte back
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = silent.Addr().String() + "," + u.Host
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()

	ctx, cancel := context.WithTimeout(context.Background(), server.DefaultConnectTimeout+10*time.Second)
	defer cancel()
	start := time.Now()
	pool, err := server.Connect(ctx, u.String(), 2, server.PlanPerCall)
	if err != nil {
		t.Fatalf("connect past a silent first host: %v", err)
	}
	defer pool.Close()
	took := time.Since(start)
	t.Logf("connected to the second host after %s", took.Round(time.Millisecond))
	if took < server.DefaultConnectTimeout {
		t.Errorf("connected after %s: the silent host was not tried first", took)
	}
	if got := pool.Config().ConnConfig.ConnectTimeout; got != server.DefaultConnectTimeout {
		t.Errorf("ConnectTimeout %s, want the default %s", got, server.DefaultConnectTimeout)
	}

	// A connect_timeout in the URL is kept.
	u, err = url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q = u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	own, err := server.Connect(ctx, u.String(), 2, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if got := own.Config().ConnConfig.ConnectTimeout; got != 2*time.Second {
		t.Errorf("ConnectTimeout %s with connect_timeout=2, want 2s", got)
	}
}

// Operators size max_connections from the documented count of connections per process: it must be the
// code's.
func TestDocumentedConnectionsPerProcessAreTheCodes(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{
		"../../docs/operations.md": fmt.Sprintf("replicas × %d", server.MaxConns),
		"../../docs/scaling.md":    fmt.Sprintf("at most **%d connections**", server.MaxConns),
		"../../docs/scaling.md#2":  fmt.Sprintf("fixed at %d per process", server.MaxConns),
	} {
		text, err := os.ReadFile(strings.TrimSuffix(file, "#2"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), want) {
			t.Errorf("%s does not say %q", file, want)
		}
	}
}
