package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"golang.org/x/net/html"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "web", func(u string) { dbURL = u }) }

// password is every test user's password.
const password = "correct horse battery"

// env is a running server on the package's database, with a receiver for its deliveries.
type env struct {
	t    *testing.T
	srv  *server.Server
	base string
	recv *receiver
}

// services says which of a process's services a test server runs.
type services int

const (
	// httpOnly is the API and the dashboard alone (servertest.Start): enough for a test that checks
	// pages, or publishes and reads deliveries without waiting for an attempt.
	httpOnly services = iota
	// withBackground adds the delivery worker, the maintenance leader, the replay runner and the
	// catalogue's poller (servertest.StartWithBackground), for a test that waits on one of them.
	withBackground
)

// setup starts a server with svc. Every server in this package shares one database and one retry policy
// (the workers of those withBackground claim each other's deliveries), so tests change only per-process
// settings in mod.
func setup(t *testing.T, svc services, mod func(*config.Config)) *env {
	t.Helper()
	return setupWith(t, svc, mod, server.Options{})
}

// setupWith starts a server with svc and options (an injected clock, say).
func setupWith(t *testing.T, svc services, mod func(*config.Config), opts server.Options) *env {
	t.Helper()
	cfg := servertest.Config(t, dbURL)
	cfg.RetryBase = 100 * time.Millisecond
	cfg.RetryMaxDelay = 300 * time.Millisecond
	cfg.RetryMaxAttempts = 3
	cfg.AttemptTimeout = 5 * time.Second
	cfg.AdminToken = "web-test-admin-token"
	if mod != nil {
		mod(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	begin := servertest.Start
	if svc == withBackground {
		begin = servertest.StartWithBackground
	}
	srv, base := begin(t, cfg, log, opts)
	return &env{t: t, srv: srv, base: base, recv: newReceiver(t)}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// receiver is a webhook endpoint: /bad answers 400, /flaky 503, /fixable 503 until fixed, /slow waits,
// anything else 200.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
	// fixed turns /fixable from 503 into 200: an endpoint the customer repairs.
	fixed atomic.Bool
}

type hit struct {
	Path    string
	Type    string
	Headers http.Header
	Body    string
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Type string `json:"type"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hit{Path: r.URL.Path, Type: body.Type, Headers: r.Header.Clone(), Body: string(raw)})
		rc.mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/bad"):
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"unknown order"}`)
		case strings.HasPrefix(r.URL.Path, "/flaky"), strings.HasPrefix(r.URL.Path, "/fixable") && !rc.fixed.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "try later")
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// count is the number of hits on paths starting with prefix.
func (rc *receiver) count(prefix string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, h := range rc.hits {
		if strings.HasPrefix(h.Path, prefix) {
			n++
		}
	}
	return n
}

func (rc *receiver) all() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

// waitHits waits until paths starting with prefix were hit at least n times.
func (rc *receiver) waitHits(t *testing.T, prefix string, n int) {
	t.Helper()
	eventually(t, 15*time.Second, 20*time.Millisecond, func() bool { return rc.count(prefix) >= n }, func() string {
		return fmt.Sprintf("receiver: %d hits on %s, want %d", rc.count(prefix), prefix, n)
	})
}

// eventually checks cond every interval until it holds, and once timeout has passed fails the test with
// what why says then: the waiting of every test here, on a real condition (a state in the database, a page,
// a receiver's hits), never a fixed pause.
func eventually(t testing.TB, timeout, interval time.Duration, cond func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(why())
		}
		<-tick.C
	}
}

// pollUntil checks cond every 5 ms until it holds, failing the test after timeout.
func pollUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	eventually(t, timeout, 5*time.Millisecond, cond, func() string {
		return fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
	})
}

// tenant is a seeded customer: a tenant with a user.
type tenant struct {
	ID    uuid.UUID
	Email string
}

// setupCtx is the context of what a test sets up through the services directly: every change is recorded,
// so it names an actor, the system.
func setupCtx() context.Context { return activity.System(context.Background(), "test setup") }

