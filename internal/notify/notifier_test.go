package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/smtpurl"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "notify", func(u string) { dbURL = u }) }

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ownDatabase is a database of the test's own, dropped when it ends: a notifier takes every due row of
// its database, so each test has its own and the tests run in parallel.
func ownDatabase(t *testing.T) string {
	t.Helper()
	own, drop, err := testdb.Create(context.Background(), "notify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return own
}

// connect opens a pool on url, closed when the test ends.
func connect(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxuuid.NewPool(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// fresh empties the outbox (the tests share one database and a notifier takes every due row) and makes a
// tenant to queue for.
func fresh(t *testing.T, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "DELETE FROM notifications"); err != nil {
		t.Fatal(err)
	}
	var id uuid.UUID
	if err := pool.QueryRow(ctx, "INSERT INTO tenants (name) VALUES ('notify test') RETURNING id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Secrets and payload text that must never reach an email.
const (
	endpointToken = "tok_ENDPOINTSECRET"
	payloadText   = "PAYLOAD-CARD-4242"
)

var (
	failingSince = time.Date(2026, 3, 4, 10, 15, 0, 0, time.UTC)
	openedAt     = failingSince.Add(time.Hour)
	firstExpiry  = time.Date(2026, 3, 7, 10, 15, 0, 0, time.UTC)
	// certificateNotAfter is when the endpoint's client certificate expires.
	certificateNotAfter = time.Date(2026, 3, 18, 10, 15, 0, 0, time.UTC)
)

// privateKeyText stands for a client certificate's private key: never in an email.
const privateKeyText = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"

// stepJSON is a notification's data as incidents.Service.tell writes it, plus fields a message must not
// show (a payload, a signing secret) to prove only the known ones are read.
func stepJSON(t *testing.T, kind string) []byte {
	t.Helper()
	d := map[string]any{
		"incident_id": uuid.New(), "subscription_id": uuid.New(),
		"url":         "https://user:pw@hooks.example.com/in/orders?token=" + endpointToken,
		"description": "Orders endpoint", "failing_since": failingSince, "opened_at": openedAt, "ended_at": nil,
		"waiting": 42, "first_expiry": firstExpiry, "link": "https://hookline.example.com/subscriptions/abc",
		"payload": payloadText, "secret": "whsec_" + endpointToken,
	}
	switch kind {
	case incidents.KindExpired:
		d["expired"] = 12
		d["last_events"] = []map[string]string{
			{"event_id": "0195a1b2-0000-7000-8000-000000000001", "event_type": "order.created"},
			{"event_id": "0195a1b2-0000-7000-8000-000000000002", "event_type": "order.paid"},
		}
	case incidents.KindEnded:
		d["ended_at"] = openedAt.Add(3 * time.Hour)
	case incidents.KindCertificateExpiring:
		d["subject"], d["not_after"], d["expired"] = "CN=orders-client.example.com", certificateNotAfter, false
		d["private_key"] = privateKeyText
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func enqueue(t *testing.T, pool *pgxpool.Pool, tenant uuid.UUID, kind, to string, at time.Time) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	if err := pool.QueryRow(context.Background(), `INSERT INTO notifications (tenant_id, kind, recipient, data, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, tenant, kind, to, stepJSON(t, kind), at).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

type row struct {
	Attempts  int
	Next      string // text, so 'infinity' reads too
	SentAt    *time.Time
	LastError string
}

func readRow(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) row {
	t.Helper()
	var r row
	if err := pool.QueryRow(context.Background(), `SELECT attempts, next_attempt_at::text, sent_at, last_error
		FROM notifications WHERE id = $1`, id).Scan(&r.Attempts, &r.Next, &r.SentAt, &r.LastError); err != nil {
		t.Fatal(err)
	}
	return r
}

func smtpFor(s *smtpServer, extra string) *smtpurl.SMTP {
	c, err := smtpurl.Parse(fmt.Sprintf("smtp://%s?from=Hookline%%20%%3Calerts@hookline.example.com%%3E%s", s.Addr, extra))
	if err != nil {
		panic(err)
	}
	return c
}

func quietLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// parsed is a received email, read back with the standard library.
type parsed struct {
	Header mail.Header
	Text   string
	HTML   string
}

func parse(t *testing.T, raw []byte) parsed {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	p := parsed{Header: m.Header}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v), want multipart/alternative", m.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		part, err := mr.NextPart() // decodes quoted-printable
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(part)
		ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch ct {
		case "text/plain":
			p.Text = string(b)
		case "text/html":
			p.HTML = string(b)
		}
	}
	if p.Text == "" || p.HTML == "" {
		t.Fatalf("want a text/plain and a text/html part:\n%s", raw)
	}
	return p
}

func subjectOf(t *testing.T, p parsed) string {
	s, err := new(mime.WordDecoder).DecodeHeader(p.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every step becomes one email to its recipient, with a subject naming the endpoint, the same words in a
// text and an HTML part, the dashboard link, and nothing secret: no payload, no credentials of the URL.
func TestSendsEachStep(t *testing.T) {
	t.Parallel()
	pool := connect(t, ownDatabase(t))
	tenant := fresh(t, pool)
	srv := startSMTP(t, serverOpts{})
	clk := &clock{t: time.Now()}
	n := New(pool, Options{SMTP: smtpFor(srv, ""), Now: clk.Now, Log: quietLog(t), SendTimeout: 10 * time.Second})

	want := map[string]struct {
		subject string
		says    []string
	}{
		incidents.KindOpened: {"Webhook endpoint failing: Orders endpoint",
			[]string{"failed since 2026-03-04 10:15 UTC", "42 deliveries are waiting", "expires at 2026-03-07 10:15 UTC"}},
		incidents.KindDay: {"Webhook endpoint still failing after 24 hours: Orders endpoint",
			[]string{"more than 24 hours", "42 deliveries are waiting"}},
		incidents.KindExpiring: {"Webhook deliveries expiring soon: Orders endpoint",
			[]string{"expires at 2026-03-07 10:15 UTC", "Fix the endpoint before then"}},
		incidents.KindExpired: {"Webhook deliveries lost: Orders endpoint",
			[]string{"12 deliveries have expired", "0195a1b2-0000-7000-8000-000000000002", "order.paid", "and 10 more", "Recover"}},
		incidents.KindEnded: {"Webhook endpoint recovered: Orders endpoint",
			[]string{"answered successfully (2026-03-04 14:15 UTC)", "42 deliveries that waited are being sent now"}},
		incidents.KindCertificateExpiring: {"The client certificate of Orders endpoint expires on 2026-03-18",
			[]string{"CN=orders-client.example.com", "It expires at 2026-03-18 10:15 UTC", "every delivery to it fails",
				"choose Edit", "under Client certificate", "once per certificate, 14 days before it expires"}},
	}
	ids := map[string]uuid.UUID{}
	for kind := range want {
		ids[kind] = enqueue(t, pool, tenant, kind, kind+"@customer.example.com", clk.Now())
	}
	if err := n.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages, want %d", len(msgs), len(want))
	}
	for _, m := range msgs {
		if len(m.To) != 1 {
			t.Fatalf("recipients %v", m.To)
		}
		kind := strings.TrimSuffix(m.To[0], "@customer.example.com")
		w, ok := want[kind]
		if !ok {
			t.Fatalf("unexpected recipient %s", m.To[0])
		}
		if m.From != "alerts@hookline.example.com" {
			t.Errorf("%s: envelope from %q", kind, m.From)
		}
		checkStepMessage(t, kind, m, ids[kind], w.subject, w.says)
		if r := readRow(t, pool, ids[kind]); r.SentAt == nil || r.Attempts != 1 || r.LastError != "" {
			t.Errorf("%s: row after sending %+v", kind, r)
		}
	}
	// Sent rows are not sent again.
	if err := n.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.Messages()); got != len(want) {
		t.Errorf("a second run sent %d more", got-len(want))
	}
}

// checkStepMessage checks one step's email: its subject, headers, what both parts say, and that neither
// shows a secret.
func checkStepMessage(t *testing.T, kind string, m received, id uuid.UUID, subject string, says []string) {
	t.Helper()
	p := parse(t, m.Data)
	if got := subjectOf(t, p); got != subject {
		t.Errorf("%s: subject %q, want %q", kind, got, subject)
	}
	if got := p.Header.Get("To"); !strings.Contains(got, m.To[0]) {
		t.Errorf("%s: To %q", kind, got)
	}
	if got := p.Header.Get("Message-Id"); got != "<"+id.String()+"@hookline.example.com>" {
		t.Errorf("%s: Message-ID %q, want one made from the row id", kind, got)
	}
	if p.Header.Get("Auto-Submitted") != "auto-generated" {
		t.Errorf("%s: no Auto-Submitted header", kind)
	}
	for part, body := range map[string]string{"text": p.Text, "html": p.HTML} {
		for _, s := range append(says, "https://hookline.example.com/subscriptions/abc", "https://hooks.example.com/in/orders?…") {
			if !strings.Contains(body, s) {
				t.Errorf("%s %s part does not say %q:\n%s", kind, part, s, body)
			}
		}
		for _, secret := range []string{endpointToken, payloadText, "user:pw", "whsec_", "PRIVATE KEY", "MIGHAgEAMBMG"} {
			if strings.Contains(body, secret) || strings.Contains(string(m.Data), secret) {
				t.Errorf("%s %s part shows %q", kind, part, secret)
			}
		}
	}
	if !strings.Contains(p.HTML, `href="https://hookline.example.com/subscriptions/abc"`) {
		t.Errorf("%s: the HTML part has no link:\n%s", kind, p.HTML)
	}
}

// A 4xx from the server schedules a retry a minute later (counted, the error kept); the next due run sends
// it. Delays double, and after MaxAttempts the message is given up with the reason.
func TestRetriesAfterTemporaryFailureThenGivesUp(t *testing.T) {
	t.Parallel()
	pool := connect(t, ownDatabase(t))
	tenant := fresh(t, pool)
	srv := startSMTP(t, serverOpts{})
	clk := &clock{t: time.Now()}
	n := New(pool, Options{SMTP: smtpFor(srv, ""), Now: clk.Now, Log: quietLog(t), SendTimeout: 10 * time.Second})
	ctx := context.Background()

	id := enqueue(t, pool, tenant, incidents.KindOpened, "ops@customer.example.com", clk.Now())
	srv.FailNextData(1)
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	r := readRow(t, pool, id)
	if r.SentAt != nil || r.Attempts != 1 || !strings.Contains(r.LastError, "451") {
		t.Fatalf("after a 451: %+v", r)
	}
	var next time.Time
	if err := pool.QueryRow(ctx, "SELECT next_attempt_at FROM notifications WHERE id = $1", id).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if d := next.Sub(clk.Now()); d < 59*time.Second || d > 61*time.Second {
		t.Errorf("first retry in %s, want 1m", d)
	}
	// Not due yet: nothing happens.
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(srv.Messages()) != 0 || readRow(t, pool, id).Attempts != 1 {
		t.Fatal("retried before it was due")
	}
	clk.Add(61 * time.Second)
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if r := readRow(t, pool, id); len(srv.Messages()) != 1 || r.SentAt == nil || r.Attempts != 2 || r.LastError != "" {
		t.Fatalf("after the retry: %d messages, row %+v", len(srv.Messages()), r)
	}

	// A server that always refuses: 1 m, 2 m, then given up at the third attempt.
	n = New(pool, Options{SMTP: smtpFor(srv, ""), Now: clk.Now, Log: quietLog(t), MaxAttempts: 3, SendTimeout: 10 * time.Second})
	id = enqueue(t, pool, tenant, incidents.KindDay, "ops@customer.example.com", clk.Now())
	srv.FailNextData(100)
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 0} {
		if err := n.Run(ctx); err != nil {
			t.Fatal(err)
		}
		r := readRow(t, pool, id)
		if r.Attempts != i+1 {
			t.Fatalf("attempt %d: %+v", i+1, r)
		}
		if wait == 0 {
			if r.Next != "infinity" || !strings.Contains(r.LastError, "gave up after 3 attempts") || r.SentAt != nil {
				t.Fatalf("not given up: %+v", r)
			}
			break
		}
		clk.Add(wait - time.Second)
		if err := n.Run(ctx); err != nil { // a second early: not due
			t.Fatal(err)
		}
		if readRow(t, pool, id).Attempts != i+1 {
			t.Fatalf("attempt %d retried before %s", i+1, wait)
		}
		clk.Add(time.Second)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	n := New(nil, Options{})
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute,
		32 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		if got := n.backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := truncate(strings.Repeat("é", 600), 1024); len(got) != 1024 {
		t.Errorf("truncate: %d bytes", len(got))
	}
	if got := truncate("aé", 2); got != "a" {
		t.Errorf("truncate cut a rune: %q", got)
	}
}

// Without HOOKLINE_SMTP_URL, due messages are set aside with the reason instead of piling up.
func TestWithoutSMTPMessagesAreSetAside(t *testing.T) {
	t.Parallel()
	pool := connect(t, ownDatabase(t))
	tenant := fresh(t, pool)
	clk := &clock{t: time.Now()}
	id := enqueue(t, pool, tenant, incidents.KindOpened, "ops@customer.example.com", clk.Now())
	later := enqueue(t, pool, tenant, incidents.KindOpened, "ops@customer.example.com", clk.Now().Add(time.Hour))
	n := New(pool, Options{Now: clk.Now, Log: quietLog(t)})
	if err := n.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := readRow(t, pool, id); r.Next != "infinity" || r.LastError != NoSMTP || r.SentAt != nil {
		t.Errorf("due row: %+v", r)
	}
	if r := readRow(t, pool, later); r.Next == "infinity" {
		t.Errorf("a row not yet due was set aside: %+v", r)
	}
	// Old finished rows are pruned.
	n = New(pool, Options{Now: func() time.Time { return clk.Now().Add(31 * 24 * time.Hour) }, Log: quietLog(t)})
	if _, err := pool.Exec(context.Background(), "UPDATE notifications SET created_at = now() - interval '31 days' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if err := n.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM notifications WHERE id = $1", id).Scan(&left); err != nil || left != 0 {
		t.Errorf("old set-aside row not pruned: %d (%v)", left, err)
	}
}

// smtp:// uses STARTTLS when the server offers it and sends in clear when it does not; tls=required then
// refuses to send; smtps:// is TLS from the start; a user authenticates (over TLS only).
func TestTLSModes(t *testing.T) {
	t.Parallel()
	pool := connect(t, ownDatabase(t))
	cert, roots := testCert(t)
	trust := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	for _, tc := range []struct {
		name     string
		server   serverOpts
		url      func(s *smtpServer) *smtpurl.SMTP
		wantSent bool
		wantTLS  bool
		wantUser string
		wantErr  string
	}{
		{name: "starttls offered", server: serverOpts{startTLS: true, cert: cert},
			url: func(s *smtpServer) *smtpurl.SMTP { return smtpFor(s, "") }, wantSent: true, wantTLS: true},
		{name: "no starttls, opportunistic", server: serverOpts{},
			url: func(s *smtpServer) *smtpurl.SMTP { return smtpFor(s, "") }, wantSent: true},
		{name: "no starttls, tls=required", server: serverOpts{},
			url: func(s *smtpServer) *smtpurl.SMTP { return smtpFor(s, "&tls=required") }, wantErr: "STARTTLS"},
		{name: "starttls, tls=required, auth", server: serverOpts{startTLS: true, cert: cert, user: "hook", pass: "s3cret"},
			url: func(s *smtpServer) *smtpurl.SMTP {
				c := smtpFor(s, "&tls=required")
				c.Username, c.Password = "hook", "s3cret"
				return c
			}, wantSent: true, wantTLS: true, wantUser: "hook"},
		{name: "smtps", server: serverOpts{implicit: true, cert: cert},
			url: func(s *smtpServer) *smtpurl.SMTP {
				c := smtpFor(s, "")
				c.ImplicitTLS = true
				return c
			}, wantSent: true, wantTLS: true},
		{name: "untrusted certificate", server: serverOpts{startTLS: true, cert: cert},
			url: func(s *smtpServer) *smtpurl.SMTP { return smtpFor(s, "&tls=required") }, wantErr: "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := fresh(t, pool)
			srv := startSMTP(t, tc.server)
			o := Options{SMTP: tc.url(srv), Log: quietLog(t), SendTimeout: 10 * time.Second, TLSConfig: trust}
			if tc.name == "untrusted certificate" {
				o.TLSConfig = nil // system roots: the test certificate is not among them
			}
			id := enqueue(t, pool, tenant, incidents.KindOpened, "ops@customer.example.com", time.Now())
			if err := New(pool, o).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			msgs := srv.Messages()
			r := readRow(t, pool, id)
			if !tc.wantSent {
				if len(msgs) != 0 || r.SentAt != nil || !strings.Contains(r.LastError, tc.wantErr) {
					t.Fatalf("want not sent with an error about %s: %d messages, row %+v", tc.wantErr, len(msgs), r)
				}
				return
			}
			if len(msgs) != 1 || r.SentAt == nil {
				t.Fatalf("want sent: %d messages, row %+v", len(msgs), r)
			}
			if msgs[0].TLS != tc.wantTLS || msgs[0].User != tc.wantUser {
				t.Errorf("tls %v user %q, want %v %q", msgs[0].TLS, msgs[0].User, tc.wantTLS, tc.wantUser)
			}
		})
	}
}

// A mail server that accepts the connection and then says nothing costs one SendTimeout, and the message
// is retried later: sending never hangs.
func TestHangingServerTimesOut(t *testing.T) {
	t.Parallel()
	pool := connect(t, ownDatabase(t))
	tenant := fresh(t, pool)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, silent
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	c, err := smtpurl.Parse("smtp://" + ln.Addr().String() + "?from=alerts@hookline.example.com")
	if err != nil {
		t.Fatal(err)
	}
	id := enqueue(t, pool, tenant, incidents.KindOpened, "ops@customer.example.com", time.Now())
	start := time.Now()
	if err := New(pool, Options{SMTP: c, Log: quietLog(t), SendTimeout: time.Second}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a silent server held the run for %s", d)
	}
	if r := readRow(t, pool, id); r.SentAt != nil || r.Attempts != 1 || r.LastError == "" || r.Next == "infinity" {
		t.Errorf("want a retry scheduled: %+v", r)
	}
}

// Several notifiers at once, on separate pools like separate processes, send each message exactly once.
func TestConcurrentRunsSendEachOnce(t *testing.T) {
	t.Parallel()
	own := ownDatabase(t)
	pool := connect(t, own)
	tenant := fresh(t, pool)
	srv := startSMTP(t, serverOpts{})
	const total = 40
	ids := map[string]bool{}
	for i := range total {
		id := enqueue(t, pool, tenant, incidents.KindOpened, fmt.Sprintf("u%d@customer.example.com", i), time.Now())
		ids["<"+id.String()+"@hookline.example.com>"] = true
	}
	var wg sync.WaitGroup
	for range 2 {
		p := connect(t, own)
		n := New(p, Options{SMTP: smtpFor(srv, ""), Log: quietLog(t), Batch: 3, SendTimeout: 10 * time.Second})
		for range 2 {
			wg.Go(func() {
				for range 5 {
					if err := n.Run(context.Background()); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	msgs := srv.Messages()
	seen := map[string]int{}
	for _, m := range msgs {
		seen[parse(t, m.Data).Header.Get("Message-Id")]++
	}
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("%s sent %d times", id, seen[id])
		}
	}
	if len(msgs) != total {
		t.Errorf("%d messages for %d rows", len(msgs), total)
	}
	var unsent int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM notifications WHERE sent_at IS NULL").Scan(&unsent); err != nil || unsent != 0 {
		t.Errorf("%d rows unsent (%v)", unsent, err)
	}
}

// Through the real incidents flow: a subscription failing for longer than HOOKLINE_INCIDENT_AFTER opens an
// incident whose step is queued for every user of the tenant by incidents.Service.Check, and the notifier
// sends those rows; a 2xx (failing_since cleared) ends it and the recovery is emailed too.
func TestIncidentStepsFromTheIncidentsService(t *testing.T) {
	t.Parallel()
	pool := connect(t, ownDatabase(t))
	tenant := fresh(t, pool)
	ctx := context.Background()
	for _, email := range []string{"alice@customer.example.com", "bob@customer.example.com"} {
		if _, err := pool.Exec(ctx, "INSERT INTO users (tenant_id, email, password_hash) VALUES ($1, $2, 'x')", tenant, email); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	var sub uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO subscriptions (tenant_id, url, description, failing_since)
		VALUES ($1, 'https://hooks.example.com/in?sig=`+endpointToken+`', 'Billing', $2) RETURNING id`,
		tenant, now.Add(-2*time.Hour)).Scan(&sub); err != nil {
		t.Fatal(err)
	}
	inc := incidents.New(pool, incidents.Options{After: time.Hour, PublicURL: "https://hookline.example.com", Log: quietLog(t)})
	if err := inc.Check(ctx); err != nil {
		t.Fatal(err)
	}
	srv := startSMTP(t, serverOpts{})
	n := New(pool, Options{SMTP: smtpFor(srv, ""), Log: quietLog(t), SendTimeout: 10 * time.Second})
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(wantSubject string, wantBody ...string) {
		t.Helper()
		msgs := srv.Messages()
		if len(msgs) != 2 {
			t.Fatalf("%d messages, want one per user", len(msgs))
		}
		var to []string
		for _, m := range msgs {
			to = append(to, m.To...)
			p := parse(t, m.Data)
			if got := subjectOf(t, p); got != wantSubject {
				t.Errorf("subject %q, want %q", got, wantSubject)
			}
			for _, s := range append(wantBody, "https://hookline.example.com/subscriptions/"+sub.String()) {
				if !strings.Contains(p.Text, s) || !strings.Contains(p.HTML, s) {
					t.Errorf("a part does not say %q:\n%s", s, p.Text)
				}
			}
			if strings.Contains(string(m.Data), endpointToken) {
				t.Error("the endpoint's query token is in the email")
			}
		}
		if strings.Join(to, ",") != "alice@customer.example.com,bob@customer.example.com" &&
			strings.Join(to, ",") != "bob@customer.example.com,alice@customer.example.com" {
			t.Errorf("recipients %v", to)
		}
	}
	check("Webhook endpoint failing: Billing", "has failed since "+when(now.Add(-2*time.Hour)), "No deliveries are waiting")

	if _, err := pool.Exec(ctx, "UPDATE subscriptions SET failing_since = NULL WHERE id = $1", sub); err != nil {
		t.Fatal(err)
	}
	if err := inc.Check(ctx); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	srv.msgs = nil
	srv.mu.Unlock()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	check("Webhook endpoint recovered: Billing", "answered successfully", "No deliveries were waiting")
}
