package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
)

// freezeProxy forwards TCP to PostgreSQL until frozen; frozen, it keeps every connection open but passes
// no byte either way (and answers no new one): a database that stopped answering, not one that went away.
type freezeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	thawed *sync.Cond
	frozen bool
	closed bool
	conns  []net.Conn
}

func startFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: target}
	p.thawed = sync.NewCond(&p.mu)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(p.Close)
	return p
}

func (p *freezeProxy) serve(client net.Conn) {
	if !p.track(client) || !p.wait() {
		return
	}
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(upstream) {
		return
	}
	go p.pipe(upstream, client)
	p.pipe(client, upstream)
}

// pipe copies src to dst, holding each chunk while the proxy is frozen.
func (p *freezeProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks while frozen and says whether the proxy is still open.
func (p *freezeProxy) wait() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.frozen && !p.closed {
		p.thawed.Wait()
	}
	return !p.closed
}

func (p *freezeProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *freezeProxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// Close drops every connection, as PostgreSQL does to a client that went away.
func (p *freezeProxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.thawed.Broadcast()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// URL is dbURL with the proxy in place of the database's address.
func (p *freezeProxy) URL(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// SIGTERM while the database has stopped answering (a frozen proxy in front of it) and attempts are in
// flight against a slow receiver: the process still exits 0 within its shutdown timeout (the attempt
// timeout + 10 s), and nothing accepted is lost: every published event has its deliveries, and the ones
// left in flight go back to the queue when the rescuer finds their lease run out.
func TestSIGTERMWithDatabaseFrozenExitsInTimeAndLosesNothing(t *testing.T) {
	t.Parallel()
	const attemptTimeout, shutdownTimeout = time.Second, time.Second + 10*time.Second
	bin := buildServer(t)
	direct, drop, err := testdb.CreateEmpty(t.Context(), "frozen_shutdown")
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startFreezeProxy(t, u.Host)

	var arrived atomic.Int32
	release := make(chan struct{})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select { // still running when SIGTERM comes, and past the grace period
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(200)
	}))
	defer receiver.Close()
	defer close(release)

	p := startProcess(t, bin, "DATABASE_URL="+proxy.URL(t, direct), "HOOKLINE_ADMIN_TOKEN=t0ken",
		"HOOKLINE_ALLOW_PRIVATE_NETWORKS=true", "HOOKLINE_ATTEMPT_TIMEOUT="+attemptTimeout.String(), "HOOKLINE_ENDPOINT_CONCURRENCY=4")
	waitReady(t, p.base)

	// 4 deliveries in flight (the endpoint's cap), 6 waiting behind them.
	const events = 10
	tenant := call(t, p.base, "POST", "/api/v1/tenants", `{"name":"frozen"}`)["id"].(string)
	call(t, p.base, "POST", "/api/v1/tenants/"+tenant+"/subscriptions", fmt.Sprintf(`{"url":%q}`, receiver.URL))
	for i := range events {
		call(t, p.base, "POST", "/api/v1/tenants/"+tenant+"/events", fmt.Sprintf(`{"event_type":"a.b","payload":{"i":%d}}`, i))
	}
	eventually(t, 10*time.Second, func() string {
		return fmt.Sprintf("%d attempts reached the receiver, want 4\n%s", arrived.Load(), p.logs)
	}, func() bool { return arrived.Load() >= 4 })

	proxy.Freeze()
	took := p.sigterm(t, shutdownTimeout+5*time.Second)
	t.Logf("exited %s after SIGTERM with the database frozen", took.Round(10*time.Millisecond))
	if took > shutdownTimeout+time.Second {
		t.Errorf("exit took %s, more than the shutdown timeout %s", took, shutdownTimeout)
	}
	proxy.Close() // PostgreSQL ends the dead process's sessions, as it would after a crash
	checkNothingLost(t, direct, events, attemptTimeout, p.logs)
}

// checkNothingLost checks that each of the accepted events has its delivery, and that the ones left in
// flight go back to the queue when the rescuer finds their lease run out.
func checkNothingLost(t *testing.T, direct string, events int, attemptTimeout time.Duration, logs *syncBuffer) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM events e JOIN webhook_deliveries d ON d.event_id = e.id"); n != events {
		t.Fatalf("%d deliveries stored, want one for each of %d accepted events\n%s", n, events, logs)
	}
	inFlight := count("SELECT count(*) FROM webhook_deliveries WHERE state = 'in_flight'")
	t.Logf("after shutdown: %d in flight (lease held), %d pending", inFlight, count("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'"))
	// The rescuer, once the lease (attempt timeout + 15 s) has run out.
	rescued, err := db.New(conn).RescueExpiredLeases(ctx, time.Now().Add(attemptTimeout+16*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(rescued) != inFlight {
		t.Errorf("the rescuer re-queued %d of %d in-flight deliveries", len(rescued), inFlight)
	}
	if n := count("SELECT count(*) FROM webhook_deliveries WHERE state IN ('pending', 'delivered')"); n != events {
		t.Errorf("%d of %d deliveries pending or delivered after the rescue\n%s", n, events, logs)
	}
}