func (e *env) newTenant(name string) tenant {
	e.t.Helper()
	ctx := setupCtx()
	tn, err := e.srv.Tenants.CreateTenant(ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	email := strings.ToLower(strings.ReplaceAll(name, " ", "-")) + "-" + tn.ID.String()[len(tn.ID.String())-8:] + "@example.com"
	if _, err := e.srv.Tenants.CreateUser(ctx, tn.ID, email, password); err != nil {
		e.t.Fatal(err)
	}
	return tenant{ID: tn.ID, Email: email}
}

func (e *env) newSubscription(tn tenant, path, description string, eventTypes ...string) subscriptions.Subscription {
	e.t.Helper()
	u := e.recv.URL + path
	if eventTypes == nil {
		eventTypes = []string{}
	}
	s, _, err := e.srv.Subscriptions.Create(setupCtx(), tn.ID, subscriptions.Input{
		URL: &u, Description: &description, EventTypes: &eventTypes,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// publish sends an event and returns the ids of its deliveries.
func (e *env) publish(tn tenant, eventType string, payload map[string]any) []uuid.UUID {
	e.t.Helper()
	b, _ := json.Marshal(payload)
	p, err := e.srv.Publisher.Publish(context.Background(), publish.PublishInput{TenantID: tn.ID, EventType: eventType, Payload: b})
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []uuid.UUID
	for _, d := range p.Deliveries {
		ids = append(ids, uuid.MustParse(d.ID))
	}
	return ids
}

// publishTo sends an event to one subscription only and returns its delivery.
func (e *env) publishTo(tn tenant, subID uuid.UUID, eventType string, payload map[string]any) uuid.UUID {
	e.t.Helper()
	b, _ := json.Marshal(payload)
	p, err := e.srv.Publisher.Publish(context.Background(), publish.PublishInput{
		TenantID: tn.ID, EventType: eventType, Payload: b, OnlySubscription: &subID,
	})
	if err != nil || len(p.Deliveries) != 1 {
		e.t.Fatalf("publish to %s: %v, %d deliveries", subID, err, len(p.Deliveries))
	}
	return uuid.MustParse(p.Deliveries[0].ID)
}

// waitState waits until a delivery is in one of the states.
func (e *env) waitState(tn tenant, id uuid.UUID, states ...delivery.State) deliveries.Detail {
	e.t.Helper()
	// Generous: every test of this package shares one database and runs in parallel with browsers under the
	// race detector, so a few retries 100–300 ms apart can take seconds. It returns as soon as the state is
	// reached; a delivery that never gets there still fails, with what it was doing.
	var d deliveries.Detail
	eventually(e.t, 60*time.Second, 25*time.Millisecond, func() bool {
		var err error
		if d, err = e.srv.Deliveries.Get(context.Background(), tn.ID, id); err != nil {
			e.t.Fatal(err)
		}
		return slices.Contains(states, d.State)
	}, func() string {
		var inFlight int
		var circuit string
		_ = e.srv.Pool.QueryRow(context.Background(), `SELECT in_flight, circuit_state FROM subscriptions WHERE id = $1`,
			d.SubscriptionID).Scan(&inFlight, &circuit)
		return fmt.Sprintf("delivery %s is %s after %d attempts (next at %v, now %s; subscription in flight %d, circuit %s), want one of %v",
			id, d.State, d.TotalAttempts, d.NextAttemptAt, time.Now().UTC().Format(time.RFC3339Nano), inFlight, circuit, states)
	})
	return d
}

// client is a person with a browser-like cookie jar, over plain HTTP.
type client struct {
	e    *env
	t    *testing.T
	http *http.Client
	// header is added to every request (X-Forwarded-For through a trusted proxy, say).
	header http.Header
}

func (e *env) client() *client {
	jar, _ := cookiejar.New(nil)
	// A transport of its own, its idle connections closed when the test ends: none outlives the test.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	e.t.Cleanup(tr.CloseIdleConnections)
	return &client{e: e, t: e.t, http: &http.Client{Jar: jar, Timeout: 15 * time.Second, Transport: tr}}
}

// page is a fetched page, parsed.
type page struct {
	Status int
	URL    *url.URL
	Body   string
	Doc    *html.Node
	Header http.Header
}

func (c *client) do(req *http.Request) *page {
	c.t.Helper()
	for k, v := range c.header {
		req.Header[k] = v
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	doc, err := html.Parse(strings.NewReader(string(b)))
	if err != nil {
		c.t.Fatal(err)
	}
	return &page{Status: res.StatusCode, URL: res.Request.URL, Body: string(b), Doc: doc, Header: res.Header}
}

func (c *client) get(path string) *page {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.e.base+path, nil)
	return c.do(req)
}

// post submits a form the way a browser on this site does (same-origin headers).
func (c *client) post(path string, form url.Values) *page {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.e.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.e.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return c.do(req)
}

func (c *client) login(email string) *page {
	c.t.Helper()
	p := c.post("/login", url.Values{"email": {email}, "password": {password}})
	if p.Status != http.StatusOK || p.URL.Path == "/login" {
		c.t.Fatalf("sign-in as %s: %d at %s", email, p.Status, p.URL)
	}
	return p
}

// byTestID finds the elements with data-testid=id.
func byTestID(n *html.Node, id string) []*html.Node {
	return findAll(n, func(n *html.Node) bool { return attr(n, "data-testid") == id })
}

func one(t *testing.T, n *html.Node, id string) *html.Node {
	t.Helper()
	got := byTestID(n, id)
	if len(got) != 1 {
		t.Fatalf("want one data-testid=%q, found %d", id, len(got))
	}
	return got[0]
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// text is an element's text, whitespace collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func (p *page) text() string { return text(p.Doc) }

func (p *page) String() string { return fmt.Sprintf("%d %s", p.Status, p.URL) }
