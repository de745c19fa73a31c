package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookline/hookline/client"
)

// listening is a running `hookline listen`.
type listening struct {
	cmd            *exec.Cmd
	stdout, stderr *output
	sub, secret    string
	done           chan struct{} // closed when the process has ended; err is its Wait
	err            error
}

var (
	listenSubLine    = regexp.MustCompile(`(?m)^(?:created|using) the polling subscription (\S+) `)
	listenSecretLine = regexp.MustCompile(`(?m)^signing secret: (whsec_\S+) `)
)

// listen starts `hookline listen args...` against base with token and waits until it forwards.
func listen(t *testing.T, base, token string, args ...string) *listening {
	t.Helper()
	l := &listening{stdout: newOutput(), stderr: newOutput(), done: make(chan struct{})}
	l.cmd = exec.Command(bin, append([]string{"listen", "--interval", "50ms"}, args...)...)
	l.cmd.Env = []string{"HOOKLINE_URL=" + base, "HOOKLINE_TOKEN=" + token}
	l.cmd.Stdout, l.cmd.Stderr = l.stdout, l.stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		l.err = l.cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(l.kill)
	started := l.stderr.waitFor(t, "listen to start", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "forwarding to ")
	})
	sub, secret := listenSubLine.FindStringSubmatch(started), listenSecretLine.FindStringSubmatch(started)
	if sub == nil || secret == nil {
		t.Fatalf("listen printed no subscription or secret:\n%s", started)
	}
	l.sub, l.secret = sub[1], secret[1]
	return l
}

// kill is kill -9, and waits until the process is gone.
func (l *listening) kill() {
	_ = l.cmd.Process.Kill()
	<-l.done
}

// interrupt sends SIGINT, as Ctrl-C does, and wants exit status 0.
func (l *listening) interrupt(t *testing.T) {
	t.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.done:
		if l.err != nil {
			t.Errorf("listen after SIGINT: %v, want exit status 0\nstderr:\n%s", l.err, l.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("listen did not stop after SIGINT\nstderr:\n%s", l.stderr)
	}
}

// webhook is one request a receiver got.
type webhook struct {
	method, path string
	header       http.Header
	body         []byte
}

// recorder is a local receiver: it keeps every request and answers status.
type recorder struct {
	mu     sync.Mutex
	got    []webhook
	status atomic.Int32
	more   chan struct{}
}

func newRecorder(status int) *recorder {
	r := &recorder{more: make(chan struct{}, 1000)}
	r.status.Store(int32(status))
	return r
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, webhook{r.Method, r.URL.Path, r.Header.Clone(), b})
	rc.mu.Unlock()
	rc.more <- struct{}{}
	w.WriteHeader(int(rc.status.Load()))
}

func (rc *recorder) requests() []webhook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]webhook(nil), rc.got...)
}

