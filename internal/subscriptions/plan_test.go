package subscriptions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestHealthQueriesUseIndexes: the health panel's queries read index ranges bounded by the range and the
// subscription (attempt_minutes_pkey, webhook_attempts_sub_started_idx),
// never a whole table: with sequential scans priced out, a query no index can serve would still show one.
func TestHealthQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan" // as the server's pool
	cfg.AfterConnect = pgxuuid.AfterConnect
	tr := testdb.RecordStatements("AttemptSeriesBySubscription", "AttemptStatsBySubscription")
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
		"AttemptStatsBySubscription": {"attempt_minutes_pkey", "_sub_started_idx"}, // on each partition of the attempts
	} {
		sql, args := tr.Last(t, name)
		text := testdb.Explain(t, conn.Conn(), sql, args...)
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
