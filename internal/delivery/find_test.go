package delivery_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestListByEventUsesEventIndex: one event's deliveries (the dashboard's event page and search, the API's
// ?event_id=) are found through webhook_deliveries_event_idx, not by reading the tenant's whole history,
// with the dashboard's and API's planning (every statement planned with its values).
func TestListByEventUsesEventIndex(t *testing.T) {
	e := setup(t)
	rc := newReceiver(t, nil)
	subs := make([]uuid.UUID, 3)
	for i := range subs {
		s, _ := e.subscribe(rc.URL(), subscriptions.Input{})
		if _, err := e.subs.Pause(e.ctx, e.tenant, s.ID); err != nil { // nothing is sent
			t.Fatal(err)
		}
		subs[i] = s.ID
	}
	// 20,000 events of the tenant, each delivered to the three subscriptions.
	if _, err := e.pool.Exec(e.ctx, `
		WITH ev AS (
			INSERT INTO events (tenant_id, event_type, body, created_at)
			SELECT $1, 'order.created', '{}', now() - g * interval '1 second' FROM generate_series(1, 20000) g
			RETURNING id, created_at
		)
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, give_up_at, created_at)
		SELECT $1, ev.id, s, 'order.created', 'delivered', now() + interval '1 day', ev.created_at
		FROM ev, unnest($2::uuid[]) s`, e.tenant, subs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, "ANALYZE webhook_deliveries, events"); err != nil {
		t.Fatal(err)
	}
	var event uuid.UUID
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM events WHERE tenant_id = $1 ORDER BY created_at LIMIT 1 OFFSET 10000`, e.tenant).Scan(&event); err != nil {
		t.Fatal(err)
	}

	// The dashboard's and API's pool settings (server.PlanPerCall), plus a tracer.
	tr := testdb.RecordStatements("ListDeliveries", "CountDeliveries")
	cfg := e.pool.Config()
	cfg.ConnConfig.Tracer = tr
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	svc := delivery.NewService(pool, e.policy, e.clock.Now, 3, 60)
	page, err := svc.List(e.ctx, e.tenant, delivery.Filter{EventID: &event, Limit: 100, WithTotal: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 3 || page.Total == nil || *page.Total != 3 {
		t.Fatalf("event %s: %d deliveries, total %v", event, len(page.Items), page.Total)
	}
	for _, d := range page.Items {
		if d.EventID != event {
			t.Errorf("listed a delivery of event %s", d.EventID)
		}
	}
	conn, err := pool.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, name := range []string{"ListDeliveries", "CountDeliveries"} {
		sql, args := tr.Last(t, name)
		plan := testdb.Explain(t, conn.Conn(), sql, args...)
		if !strings.Contains(plan, "webhook_deliveries_event_idx") || strings.Contains(plan, "Seq Scan on webhook_deliveries") {
			t.Errorf("%s by event does not use webhook_deliveries_event_idx:\n%s", name, plan)
		}
	}
}