// serve serves h on ln until the test ends.
func serve(t *testing.T, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// listen: created, it prints its subscription's secret and forwards the events of its --events as the
// server would send them, signed with that secret, and commits them; started again with the same --name
// it uses the same subscription (its event types updated) and secret; while the local server refuses the
// connection the delivery is tried again and not committed, and a 500 is an answer like any other.
func TestListen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-listen")
	token := e.newToken(tenant, allScopes...)
	rec := newRecorder(http.StatusOK)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln, rec)
	target := "http://" + ln.Addr().String() + "/webhooks"

	first := listen(t, e.base, token, "--forward-to", target, "--events", "order.*", "--name", "cli-listen")
	want(t, "listen's start", result{stderr: first.stderr.String()}, 0, nil, []string{
		"created the polling subscription " + first.sub + " for listener cli-listen (order.*)", "forwarding to " + target})
	sub, err := e.admin.GetSubscriptionWithResponse(ctx, tenant, first.sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := sub.JSON200; s.Type != client.SubscriptionTypePolling || s.Description != "hookline listen: cli-listen" ||
		strings.Join(s.EventTypes, ",") != "order.*" || s.URL != nil {
		t.Errorf("listen's subscription: type %s, description %q, event types %v, url %v", s.Type, s.Description, s.EventTypes, s.URL)
	}

	other, err := e.admin.Publish(ctx, tenant, "invoice.paid", map[string]any{"id": "inv_1"}, client.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Deliveries) != 0 {
		t.Fatalf("invoice.paid made deliveries for a subscription to order.*: %+v", other.Deliveries)
	}
	payload := json.RawMessage(`{"id": "ord_1", "note": "<b>&</b>", "amount": 12345678901234567890}`)
	order, err := e.admin.Publish(ctx, tenant, "order.created", payload, client.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := order.Deliveries[0].ID
	first.stdout.waitFor(t, "the delivery's line", 30*time.Second, func(s string) bool {
		return regexp.MustCompile(`(?m)^\S+Z  order\.created  ` + id + `  HTTP 200  \d+(\.\d)?ms$`).MatchString(s)
	})
	e.waitState(tenant, id, client.DeliveryStateDelivered)
	got := rec.requests()
	if len(got) != 1 {
		t.Fatalf("the local server got %d requests, want 1", len(got))
	}
	r := got[0]
	body, err := client.EventBody("order.created", order.CreatedAt, payload)
	if err != nil {
		t.Fatal(err)
	}
	if r.method != http.MethodPost || r.path != "/webhooks" || string(r.body) != string(body) {
		t.Errorf("the local server got %s %s %s, want POST /webhooks %s", r.method, r.path, r.body, body)
	}
	if r.header.Get("webhook-id") != order.ID || r.header.Get("content-type") != "application/json" ||
		r.header.Get("user-agent") != client.UserAgent {
		t.Errorf("headers %v: want webhook-id %s (the event id), content-type application/json, user-agent %q", r.header, order.ID, client.UserAgent)
	}
	if err := client.Verify(first.secret, r.header, r.body); err != nil {
		t.Errorf("the forwarded request does not verify with the printed secret: %v", err)
	}
	first.interrupt(t)

	// The same name again, with more event types, forwarding to a port nothing listens on.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := closed.Addr().String()
	closed.Close()
	second := listen(t, e.base, token, "--json", "--forward-to", "http://"+down+"/hooks", "--events", "order.*,invoice.*", "--name", "cli-listen")
	if second.sub != first.sub || second.secret != first.secret {
		t.Errorf("started again: subscription %s with secret %s, want %s with %s", second.sub, second.secret, first.sub, first.secret)
	}
	want(t, "listen started again", result{stderr: second.stderr.String()}, 0, nil, []string{
		"using the polling subscription " + first.sub + " of listener cli-listen (order.*, invoice.*), from its committed cursor"})
	sub, err = e.admin.GetSubscriptionWithResponse(ctx, tenant, first.sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sub.JSON200.EventTypes, ","); got != "order.*,invoice.*" && got != "invoice.*,order.*" {
		t.Errorf("the subscription's event types after --events order.*,invoice.*: %s", got)
	}
	paid, err := e.admin.Publish(ctx, tenant, "invoice.paid", map[string]any{"id": "inv_2"}, client.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second.stderr.waitFor(t, "the refused connection reported", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "delivery "+paid.Deliveries[0].ID+" not forwarded: ") && strings.Contains(s, "connection refused")
	})
	if d := e.delivery(tenant, paid.Deliveries[0].ID); d.State == client.DeliveryStateDelivered {
		t.Errorf("the delivery the local server never got is %s", d.State)
	}
	// The local server comes up, answering 500: an answer, printed and committed.
	rec500 := newRecorder(http.StatusInternalServerError)
	reopened, err := net.Listen("tcp", down)
	if err != nil {
		t.Fatalf("listen again on %s: %v", down, err)
	}
	serve(t, reopened, rec500)
	line := second.stdout.waitFor(t, "the JSON line", 30*time.Second, func(s string) bool { return strings.HasSuffix(s, "\n") })
	var printed listenLine
	if err := json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &printed); err != nil {
		t.Fatalf("listen --json printed %q: %v", line, err)
	}
	if printed.DeliveryID != paid.Deliveries[0].ID || printed.EventID != paid.ID || printed.EventType != "invoice.paid" ||
		printed.Status != 500 || printed.Time.IsZero() {
		t.Errorf("listen --json printed %+v", printed)
	}
	e.waitState(tenant, paid.Deliveries[0].ID, client.DeliveryStateDelivered)
	second.stderr.waitFor(t, "the local server back", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "your server at http://"+down+"/hooks answers again")
	})
	if got := rec500.requests(); len(got) != 1 || client.Verify(first.secret, got[0].header, got[0].body) != nil {
		t.Errorf("the local server got %d requests once up, want 1 that verifies", len(got))
	}
	second.interrupt(t)
	if n := len(rec.requests()); n != 1 {
		t.Errorf("the first local server got %d requests in all, want 1", n)
	}
}

// Without --name, the listener is named for the host: its subscription's description and its consumer.
func TestListenDefaultName(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-listen-name")
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	name := defaultListenerName(host)
	l := listen(t, e.base, e.newToken(tenant, allScopes...), "--forward-to", "http://127.0.0.1:9/hooks")
	want(t, "listen without --name", result{stderr: l.stderr.String()}, 0, nil, []string{"for listener " + name + " (every event type)"})
	l.interrupt(t)
	sub, err := e.admin.GetSubscriptionWithResponse(t.Context(), tenant, l.sub, nil)
	if err != nil || sub.JSON200.Description != "hookline listen: "+name {
		t.Errorf("the subscription of a listener named for host %q: %v %+v", host, err, sub.JSON200)
	}
}

