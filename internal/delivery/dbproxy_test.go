package delivery_test

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// flakyProxy forwards TCP to PostgreSQL, except that it hangs up on the next Drop connections as soon as
// they are made (a database that is away for a moment: restarting, failing over), and that once frozen it
// passes no byte either way and keeps every connection open (a primary that vanished without closing
// them: a crashed machine, a partition).
type flakyProxy struct {
	ln     net.Listener
	target string
	Drop   atomic.Int32
	frozen atomic.Bool
	// closed is closed by Close: a frozen pipe waits for it.
	closed    chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	conns     []net.Conn
}

// Close drops every connection, as a database that went away for good would.
func (p *flakyProxy) Close() {
	p.closeOnce.Do(func() { close(p.closed) })
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// Freeze stops every byte, for good.
func (p *flakyProxy) Freeze() { p.frozen.Store(true) }

func startFlakyProxy(t *testing.T, dbURL string) (*flakyProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{ln: ln, target: u.Host, closed: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.Drop.Add(-1) >= 0 {
				c.Close()
				continue
			}
			p.Drop.Store(0)
			go p.forward(c)
		}
	}()
	t.Cleanup(p.Close)
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable") // one connection per connect: "prefer" would retry without TLS after a drop
	u.RawQuery = q.Encode()
	return p, u.String()
}

func (p *flakyProxy) forward(client net.Conn) {
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if isClosed(p.closed) {
		p.mu.Unlock()
		client.Close()
		upstream.Close()
		return
	}
	p.conns = append(p.conns, client, upstream)
	p.mu.Unlock()
	go p.pipe(upstream, client)
	p.pipe(client, upstream)
}

// pipe copies src to dst until either ends; frozen, it holds what it read and reads no more.
func (p *flakyProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if p.frozen.Load() {
			<-p.closed
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
