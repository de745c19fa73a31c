package incidents_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5/pgxpool"
)

// One shared receiver's outage fails many subscriptions at once. Their incidents' steps (opened, a day
// later, what expired, ended) and the operator's reports of their disabling and their expired deliveries
// are claimed and told Batch at a time, each batch in a transaction of its own, and one check still goes
// through all of them, each told once.
func TestIncidentStepsGoInBatches(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	e.opened()
	e.expireAndDisable()
	e.dayOn()
	e.ends()
}

// batchEnv is one tenant whose n subscriptions all fail at once, and the incident checks telling Batch
// at a time, with the size of each batch recorded.
type batchEnv struct {
	t        *testing.T
	ctx      context.Context
	pool     *pgxpool.Pool
	n, batch int
	ids      []uuid.UUID
	tn       tenants.Tenant
	operator *incidents.Operator
	inc      *incidents.Service

	clkMu sync.Mutex
	now   time.Time

	mu      sync.Mutex
	batches map[string][]int
}

// The operator's event types are published to the operator's tenant ($3); the customer's tenant is $1.
const operatorEvents = `SELECT count(*) FROM events WHERE tenant_id = $3 AND event_type = '%s'
		AND EXISTS (SELECT 1 FROM unnest($2::uuid[]) s WHERE convert_from(body, 'UTF8') LIKE '%%' || s::text || '%%') AND $1::uuid IS NOT NULL`