// A paused listener subscription is someone's decision: listen says so and exits 1. A disabled one (the
// server disables a subscription nobody pulls, as one whose endpoint fails) is resumed by listen's start.
func TestListenPausedOrDisabled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-listen-states")
	token := e.newToken(tenant, allScopes...)
	rec := newRecorder(http.StatusOK)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln, rec)
	target := "http://" + ln.Addr().String() + "/hooks"
	first := listen(t, e.base, token, "--forward-to", target, "--name", "states")
	first.interrupt(t)

	if _, err := e.admin.PauseSubscriptionWithResponse(ctx, tenant, first.sub, nil); err != nil {
		t.Fatal(err)
	}
	// Published while paused: the delivery waits, and is held while disabled (which takes no new ones).
	p, err := e.admin.Publish(ctx, tenant, "order.waiting", map[string]any{}, client.PublishOptions{})
	if err != nil || len(p.Deliveries) != 1 {
		t.Fatalf("publish to the paused subscription: %v, %+v", err, p)
	}
	paused := e.run(token, "listen", "--forward-to", target, "--name", "states")
	if paused.code != 1 || paused.stdout != "" || !strings.Contains(paused.stderr, "hookline: the polling subscription "+first.sub+
		" of listener states is paused: resume it") || strings.Contains(paused.stderr, "signing secret") {
		t.Errorf("listen of a paused subscription: %s", paused)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `UPDATE subscriptions SET state = 'disabled', disabled_reason = 'nobody pulled it for 3 days' WHERE id = $1`, first.sub); err != nil {
		t.Fatal(err)
	}
	again := listen(t, e.base, token, "--forward-to", target, "--name", "states")
	want(t, "listen of a disabled subscription", result{stderr: again.stderr.String()}, 0, nil, []string{
		"resumed the polling subscription " + first.sub + ", which the server had disabled: nobody pulled it for 3 days"})
	e.waitState(tenant, p.Deliveries[0].ID, client.DeliveryStateDelivered)
	again.interrupt(t)
	if got := rec.requests(); len(got) != 1 || got[0].header.Get("webhook-id") != p.ID {
		t.Errorf("the local server got %d requests, want the one event's", len(got))
	}
}

