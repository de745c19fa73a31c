package history_test

import (
	"context"
	"encoding/binary"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "history", func(u string) { dbURL = u }) }

// newDatabase is a database of the test's own: the partitions it makes are seen by every connection.
func newDatabase(t *testing.T) (*pgxpool.Pool, *testdb.Statements) {
	t.Helper()
	url, drop, err := testdb.Create(t.Context(), "history_"+strings.ToLower(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	tr := testdb.RecordStatements("GetDelivery", "GetEvent", "ListAttempts", "GetDeliveryDetail")
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, tr
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// idAt is a UUIDv7 of time t, as uuid.NewV7 would make it then.
func idAt(t time.Time) uuid.UUID {
	id := uuid.New()
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = 0x70 | id[6]&0x0f
	return id
}

type fixture struct {
	tenant, subscription uuid.UUID
}

func newFixture(t *testing.T, pool *pgxpool.Pool) fixture {
	t.Helper()
	var f fixture
	if err := pool.QueryRow(t.Context(), `INSERT INTO tenants (name) VALUES ('history') RETURNING id`).Scan(&f.tenant); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(t.Context(), `INSERT INTO subscriptions (tenant_id, url) VALUES ($1, 'https://example.com/h') RETURNING id`,
		f.tenant).Scan(&f.subscription); err != nil {
		t.Fatal(err)
	}
	return f
}

// store writes an event made at, with one delivered delivery and its attempt, as if all happened at at.
func (f fixture) store(ctx context.Context, pool *pgxpool.Pool, at time.Time) (event, delivery uuid.UUID, err error) {
	event, delivery = idAt(at), idAt(at)
	_, err = pool.Exec(ctx, `
		WITH e AS (INSERT INTO events (id, tenant_id, event_type, body, created_at) VALUES ($1, $3, 'order.created', '{}', $5)),
		     d AS (INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, give_up_at,
		                                          created_at, last_attempt_at, total_attempts, attempt_count)
		           VALUES ($2, $3, $1, $4, 'order.created', 'delivered', $5, $5, $5, 1, 1))
		INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome,
		                              request_url, request_headers)
		VALUES ($2, $3, $4, 1, $5, 10, 200, 'delivered', 'https://example.com/h', '{}')`,
		event, delivery, f.tenant, f.subscription, at)
	return event, delivery, err
}

// TestPartitionsAreMadeAheadAsTheClockMoves moves the clock past the partitions made so far: a row of that
// time is refused (there is no default partition) until the leader's Make has run, and after every Make
// each history table has partitions at least three intervals past the clock.
func TestPartitionsAreMadeAheadAsTheClockMoves(t *testing.T) {
	t.Parallel()
	pool, _ := newDatabase(t)
	f := newFixture(t, pool)
	for _, interval := range []time.Duration{24 * time.Hour, 6 * time.Hour} {
		c := &clock{now: time.Now()}
		parts := history.New(pool, history.Options{Interval: interval, Now: c.Now})
		if _, err := parts.Make(t.Context()); err != nil {
			t.Fatal(err)
		}
		list, err := parts.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		c.Add(history.MadeUntil(list).Sub(c.Now()) + time.Minute) // past the newest partition
		if _, _, err := f.store(t.Context(), pool, c.Now()); err == nil || !strings.Contains(err.Error(), "no partition") {
			t.Fatalf("interval %s: a row past the partitions made was stored (err %v); want it refused", interval, err)
		}
		for step := 0; step < 12; step++ {
			if _, err := parts.Make(t.Context()); err != nil {
				t.Fatal(err)
			}
			list, err := parts.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if ahead := history.MadeUntil(list).Sub(c.Now()); ahead < history.Ahead*interval {
				t.Fatalf("interval %s, step %d: partitions made %s ahead of the clock, want at least %s", interval, step, ahead, history.Ahead*interval)
			}
			if _, _, err := f.store(t.Context(), pool, c.Now()); err != nil {
				t.Fatalf("interval %s, step %d: storing a row of now: %v", interval, step, err)
			}
			c.Add(interval * 7 / 5)
		}
	}
}

// TestLookupsByIDReadOnePartition: a delivery, its event and its attempts found by id read the partition of
// the id's time (a delivery also the queue's, where it would be while waiting), whatever else is stored.
func TestLookupsByIDReadOnePartition(t *testing.T) {
	t.Parallel()
	pool, tr := newDatabase(t)
	f := newFixture(t, pool)
	c := &clock{now: time.Now()}
	parts := history.New(pool, history.Options{Interval: 24 * time.Hour, Now: c.Now})
	if _, err := parts.Make(t.Context()); err != nil {
		t.Fatal(err)
	}
	var event, delivery uuid.UUID
	for day := range 3 { // one row in each of three partitions; the middle one is looked up
		e, d, err := f.store(t.Context(), pool, c.Now().Add(time.Duration(day)*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if day == 1 {
			event, delivery = e, d
		}
	}
	want := "_p" + c.Now().Add(24*time.Hour).UTC().Format("20060102") + "_0000"
	q := db.New(pool)
	if _, err := q.GetDelivery(t.Context(), db.GetDeliveryParams{ID: delivery, TenantID: f.tenant}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.GetEvent(t.Context(), db.GetEventParams{ID: event, TenantID: f.tenant}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ListAttempts(t.Context(), db.ListAttemptsParams{DeliveryID: delivery, TenantID: f.tenant}); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for name, read := range map[string][]string{
		"GetDelivery":  {"webhook_deliveries" + want, "webhook_deliveries_queue"},
		"GetEvent":     {"events" + want},
		"ListAttempts": {"webhook_attempts" + want},
	} {
		sql, args := tr.Last(t, name)
		plan := testdb.Explain(t, conn.Conn(), sql, args...)
		if got := relationsRead(plan); !slices.Equal(got, read) {
			t.Errorf("%s reads %v, want only %v:\n%s", name, got, read, plan)
		}
	}
}

var scanOn = regexp.MustCompile(`(?:Seq Scan|Index Scan using \S+|Index Only Scan using \S+|Bitmap Heap Scan) on (\S+)`)

// relationsRead lists, sorted, the tables a text plan scans.
func relationsRead(plan string) []string {
	var read []string
	for _, m := range scanOn.FindAllStringSubmatch(plan, -1) {
		if !slices.Contains(read, m[1]) {
			read = append(read, m[1])
		}
	}
	slices.Sort(read)
	return read
}

// TestUpkeepAnalyzesWhatChanged: a time partition that took thousands of rows since its last ANALYZE is
// listed for one (its statistics would still say it is empty, and every connection's cached plans with
// them), and the leader's upkeep analyzes it, after which it is no longer listed.
func TestUpkeepAnalyzesWhatChanged(t *testing.T) {
	t.Parallel()
	pool, _ := newDatabase(t)
	f := newFixture(t, pool)
	if _, err := pool.Exec(t.Context(), `INSERT INTO events (tenant_id, event_type, body) SELECT $1, 'order.created', '{}' FROM generate_series(1, 5000)`,
		f.tenant); err != nil {
		t.Fatal(err)
	}
	var today string // the partition the rows went to (by their ids' time)
	if err := pool.QueryRow(t.Context(), `SELECT tableoid::regclass::text FROM events LIMIT 1`).Scan(&today); err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		names, err := db.New(pool).HistoryTablesToAnalyze(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(names, today)
	}
	// PostgreSQL's counters take a moment (up to a second) to reach what other sessions read.
	deadline := time.Now().Add(30 * time.Second)
	for !listed() {
		if time.Now().After(deadline) {
			t.Fatalf("%s, 5,000 rows since its last ANALYZE, is not listed for one", today)
		}
		<-time.After(50 * time.Millisecond)
	}
	if err := history.Upkeep(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	var tuples float64
	if err := pool.QueryRow(t.Context(), `SELECT reltuples FROM pg_class WHERE relname = $1`, today).Scan(&tuples); err != nil || tuples != 5000 {
		t.Fatalf("after the upkeep %s's statistics say %v rows (%v), want 5000", today, tuples, err)
	}
	if listed() {
		t.Errorf("%s is still listed for an ANALYZE after the upkeep", today)
	}
}
