package tenants

import (
	"context"
	"testing"

	"github.com/hookline/hookline/internal/pgxuuid"
)

// BenchmarkOverviewAtScale: the operator overview over 20 tenants, one of which has 1,000,000 deliveries:
// 600,000 pending never tried, 100,000 retrying, 200,000 delivered and 100,000 dead, with 24 h of
// attempts. Every count is capped at OverviewCountUpTo, so the page must cost about the same as on an
// empty database: 3.6 ms here, where the first version of the query took 1.6 s (a sequential scan per
// tenant, chosen because one tenant owns every row). Setting up takes about a minute.
func BenchmarkOverviewAtScale(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxuuid.NewPool(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	for _, stmt := range []string{
		`TRUNCATE tenants, events, webhook_deliveries, webhook_attempts, event_idempotency CASCADE`,
		`INSERT INTO tenants (name) SELECT 'tenant ' || g FROM generate_series(1, 20) g`,
		`INSERT INTO subscriptions (tenant_id, url) SELECT id, 'https://example.com/' || name FROM tenants`,
		`INSERT INTO events (tenant_id, event_type, body) SELECT id, 'bench', '{}' FROM tenants WHERE name = 'tenant 1'`,
		`INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, next_attempt_at, give_up_at,
		        created_at, total_attempts, attempt_count, dead_at, dead_reason, last_attempt_at)
		 SELECT t.id, e.id, s.id, 'bench', st.state, now() + interval '1 hour', now() + interval '72 hours',
		        now() - g * interval '1 second', st.tries, st.tries,
		        CASE WHEN st.state = 'failed' THEN now() END, CASE WHEN st.state = 'failed' THEN 'permanent_status' END,
		        CASE WHEN st.tries > 0 THEN now() END
		 FROM tenants t JOIN subscriptions s ON s.tenant_id = t.id JOIN events e ON e.tenant_id = t.id,
		      generate_series(1, 1000000) g,
		      LATERAL (SELECT CASE WHEN g <= 600000 THEN 'pending' WHEN g <= 700000 THEN 'pending'
		                           WHEN g <= 900000 THEN 'delivered' ELSE 'failed' END AS state,
		                      CASE WHEN g <= 600000 THEN 0 ELSE 1 END AS tries) st
		 WHERE t.name = 'tenant 1'`,
		`INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, outcome,
		        request_url, request_headers)
		 SELECT d.id, d.tenant_id, d.subscription_id, 1, now() - interval '1 hour', 10, 'delivered', 'https://example.com', '{}'
		 FROM webhook_deliveries d WHERE d.state = 'delivered' LIMIT 50000`,
		`VACUUM ANALYZE`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			b.Fatalf("%.60s: %v", stmt, err)
		}
	}
	svc := NewService(pool, "")
	b.ResetTimer()
	for b.Loop() {
		rows, err := svc.Overview(ctx, "dead")
		if err != nil {
			b.Fatal(err)
		}
		if rows[0].Dead != OverviewCountUpTo || rows[0].Pending != OverviewCountUpTo || rows[0].Retrying != OverviewCountUpTo {
			b.Fatalf("the big tenant's counts: %+v, want each capped at %d", rows[0], OverviewCountUpTo)
		}
	}
}