// THE END TO END TEST: the built binary forwards to a local receiver that verifies every request with the
// Standard Webhooks Go library while events are published without pause; it is killed (SIGKILL) mid-stream
// and started again, then cut off from the API for a while; every event published before, during and
// after arrives, verified (dedupe by webhook-id: a page forwarded but not committed comes again).
func TestListenEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-listen-e2e")
	token := e.newToken(tenant, allScopes...)
	api := newCuttableProxy(t, e.base)

	var (
		mu       sync.Mutex
		verifier *standardwebhooks.Webhook
		arrived  = map[string]int{} // webhook-id → requests
		bad      []string
	)
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived)
	}
	progress := make(chan struct{}, 1)
	// Once hold is armed, the next request waits (unanswered, not counted) until release: the listener is
	// killed while it waits for the local server's answer, in the middle of a page.
	var holdAt atomic.Int64
	held, release := make(chan struct{}), make(chan struct{})
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if n := holdAt.Load(); n > 0 && received() >= int(n) && holdAt.CompareAndSwap(n, 0) {
			close(held)
			<-release
			http.Error(w, "too late", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err := verifier.Verify(body, r.Header); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", r.Header.Get("webhook-id"), err))
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		arrived[r.Header.Get("webhook-id")]++
		select {
		case progress <- struct{}{}:
		default:
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln, receiver)
	target := "http://" + ln.Addr().String() + "/webhooks"
	// waitReceived waits until n distinct events have arrived.
	waitReceived := func(what string, n int) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for received() < n {
			select {
			case <-progress:
			case <-deadline:
				t.Fatalf("timed out waiting for %s: %d events arrived, want %d", what, received(), n)
			}
		}
	}

	l := listen(t, api.url, token, "--forward-to", target, "--name", "e2e")
	mu.Lock()
	verifier, err = standardwebhooks.NewWebhook(l.secret)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}

	// The publisher publishes one event after another until told to stop.
	var (
		pmu       sync.Mutex
		published []string
	)
	stop := make(chan struct{})
	publisherDone := make(chan error, 1)
	more := make(chan struct{}, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				publisherDone <- nil
				return
			default:
			}
			p, err := e.admin.Publish(ctx, tenant, "order.streamed", map[string]any{"n": i, "html": "<&>"}, client.PublishOptions{})
			if err != nil {
				publisherDone <- err
				return
			}
			pmu.Lock()
			published = append(published, p.ID)
			pmu.Unlock()
			select {
			case more <- struct{}{}:
			default:
			}
		}
	}()
	publishedCount := func() int {
		pmu.Lock()
		defer pmu.Unlock()
		return len(published)
	}
	waitPublished := func(n int) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for publishedCount() < n {
			select {
			case <-more:
			case <-deadline:
				t.Fatalf("the publisher published %d events in 30 s, want %d", publishedCount(), n)
			}
		}
	}

	holdAt.Store(40)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatalf("the first events did not arrive: %d did", received())
	}
	l.kill() // kill -9, waiting for the local server's answer in the middle of a page
	close(release)
	killedAt := publishedCount()
	waitPublished(killedAt + 40) // published while nobody listens

	again := listen(t, api.url, token, "--forward-to", target, "--name", "e2e")
	if again.sub != l.sub || again.secret != l.secret {
		t.Fatalf("started again: subscription %s, secret %s; want %s, %s", again.sub, again.secret, l.sub, l.secret)
	}
	waitReceived("the events published while it was killed", killedAt+40)

	// The API connection drops: the listener keeps trying, and goes on from its committed cursor.
	api.cut()
	cutAt := publishedCount()
	waitPublished(cutAt + 40)
	again.stderr.waitFor(t, "the lost API connection reported", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "hookline listen: the API: ")
	})
	api.restore()
	waitPublished(publishedCount() + 40) // and some after
	close(stop)
	if err := <-publisherDone; err != nil {
		t.Fatalf("publish: %v", err)
	}
	waitReceived("every event published", publishedCount())
	// Every delivery committed, the listener only polls; the API connection drops then, and events are
	// published meanwhile.
	sub := uuid.MustParse(l.sub)
	allCommitted := func() bool {
		for d, err := range e.admin.Deliveries(ctx, tenant, &client.ListDeliveriesParams{SubscriptionID: &sub}) {
			if err != nil {
				t.Fatal(err)
			}
			if d.State != client.DeliveryStateDelivered {
				return false
			}
		}
		return true
	}
	eventually(t, "every delivery committed", allCommitted)
	api.cut()
	again.stderr.waitFor(t, "the failed poll reported", 30*time.Second, func(s string) bool {
		return strings.Contains(s, `hookline listen: the API: Get "`)
	})
	for i := range 20 {
		p, err := e.admin.Publish(ctx, tenant, "order.streamed", map[string]any{"after": i}, client.PublishOptions{})
		if err != nil {
			t.Fatal(err)
		}
		published = append(published, p.ID)
	}
	api.restore()
	total := publishedCount()
	waitReceived("every event published", total)
	eventually(t, "every delivery committed", allCommitted)
	if n := strings.Count(again.stderr.String(), "hookline listen: the API answers again"); n < 2 {
		t.Errorf("the listener said %d times that the API answers again, want one per cut:\n%s", n, again.stderr)
	}
	again.interrupt(t)

	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("%d requests did not verify with the Standard Webhooks library: %v", len(bad), bad[:min(len(bad), 5)])
	}
	duplicates := 0
	for _, id := range published {
		if arrived[id] == 0 {
			t.Errorf("event %s never arrived", id)
		}
		duplicates += max(0, arrived[id]-1)
	}
	if len(arrived) != total {
		t.Errorf("%d distinct events arrived, %d were published", len(arrived), total)
	}
	t.Logf("%d events published, all arrived verified; %d forwarded again (a page uncommitted at the kill or the cut)", total, duplicates)
}

// cuttableProxy is a TCP proxy to the API that the test can cut: its connections closed, new ones
// accepted and closed at once, until restored.
type cuttableProxy struct {
	url     string
	backend string
	mu      sync.Mutex
	down    bool
	conns   map[net.Conn]struct{}
}

func newCuttableProxy(t *testing.T, base string) *cuttableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttableProxy{url: "http://" + ln.Addr().String(), backend: strings.TrimPrefix(base, "http://"), conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			wg.Go(func() { p.pipe(c) })
		}
	})
	return p
}

func (p *cuttableProxy) pipe(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	b, err := net.Dial("tcp", p.backend)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[b] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
	c.Close()
	b.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, b)
	p.mu.Unlock()
}

// cut closes every connection and refuses new ones until restore.
func (p *cuttableProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *cuttableProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
