package retention_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/retention"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "retention", func(u string) { dbURL = u }) }

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

const (
	keepDelivered = 720 * time.Hour
	keepDead      = 2160 * time.Hour
)

type env struct {
	t      testing.TB
	ctx    context.Context
	pool   *pgxpool.Pool
	now    time.Time
	tenant uuid.UUID
	sub    uuid.UUID
}

// setup makes a database of the test's own (a sweep deletes what is old in the whole database, and the
// tests count what is left), with a tenant and one subscription.
func setup(t testing.TB) *env {
	t.Helper()
	ctx := t.Context()
	own, drop, err := testdb.Create(ctx, "retention")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	pool, err := pgxuuid.NewPool(ctx, own)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e := &env{t: t, ctx: ctx, pool: pool, now: time.Now().UTC().Truncate(time.Microsecond)}
	e.exec("TRUNCATE tenants, replays, sessions, events, webhook_deliveries, webhook_attempts, event_idempotency CASCADE")
	if err := pool.QueryRow(ctx, "INSERT INTO tenants (name) VALUES ('acme') RETURNING id").Scan(&e.tenant); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO subscriptions (tenant_id, url) VALUES ($1, 'http://127.0.0.1:1/') RETURNING id`,
		e.tenant).Scan(&e.sub); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// idAt is a UUIDv7 made at t, as the publisher would have made it then.
func idAt(t time.Time) uuid.UUID {
	u := retention.UUIDv7Floor(t)
	_, _ = rand.Read(u[6:])
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return u
}

// event stores an event published at t.
func (e *env) event(t time.Time) uuid.UUID {
	e.t.Helper()
	id := idAt(t)
	e.exec(`INSERT INTO events (id, tenant_id, event_type, body, created_at) VALUES ($1, $2, 'order.created', '{"n":1}', $3)`, id, e.tenant, t)
	return id
}

// delivery stores a delivery of event in state, whose decisive time (delivered: last attempt, dead:
// dead_at, pending: next attempt) is at, with one attempt row.
func (e *env) delivery(event uuid.UUID, state string, at time.Time, discarded bool) uuid.UUID {
	e.t.Helper()
	var id uuid.UUID
	var discardedAt *time.Time
	if discarded {
		discardedAt = &at
	}
	if err := e.pool.QueryRow(e.ctx, `
		INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at,
			last_attempt_at, dead_at, discarded_at, lease_expires_at, lease_id, total_attempts, created_at, updated_at)
		VALUES ($7, $1, $2, $3, 'order.created', $4, $5, $5::timestamptz + interval '72 hours', $5,
			CASE WHEN $4 IN ('failed', 'expired') THEN $5::timestamptz END, $6,
			CASE WHEN $4 = 'in_flight' THEN $5::timestamptz END, CASE WHEN $4 = 'in_flight' THEN gen_random_uuid() END, 1, $5, $5)
		RETURNING id`, e.tenant, event, e.sub, state, at, discardedAt, idAt(at)).Scan(&id); err != nil {
		e.t.Fatalf("insert %s delivery: %v", state, err)
	}
	e.exec(`INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome, request_url, request_headers)
		VALUES ($1, $2, $3, 1, $4, 10, 500, 'retry', 'http://127.0.0.1:1/', '{}')`, id, e.tenant, e.sub, at)
	return id
}

func (e *env) exists(table string, id uuid.UUID) bool {
	e.t.Helper()
	return e.count("SELECT count(*) FROM "+table+" WHERE id = $1", id) == 1
}

func (e *env) sweeper(o retention.Options) *retention.Sweeper {
	if o.Delivered == 0 {
		o.Delivered = keepDelivered
	}
	if o.Dead == 0 {
		o.Dead = keepDead
	}
	if o.Now == nil {
		o.Now = func() time.Time { return e.now }
	}
	if o.Pause == 0 {
		o.Pause = time.Millisecond
	}
	o.Logger = quietLog
	return retention.New(e.pool, o)
}

func (e *env) sweep(s *retention.Sweeper) retention.Result {
	e.t.Helper()
	res, err := s.Sweep(e.ctx)
	if err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
	return res
}

// Each retention deletes rows just past it and keeps rows just inside it, with their attempts; events go
// when their last delivery goes or when they never had one, and queued rows are never touched.
func TestRetentionBoundaries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	second := time.Second
	oldDelivered, newDelivered := e.now.Add(-keepDelivered-second), e.now.Add(-keepDelivered+second)
	oldDead, newDead := e.now.Add(-keepDead-second), e.now.Add(-keepDead+second)
	ancient := e.now.Add(-keepDead - 24*time.Hour)

	evGone := e.event(oldDelivered)
	goneDelivered := e.delivery(evGone, "delivered", oldDelivered, false)
	evKept := e.event(newDelivered)
	keptDelivered := e.delivery(evKept, "delivered", newDelivered, false)

	evFailed, evExpired := e.event(oldDead), e.event(oldDead)
	goneFailed := e.delivery(evFailed, "failed", oldDead, false)
	goneDiscarded := e.delivery(evExpired, "expired", oldDead, true)
	evDeadKept := e.event(newDead)
	keptFailed := e.delivery(evDeadKept, "failed", newDead, false)
	// A dead row past the delivered retention but inside the dead one stays.
	keptDeadOld := e.delivery(evDeadKept, "expired", oldDelivered, true)

	// An event with an old delivered delivery and a queued one stays, as do the queued rows, however old.
	evShared := e.event(ancient)
	goneShared := e.delivery(evShared, "delivered", ancient, false)
	pending := e.delivery(evShared, "pending", ancient, false)
	inFlight := e.delivery(evShared, "in_flight", ancient, false)

	// Events no subscription matched: older than the smaller retention go.
	orphanOld, orphanNew := e.event(oldDelivered), e.event(newDelivered)

	res := e.sweep(e.sweeper(retention.Options{}))
	if res.Delivered != 2 || res.Dead != 2 || res.Events != 4 || res.Archived != 0 || res.Skipped {
		t.Errorf("result %+v, want 2 delivered, 2 dead, 4 events", res)
	}
	for _, id := range []uuid.UUID{goneDelivered, goneFailed, goneDiscarded, goneShared} {
		if e.exists("webhook_deliveries", id) || e.count("SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1", id) != 0 {
			t.Errorf("delivery %s or its attempts kept", id)
		}
	}
	for _, id := range []uuid.UUID{keptDelivered, keptFailed, keptDeadOld, pending, inFlight} {
		if !e.exists("webhook_deliveries", id) || e.count("SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1", id) != 1 {
			t.Errorf("delivery %s or its attempt deleted", id)
		}
	}
	for _, id := range []uuid.UUID{evGone, evFailed, evExpired, orphanOld} {
		if e.exists("events", id) {
			t.Errorf("event %s kept", id)
		}
	}
	for _, id := range []uuid.UUID{evKept, evDeadKept, evShared, orphanNew} {
		if !e.exists("events", id) {
			t.Errorf("event %s deleted", id)
		}
	}

	// A second sweep finds nothing, and the time passing moves the boundaries.
	if res := e.sweep(e.sweeper(retention.Options{})); res.Delivered+res.Dead+res.Events != 0 {
		t.Errorf("second sweep deleted %+v", res)
	}
	e.now = e.now.Add(2 * second)
	if res := e.sweep(e.sweeper(retention.Options{})); res.Delivered != 1 || res.Dead != 1 || res.Events != 2 {
		t.Errorf("two seconds later: %+v, want the rows that were just inside deleted (1 delivered, 1 dead, 2 events)", res)
	}
}

// insertMany adds n deliveries of one new event in state at time at, with an attempt each.
func (e *env) insertMany(n int, state string, at time.Time) uuid.UUID {
	e.t.Helper()
	ev := e.event(at)
	// ids of time at (its partition), as uuid_v7() made them then
	e.exec(`INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at,
			last_attempt_at, dead_at, total_attempts, created_at, updated_at)
		SELECT encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(uuid_send(uuid_v7_floor($5)) FROM 1 FOR 6) FROM 1 FOR 6), 'hex')::uuid,
			$1, $2, $3, 'order.created', $4, $5, $5, $5::timestamptz - g * interval '1 microsecond',
			CASE WHEN $4 IN ('failed', 'expired') THEN $5::timestamptz - g * interval '1 microsecond' END, 1, $5, $5
		FROM generate_series(1, $6::int) g`, e.tenant, ev, e.sub, state, at, n)
	e.exec(`INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome, request_url, request_headers)
		SELECT id, tenant_id, subscription_id, 1, $2, 10, 200, 'delivered', 'http://127.0.0.1:1/', '{}' FROM webhook_deliveries WHERE event_id = $1`, ev, at)
	return ev
}

// 2,500 rows in batches of 1,000 are all deleted (three batches, the last one short), with their attempts.
func TestRetentionBatches(t *testing.T) {
	t.Parallel()
	e := setup(t)
	old := e.now.Add(-keepDead - time.Hour)
	e.insertMany(2500, "delivered", old)
	e.insertMany(2500, "expired", old)
	keep := e.insertMany(10, "delivered", e.now)
	res := e.sweep(e.sweeper(retention.Options{BatchSize: 1000}))
	if res.Delivered != 2500 || res.Dead != 2500 || res.Events != 2 {
		t.Fatalf("result %+v, want 2500 delivered, 2500 dead, 2 events", res)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries"); n != 10 {
		t.Errorf("%d deliveries left, want 10", n)
	}
	if n := e.count("SELECT count(*) FROM webhook_attempts"); n != 10 {
		t.Errorf("%d attempts left, want 10", n)
	}
	if !e.exists("events", keep) {
		t.Error("the recent event was deleted")
	}
}

// HOOKLINE_RETENTION_RATE paces the batches: with 10 deliveries a second and batches of 10, the bucket
// (one batch deep) lets the first batch go at once and then holds each batch to a second, on the injected
// clock, which only the recorded waits move. The last, short batch of each kind ends its loop unpaced.
func TestSweepIsPacedBetweenBatches(t *testing.T) {
	t.Parallel()
	e := setup(t)
	old := e.now.Add(-keepDead - time.Hour)
	e.insertMany(45, "delivered", old)
	e.insertMany(25, "expired", old)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	s := e.sweeper(retention.Options{BatchSize: 10, Rate: 10,
		Clock: func() time.Time { return clock },
		Sleep: func(_ context.Context, d time.Duration) bool {
			waits = append(waits, d)
			clock = clock.Add(d)
			return true
		}})
	res := e.sweep(s)
	if res.Delivered != 45 || res.Dead != 25 {
		t.Fatalf("result %+v, want 45 delivered and 25 dead", res)
	}
	// Batches of 10, 10, 10, 10, 5 delivered, then 10, 10, 5 dead: a wait after each full one.
	if len(waits) != 6 {
		t.Fatalf("waits %v, want 6", waits)
	}
	// The first batch is paid from the full bucket: it waits only the pause (as long as it took). The
	// second waits for what the bucket lacked after that pause; every later one a whole second.
	// (To the microsecond: the bucket counts tokens in floating point.)
	near := func(a, b time.Duration) bool { return (a - b).Abs() < time.Microsecond }
	if waits[0] >= time.Second || !near(waits[0]+waits[1], time.Second) {
		t.Errorf("first waits %v and %v, want the pause and then the rest of a second", waits[0], waits[1])
	}
	for i, w := range waits[2:] {
		if !near(w, time.Second) {
			t.Errorf("wait %d: %v, want 1s (10 deliveries at 10 a second)", i+3, w)
		}
	}
}

// Two sweeps at once (two processes during a leadership handover) neither fail nor double-count: one
// holds the lock and sweeps, the other sees the lock taken and skips.
func TestConcurrentSweepsDoNotOverlap(t *testing.T) {
	t.Parallel()
	e := setup(t)
	old := e.now.Add(-keepDead - time.Hour)
	e.insertMany(2500, "delivered", old)
	e.insertMany(2500, "failed", old)
	dir := t.TempDir()
	var wg sync.WaitGroup
	results := make([]retention.Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		s := e.sweeper(retention.Options{BatchSize: 500, ArchiveDir: dir})
		wg.Go(func() { results[i], errs[i] = s.Sweep(e.ctx) })
	}
	wg.Wait()
	var delivered, dead, archived int64
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("sweep %d: %v", i, errs[i])
		}
		delivered, dead, archived = delivered+r.Delivered, dead+r.Dead, archived+r.Archived
	}
	if delivered != 2500 || dead != 2500 || archived != 2500 {
		t.Fatalf("together: %d delivered, %d dead, %d archived; want 2500 each (%+v)", delivered, dead, archived, results)
	}
	if got := readArchive(t, dir); len(got) != 2500 {
		t.Fatalf("archive holds %d deliveries, want 2500 (none twice)", len(got))
	}
	// The lock is released: the next sweep runs (and finds nothing).
	if res := e.sweep(e.sweeper(retention.Options{})); res.Skipped || res.Delivered+res.Dead != 0 {
		t.Fatalf("sweep after: %+v", res)
	}
}

// readArchive reads every *.jsonl.gz file in dir: gunzip, one JSON object per line.
func readArchive(t *testing.T, dir string) []map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: a line is not JSON: %v", name, err)
			}
			out = append(out, m)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
	}
	return out
}

// Dead deliveries made by the real engine (a receiver answering 400, a subscription with a custom header)
// are archived with their event and attempts, and without the header's value or the signing secret,
// before they are deleted. A directory that does not exist yet is created.
func TestArchiveDeadDeliveries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	d := e.deadDeliveries()
	sub, secret, url, events := d.sub, d.secret, d.url, d.events
	const headerValue = deadHeaderValue
	dir := filepath.Join(t.TempDir(), "not", "yet")
	// Still inside the retention: nothing archived, no file.
	if res := e.sweep(e.sweeper(retention.Options{ArchiveDir: dir})); res.Archived != 0 || res.ArchiveFile != "" {
		t.Fatalf("archived inside the retention: %+v", res)
	}
	e.now = e.now.Add(keepDead + time.Second)
	// Batches of two: the file gets two gzip members, read back as one stream.
	res := e.sweep(e.sweeper(retention.Options{ArchiveDir: dir, BatchSize: 2}))
	if res.Archived != 3 || res.Dead != 3 || res.Events != 3 {
		t.Fatalf("result %+v, want 3 archived, 3 dead, 3 events", res)
	}
	base := filepath.Base(res.ArchiveFile)
	if !strings.HasPrefix(base, "dead-"+e.now.Format("20060102-150405")+"-") || !strings.HasSuffix(base, ".jsonl.gz") {
		t.Errorf("archive file name %q", base)
	}
	raw, err := os.ReadFile(res.ArchiveFile)
	if err != nil {
		t.Fatal(err)
	}
	zr, _ := gzip.NewReader(bytes.NewReader(raw))
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, secretish := range []string{headerValue, secret, strings.TrimPrefix(secret, "whsec_")} {
		if bytes.Contains(plain, []byte(secretish)) {
			t.Errorf("the archive contains %q", secretish)
		}
	}
	recs := readArchive(t, dir)
	if len(recs) != 3 {
		t.Fatalf("%d archived lines, want 3", len(recs))
	}
	checkArchived(t, recs, events, sub.ID.String(), url)
	if n := e.count("SELECT count(*) FROM webhook_deliveries") + e.count("SELECT count(*) FROM webhook_attempts") + e.count("SELECT count(*) FROM events"); n != 0 {
		t.Errorf("%d rows left after archiving", n)
	}
	// The next sweep writes no new file.
	if res := e.sweep(e.sweeper(retention.Options{ArchiveDir: dir})); res.ArchiveFile != "" {
		t.Errorf("an empty sweep made %s", res.ArchiveFile)
	}
}

// deadHeaderValue is a custom header value of the dead deliveries' subscription: never archived.
const deadHeaderValue = "custom-header-value-never-archived"

// deadSet is three dead deliveries (the third discarded) of one subscription with a custom header.
type deadSet struct {
	sub         subscriptions.Subscription
	secret, url string
	events      []string
}

// deadDeliveries publishes three events to a subscription whose receiver answers 400, so that all three
// deliveries are dead after one attempt each, and discards the third.
func (e *env) deadDeliveries() deadSet {
	t := e.t
	t.Helper()
	const headerValue = deadHeaderValue
	var got sync.Map
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("X-Custom"), true)
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer rc.Close()
	clock := func() time.Time { return e.now }
	subs := subscriptions.NewService(e.pool, clock, true)
	url := rc.URL + "/hook"
	sub, secret, err := subs.Create(activity.System(e.ctx, "test setup"), e.tenant, subscriptions.Input{URL: &url, Headers: &map[string]string{"X-Custom": headerValue}})
	if err != nil {
		t.Fatal(err)
	}
	e.exec("DELETE FROM subscriptions WHERE id <> $1", sub.ID)
	policy := delivery.RetryPolicy{Base: time.Second, MaxDelay: time.Minute, MaxAttempts: 3, Window: time.Hour}
	pub := publish.NewPublisher(e.pool, policy, clock)
	var events []string
	for _, payload := range []string{`{"order":"ord_1"}`, `{"order":"ord_2"}`, `{"order":"ord_3"}`} {
		p, err := pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(payload)})
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, p.ID)
	}
	w := delivery.NewWorker(e.pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 5 * time.Second}), policy,
		delivery.WorkerOptions{Now: clock, Logger: quietLog})
	if n, err := w.RunOnce(e.ctx); n != 3 || err != nil {
		t.Fatalf("RunOnce: %d, %v", n, err)
	}
	if _, ok := got.Load(headerValue); !ok {
		t.Fatal("the receiver did not get the custom header: the test would prove nothing")
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE state = 'failed' AND dead_at IS NOT NULL"); n != 3 {
		t.Fatalf("%d failed deliveries, want 3", n)
	}
	e.exec("UPDATE webhook_deliveries SET discarded_at = dead_at WHERE event_id = $1", events[2])

	return deadSet{sub: sub, secret: secret, url: url, events: events}
}

// checkArchived checks the archived records: each event whole, its one attempt, the delivery's state, and
// the discarded one marked.
func checkArchived(t *testing.T, recs []map[string]any, events []string, subID, url string) {
	t.Helper()
	byEvent := map[string]map[string]any{}
	for _, r := range recs {
		ev := r["event"].(map[string]any)
		byEvent[ev["id"].(string)] = r
		body, _ := json.Marshal(ev["body"])
		if !bytes.Contains(body, []byte(`"order":"ord_`)) || ev["type"] != "order.created" || ev["created_at"] == nil {
			t.Errorf("event not archived whole: %v", ev)
		}
		atts := r["attempts"].([]any)
		if len(atts) != 1 {
			t.Fatalf("attempts %v", atts)
		}
		a := atts[0].(map[string]any)
		if a["status"] != float64(400) || a["outcome"] != "failed" || a["request_url"] != url || a["request_headers"] == nil {
			t.Errorf("attempt %v", a)
		}
		if r["state"] != "failed" || r["dead_at"] == nil || r["subscription_id"] != subID {
			t.Errorf("delivery %v", r)
		}
	}
	if r := byEvent[events[2]]; r == nil || r["discarded_at"] == nil {
		t.Errorf("the discarded delivery is missing or not marked: %v", r)
	}
}
