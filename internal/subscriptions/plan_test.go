package subscriptions_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// healthTracer records the SQL and arguments of the health queries a pool ran, by sqlc name.
type healthTracer struct {
	mu   sync.Mutex
	sql  map[string]string
	args map[string][]any
}

func (c *healthTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	for _, name := range []string{"AttemptSeriesBySubscription", "DeliveryOutcomesBySubscription", "AttemptStatsBySubscription"} {
		if strings.Contains(d.SQL, "-- name: "+name+" ") {
			c.mu.Lock()
			c.sql[name], c.args[name] = d.SQL, d.Args
			c.mu.Unlock()
		}
	}
	return ctx
}

func (c *healthTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestHealthQueriesUseIndexes: the health panel's queries read index ranges bounded by the range and the
// subscription (attempt_minutes_pkey, webhook_attempts_sub_started_idx, webhook_deliveries_sub_created_idx),
// never a whole table: with sequential scans priced out, a query no index can serve would still show one.
func TestHealthQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan" // as the server's pool
	cfg.AfterConnect = pgxuuid.AfterConnect
	tr := &healthTracer{sql: map[string]string{}, args: map[string][]any{}}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	now := time.Now().UTC()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "health-plans")
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, func() time.Time { return now }, true)
	url := "https://example.com/hook"
	sub, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	ids := []uuid.UUID{sub.ID}
	if _, err := svc.HealthSince(ctx, tn.ID, []subscriptions.Subscription{sub}, now.Add(-7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SeriesOf(ctx, tn.ID, ids, subscriptions.Range7d); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.OutcomesSince(ctx, tn.ID, ids, now.Add(-7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for name, indexes := range map[string][]string{
		"AttemptSeriesBySubscription": {"attempt_minutes_pkey"},
		// the whole minutes, the attempts of the minutes the window cuts through, and the latency sample
		"AttemptStatsBySubscription":     {"attempt_minutes_pkey", "webhook_attempts_sub_started_idx"},
		"DeliveryOutcomesBySubscription": {"webhook_deliveries_sub_created_idx"},
	} {
		tr.mu.Lock()
		sql, args := tr.sql[name], tr.args[name]
		tr.mu.Unlock()
		if sql == "" {
			t.Fatalf("the tracer saw no %s", name)
		}
		rows, err := conn.Query(ctx, "EXPLAIN "+sql, args...)
		if err != nil {
			t.Fatalf("explain %s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		text := strings.Join(plan, "\n")
		for _, index := range indexes {
			if !strings.Contains(text, index) {
				t.Errorf("%s does not read %s:\n%s", name, index, text)
			}
		}
		if strings.Contains(text, "Seq Scan on") {
			t.Errorf("%s reads a whole table:\n%s", name, text)
		}
	}
}