func newBatchEnv(t *testing.T) *batchEnv {
	t.Helper()
	e := &batchEnv{t: t, n: 7, batch: 3, batches: map[string][]int{}, now: time.Now().UTC().Truncate(time.Minute)}
	e.ctx = activity.System(context.Background(), "test setup")
	// A database of its own: incidents, the operator's tenant and its watermark are the database's.
	e.pool = ownPool(t, 4)
	subs := subscriptions.NewService(e.pool, e.clock, true)
	pub := publish.NewPublisher(e.pool, delivery.DefaultRetryPolicy, e.clock)
	opSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(opSrv.Close)
	var err error
	if e.operator, err = incidents.EnsureOperator(e.ctx, e.pool, subs, pub, opSrv.URL+"/ops", delivery.NewSecret(), nil); err != nil {
		t.Fatal(err)
	}
	if e.tn, err = tenants.NewService(e.pool, "").CreateTenant(e.ctx, "shared receiver"); err != nil {
		t.Fatal(err)
	}
	if _, err := tenants.NewService(e.pool, "").CreateUser(e.ctx, e.tn.ID, "ops@shared.example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.QueryRow(e.ctx, `WITH s AS (
			INSERT INTO subscriptions (tenant_id, url, failing_since)
			SELECT $1, 'https://shared.example.com/' || i, $2 FROM generate_series(1, $3) i RETURNING id)
		SELECT array_agg(id) FROM s`, e.tn.ID, e.now.Add(-2*time.Hour), e.n).Scan(&e.ids); err != nil {
		t.Fatal(err)
	}
	e.inc = incidents.New(e.pool, incidents.Options{After: time.Hour, Now: e.clock, Log: slog.New(slog.DiscardHandler), Operator: e.operator, Batch: e.batch})
	e.inc.SetAfterClaim(func(_ context.Context, kind string, k int) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.batches[kind] = append(e.batches[kind], k)
		return nil
	})
	return e
}

func (e *batchEnv) clock() time.Time { e.clkMu.Lock(); defer e.clkMu.Unlock(); return e.now }

func (e *batchEnv) advance(d time.Duration) {
	e.clkMu.Lock()
	defer e.clkMu.Unlock()
	e.now = e.now.Add(d)
}

// count runs a count with the tenant ($1), the subscriptions ($2) and the operator's tenant ($3).
func (e *batchEnv) count(sql string) int {
	e.t.Helper()
	var c int
	if err := e.pool.QueryRow(e.ctx, sql, e.tn.ID, e.ids, e.operator.TenantID()).Scan(&c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *batchEnv) check() {
	e.t.Helper()
	if err := e.inc.Check(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// wantBatches checks that told steps of a kind were told, none more than Batch in one transaction.
func (e *batchEnv) wantBatches(kind string, told int) {
	t := e.t
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	sum := 0
	for _, k := range e.batches[kind] {
		if k > e.batch {
			t.Errorf("%s: a transaction told %d at once, want at most %d (batches %v)", kind, k, e.batch, e.batches[kind])
		}
		sum += k
	}
	if sum < told {
		t.Errorf("%s: %d told in batches %v, want at least %d", kind, sum, e.batches[kind], told)
	}
}

func (e *batchEnv) opened() {
	t := e.t
	// The watermark starts here (first use: nothing before it is reported). Opened.
	e.check()
	if got := e.count(`SELECT count(*) FROM incidents WHERE tenant_id = $1 AND ended_at IS NULL AND subscription_id = ANY($2) AND $3::uuid IS NOT NULL`); got != e.n {
		t.Fatalf("%d incidents open, want %d", got, e.n)
	}
	e.wantBatches(incidents.KindOpened, e.n)
	if got := e.count(fmt.Sprintf(operatorEvents, incidents.EventFailing)); got != e.n {
		t.Errorf("%d subscription.failing notifications, want %d", got, e.n)
	}
}

func (e *batchEnv) expireAndDisable() {
	t := e.t
	// Their deliveries expire, then the subscriptions are disabled: both reported, a batch at a time.
	for i, id := range e.ids {
		if _, err := e.pool.Exec(e.ctx, `WITH ev AS (INSERT INTO events (tenant_id, event_type, body) VALUES ($1, 'a', '{}') RETURNING id)
			INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, give_up_at, dead_at, dead_reason)
			SELECT $1, ev.id, $2, 'a', 'expired', $3, $3, 'deadline' FROM ev`, e.tn.ID, id, e.clock().Add(time.Duration(i+1)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE subscriptions SET state = 'disabled', disabled_reason = 'failing' WHERE id = ANY($1)`, e.ids); err != nil {
		t.Fatal(err)
	}
	e.advance(2 * time.Minute)
	e.check()
	e.wantBatches(incidents.EventDisabled, e.n)
	e.wantBatches(incidents.EventExhausted, e.n)
	for _, typ := range []string{incidents.EventDisabled, incidents.EventExhausted} {
		if got := e.count(fmt.Sprintf(operatorEvents, typ)); got != e.n {
			t.Errorf("%d %s notifications, want %d (one per subscription)", got, typ, e.n)
		}
	}
	e.check() // nothing twice
	for _, typ := range []string{incidents.EventDisabled, incidents.EventExhausted} {
		if got := e.count(fmt.Sprintf(operatorEvents, typ)); got != e.n {
			t.Errorf("after another check: %d %s notifications, want %d", got, typ, e.n)
		}
	}
}

func (e *batchEnv) dayOn() {
	t := e.t
	// A day on: the 24 h step, and the summary of what expired.
	e.advance(incidents.DayAfter)
	e.check()
	e.wantBatches(incidents.KindDay, e.n)
	e.wantBatches(incidents.KindExpired, e.n)
	for _, col := range []string{"day_notified_at", "expired_notified_at"} {
		if got := e.count(`SELECT count(*) FROM incidents WHERE tenant_id = $1 AND ` + col + ` IS NOT NULL AND subscription_id = ANY($2) AND $3::uuid IS NOT NULL`); got != e.n {
			t.Errorf("%d incidents with %s, want %d", got, col, e.n)
		}
	}
}

func (e *batchEnv) ends() {
	t := e.t
	// The endpoint answers again: every incident ends.
	if _, err := e.pool.Exec(e.ctx, `UPDATE subscriptions SET failing_since = NULL WHERE id = ANY($1)`, e.ids); err != nil {
		t.Fatal(err)
	}
	e.check()
	if got := e.count(`SELECT count(*) FROM incidents WHERE tenant_id = $1 AND ended_at IS NOT NULL AND subscription_id = ANY($2) AND $3::uuid IS NOT NULL`); got != e.n {
		t.Fatalf("%d incidents ended, want %d", got, e.n)
	}
	e.wantBatches(incidents.KindEnded, e.n)
}
