package tenants

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/pgxuuid"
)

// The attempts count adds up every subscription's attempts since the cutoff and stops at the cap once for
// the tenant, not once per subscription.
func TestOverviewCountsAttemptsAcrossSubscriptionsUpToTheCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxuuid.NewPool(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	now := time.Now().UTC()
	if _, err := pool.Exec(ctx, `
		WITH t AS (INSERT INTO tenants (name) VALUES ('overview-attempts') RETURNING id),
		s AS (INSERT INTO subscriptions (tenant_id, url) SELECT t.id, 'http://127.0.0.1:1/' || g FROM t, generate_series(1, 3) g RETURNING id, tenant_id, url),
		e AS (INSERT INTO events (tenant_id, event_type, body) SELECT id, 'x', '{}' FROM t RETURNING id, tenant_id),
		d AS (INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, give_up_at, state, attempt_count, total_attempts)
		      SELECT s.tenant_id, e.id, s.id, 'x', $1::timestamptz + interval '1 day', 'delivered', 9, 9 FROM s, e RETURNING id, tenant_id, subscription_id)
		INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome, request_url, request_headers)
		SELECT d.id, d.tenant_id, d.subscription_id, n,
		       CASE WHEN n <= (CASE WHEN s.url LIKE '%1' THEN 6 WHEN s.url LIKE '%2' THEN 5 ELSE 0 END)
		            THEN $1::timestamptz - interval '1 hour' ELSE $1::timestamptz - interval '2 days' END,
		       1, 200, 'delivered', s.url, '{}'
		FROM d JOIN s ON s.id = d.subscription_id, generate_series(1, 9) n`, now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ upTo, want int32 }{{100, 11}, {11, 11}, {8, 8}, {3, 3}} {
		rows, err := db.New(pool).TenantOverview(ctx, db.TenantOverviewParams{UpTo: tc.upTo, Since: now.Add(-24 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rows {
			if r.Name == "overview-attempts" {
				found = true
				if r.Attempts != tc.want || r.Subscriptions != 3 {
					t.Errorf("cap %d: %d attempts over %d subscriptions, want %d over 3", tc.upTo, r.Attempts, r.Subscriptions, tc.want)
				}
			}
		}
		if !found {
			t.Fatal("the tenant is not in the overview")
		}
	}
}
