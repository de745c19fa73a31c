package delivery_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
)

// flakyProxy forwards TCP to PostgreSQL, except that it hangs up on the next Drop connections as soon as
// they are made: a database that is away for a moment (restarting, failing over), then back.
type flakyProxy struct {
	ln     net.Listener
	target string
	Drop   atomic.Int32
	mu     sync.Mutex
	conns  []net.Conn
}

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
	p := &flakyProxy{ln: ln, target: u.Host}
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
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
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
	p.conns = append(p.conns, client, upstream)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(upstream, client); upstream.Close() }()
	_, _ = io.Copy(client, upstream)
	client.Close()
}

// A chunk that fails because the database is away does not count against MaxFailures: a failover must not
// fail a customer's replay for good. The replay stays running and resumes once the database answers.
func TestReplaySurvivesTheDatabaseGoingAway(t *testing.T) {
	e := setup(t)
	rp := e.replays()
	sub, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	from := e.clock.Now().Add(-time.Hour)
	e.insert(rows{sub: sub.ID, n: 1500, state: delivery.Failed, reason: delivery.ReasonPermanentStatus, createdAt: from, step: time.Millisecond})
	to := e.clock.Now()
	r, err := rp.Start(e.ctx, delivery.ReplayRequest{Filter: delivery.DeadFilter{CreatedFrom: &from, CreatedTo: &to}})
	if err != nil {
		t.Fatal(err)
	}

	proxy, proxied := startFlakyProxy(t, dbURL)
	pool, err := server.Connect(context.Background(), proxied, 1, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	run := e.runner(delivery.NewReplays(pool, e.policy, e.clock.Now))
	run.MaxFailures = 1 // the first counted failure fails the replay

	pool.Reset()        // the next chunk needs a new connection,
	proxy.Drop.Store(1) // which is refused; the one after it goes through
	run.Run(e.ctx, r.ID)
	if got := e.getReplay(rp, r.ID); got.State != delivery.ReplayRunning || got.Scheduled != 0 || got.Error != "" {
		t.Fatalf("after a chunk failed with the database away: %+v, want it running, untouched", got)
	}
	run.Run(e.ctx, r.ID)
	if got := e.getReplay(rp, r.ID); got.State != delivery.ReplayFinished || got.Scheduled != 1500 {
		t.Fatalf("once the database answered: %+v, want it finished with all 1500 scheduled", got)
	}
}
