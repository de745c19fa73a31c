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
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/testdb"
)

// One shared receiver's outage fails many subscriptions at once. Their incidents' steps (opened, a day
// later, what expired, ended) and the operator's reports of their disabling and their expired deliveries
// are claimed and told Batch at a time, each batch in a transaction of its own, and one check still goes
// through all of them, each told once.
func TestIncidentStepsGoInBatches(t *testing.T) {
	ctx := activity.System(context.Background(), "test setup")
	// A database of its own: incidents, the operator's tenant and its watermark are the database's.
	own, drop, err := testdb.Create(ctx, "incidents_batches")
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	pool, err := server.Connect(ctx, own, 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	now := time.Now().UTC().Truncate(time.Minute)
	var clkMu sync.Mutex
	clk := func() time.Time { clkMu.Lock(); defer clkMu.Unlock(); return now }
	advance := func(d time.Duration) { clkMu.Lock(); defer clkMu.Unlock(); now = now.Add(d) }
	subs := subscriptions.NewService(pool, clk, true)
	pub := publish.NewPublisher(pool, delivery.DefaultRetryPolicy, clk)
	opSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer opSrv.Close()
	operator, err := incidents.EnsureOperator(ctx, pool, subs, pub, opSrv.URL+"/ops", delivery.NewSecret(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "shared receiver")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tenants.NewService(pool, "").CreateUser(ctx, tn.ID, "ops@shared.example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	const n, batch = 7, 3
	var ids []uuid.UUID
	if err := pool.QueryRow(ctx, `WITH s AS (
			INSERT INTO subscriptions (tenant_id, url, failing_since)
			SELECT $1, 'https://shared.example.com/' || i, $2 FROM generate_series(1, $3) i RETURNING id)
		SELECT array_agg(id) FROM s`, tn.ID, now.Add(-2*time.Hour), n).Scan(&ids); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	batches := map[string][]int{}
	inc := incidents.New(pool, incidents.Options{After: time.Hour, Now: clk, Log: slog.New(slog.DiscardHandler), Operator: operator, Batch: batch})
	inc.SetAfterClaim(func(_ context.Context, kind string, k int) error {
		mu.Lock()
		defer mu.Unlock()
		batches[kind] = append(batches[kind], k)
		return nil
	})
	count := func(sql string) int {
		t.Helper()
		var c int
		if err := pool.QueryRow(ctx, sql, tn.ID, ids, operator.TenantID()).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	check := func() {
		t.Helper()
		if err := inc.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantBatches := func(kind string, told int) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		sum := 0
		for _, k := range batches[kind] {
			if k > batch {
				t.Errorf("%s: a transaction told %d at once, want at most %d (batches %v)", kind, k, batch, batches[kind])
			}
			sum += k
		}
		if sum < told {
			t.Errorf("%s: %d told in batches %v, want at least %d", kind, sum, batches[kind], told)
		}
	}
	// The operator's event types are published to the operator's tenant ($3); the customer's tenant is $1.
	const operatorEvents = `SELECT count(*) FROM events WHERE tenant_id = $3 AND event_type = '%s'
		AND EXISTS (SELECT 1 FROM unnest($2::uuid[]) s WHERE convert_from(body, 'UTF8') LIKE '%%' || s::text || '%%') AND $1::uuid IS NOT NULL`

	// The watermark starts here (first use: nothing before it is reported). Opened.
	check()
	if got := count(`SELECT count(*) FROM incidents WHERE tenant_id = $1 AND ended_at IS NULL AND subscription_id = ANY($2) AND $3::uuid IS NOT NULL`); got != n {
		t.Fatalf("%d incidents open, want %d", got, n)
	}
	wantBatches(incidents.KindOpened, n)
	if got := count(fmt.Sprintf(operatorEvents, incidents.EventFailing)); got != n {
		t.Errorf("%d subscription.failing notifications, want %d", got, n)
	}

	// Their deliveries expire, then the subscriptions are disabled: both reported, a batch at a time.
	for i, id := range ids {
		if _, err := pool.Exec(ctx, `WITH ev AS (INSERT INTO events (tenant_id, event_type, body) VALUES ($1, 'a', '{}') RETURNING id)
			INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, give_up_at, dead_at, dead_reason)
			SELECT $1, ev.id, $2, 'a', 'expired', $3, $3, 'deadline' FROM ev`, tn.ID, id, now.Add(time.Duration(i+1)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET state = 'disabled', disabled_reason = 'failing' WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
	advance(2 * time.Minute)
	check()
	wantBatches(incidents.EventDisabled, n)
	wantBatches(incidents.EventExhausted, n)
	for _, typ := range []string{incidents.EventDisabled, incidents.EventExhausted} {
		if got := count(fmt.Sprintf(operatorEvents, typ)); got != n {
			t.Errorf("%d %s notifications, want %d (one per subscription)", got, typ, n)
		}
	}
	check() // nothing twice
	for _, typ := range []string{incidents.EventDisabled, incidents.EventExhausted} {
		if got := count(fmt.Sprintf(operatorEvents, typ)); got != n {
			t.Errorf("after another check: %d %s notifications, want %d", got, typ, n)
		}
	}

	// A day on: the 24 h step, and the summary of what expired.
	advance(incidents.DayAfter)
	check()
	wantBatches(incidents.KindDay, n)
	wantBatches(incidents.KindExpired, n)
	for _, col := range []string{"day_notified_at", "expired_notified_at"} {
		if got := count(`SELECT count(*) FROM incidents WHERE tenant_id = $1 AND ` + col + ` IS NOT NULL AND subscription_id = ANY($2) AND $3::uuid IS NOT NULL`); got != n {
			t.Errorf("%d incidents with %s, want %d", got, col, n)
		}
	}

	// The endpoint answers again: every incident ends.
	if _, err := pool.Exec(ctx, `UPDATE subscriptions SET failing_since = NULL WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
	check()
	if got := count(`SELECT count(*) FROM incidents WHERE tenant_id = $1 AND ended_at IS NOT NULL AND subscription_id = ANY($2) AND $3::uuid IS NOT NULL`); got != n {
		t.Fatalf("%d incidents ended, want %d", got, n)
	}
	wantBatches(incidents.KindEnded, n)
}
