package deliveries_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestListByEventUsesEventIndex: one event's deliveries (the dashboard's event page and search, the API's
// ?event_id=) are found through webhook_deliveries_event_id_idx, not by reading the tenant's whole history,
// with the dashboard's and API's planning (every statement planned with its values).
func TestListByEventUsesEventIndex(t *testing.T) {
	t.Parallel()
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
	svc := deliveries.NewService(pool, e.policy, e.clock.Now, 3, 60)
	page, err := svc.List(e.ctx, e.tenant, deliveries.Filter{EventID: &event, Limit: 100, WithTotal: true})
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
		if !readsAsIntended(plan, "event_id_idx") {
			t.Errorf("%s by event does not use webhook_deliveries_event_id_idx:\n%s", name, plan)
		}
	}
}

// TestListByStateUsesNarrowIndexes: the lists' state filters, on a tenant whose history is mostly
// delivered, read the index made for each state (webhook_deliveries_tenant_state_idx, which every row
// version of every delivery paid an entry for, is gone): pending through the tenant's pending index,
// in_flight through the in-flight leases, dead through a dead-letter index, and delivered by walking
// the tenant's newest-first index with the state as a filter. Each answer is checked too.
func TestListByStateUsesNarrowIndexes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	s, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	if _, err := e.subs.Pause(e.ctx, e.tenant, s.ID); err != nil { // nothing is sent
		t.Fatal(err)
	}
	e.seedStateHistory(s.ID)

	tr := testdb.RecordStatements("ListDeliveries", "CountDeliveries", "CountDeliveryStatesBySubscription")
	cfg := e.pool.Config()
	cfg.ConnConfig.Tracer = tr
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan" // the dashboard's and API's planning
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	svc := deliveries.NewService(pool, e.policy, e.clock.Now, 3, 60)
	for _, c := range []struct {
		states []string
		want   int    // rows of these states
		index  string // the index the plan must read in the history's partitions (its name after the table's); "" none
	}{
		{[]string{"pending"}, 30, ""},   // the queue's partition alone: it holds only waiting and in-flight rows
		{[]string{"in_flight"}, 30, ""}, // the same
		{[]string{"dead"}, 60, "dead_"}, // any of the dead-letter partial indexes
		{[]string{"delivered"}, 30000 - 120, "tenant_created_idx"},
	} {
		page, err := svc.List(e.ctx, e.tenant, deliveries.Filter{States: c.states, Limit: 100, WithTotal: true})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total == nil || *page.Total != int64(c.want) || len(page.Items) != min(c.want, 100) {
			t.Errorf("%v: %d items, total %v, want %d", c.states, len(page.Items), page.Total, c.want)
		}
		for _, d := range page.Items {
			if st := string(d.State); st != c.states[0] && (c.states[0] != "dead" || (st != "failed" && st != "expired")) {
				t.Errorf("%v listed a %s delivery", c.states, st)
			}
		}
		sql, args := tr.Last(t, "ListDeliveries")
		if plan := testdb.Explain(t, conn.Conn(), sql, args...); !readsAsIntended(plan, c.index) {
			t.Errorf("ListDeliveries of %v does not read %q:\n%s", c.states, c.index, plan)
		}
		if c.states[0] == "delivered" {
			continue // counting most of the table reads most of an index whichever it is
		}
		sql, args = tr.Last(t, "CountDeliveries")
		if plan := testdb.Explain(t, conn.Conn(), sql, args...); !readsAsIntended(plan, c.index) {
			t.Errorf("CountDeliveries of %v does not read %q:\n%s", c.states, c.index, plan)
		}
	}
	// The health card's counts of one subscription: its dead ones through a dead-letter index (its own,
	// webhook_deliveries_sub_dead_idx, once other subscriptions' dead ones are many), never its history
	// read partition by partition (the history's delivered rows are 99 % of it here).
	counts, err := svc.StateCounts(e.ctx, e.tenant, []uuid.UUID{s.ID}, 1000)
	if err != nil || counts[s.ID].Dead.N != 60 || counts[s.ID].Pending.N != 30 {
		t.Fatalf("state counts %+v, %v; want 60 dead and 30 pending", counts[s.ID], err)
	}
	sql, args := tr.Last(t, "CountDeliveryStatesBySubscription")
	if plan := testdb.Explain(t, conn.Conn(), sql, args...); !readsAsIntended(plan, "dead") || strings.Contains(plan, "created_idx") {
		t.Errorf("the state counts do not read the dead through a dead-letter index:\n%s", plan)
	}
}

// seedStateHistory inserts 30,000 deliveries of sub over 30,000 seconds, all delivered but every 1,000th
// of each other state, spread through the history (so none is found early on the newest-first walk by
// luck), and analyzes them.
func (e *env) seedStateHistory(sub uuid.UUID) {
	t := e.t
	if _, err := e.pool.Exec(e.ctx, `
		WITH ev AS (
			INSERT INTO events (tenant_id, event_type, body, created_at)
			SELECT $1, 'order.created', '{}', now() - g * interval '1 second' FROM generate_series(1, 30000) g
			RETURNING id, created_at
		), shaped AS (
			SELECT ev.*, CASE row_number() OVER (ORDER BY ev.created_at) % 1000
			                 WHEN 1 THEN 'pending' WHEN 2 THEN 'in_flight' WHEN 3 THEN 'failed' WHEN 4 THEN 'expired'
			                 ELSE 'delivered' END AS state
			FROM ev
		)
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, give_up_at, created_at,
		                                lease_expires_at, lease_id, dead_at)
		SELECT $1, id, $2, 'order.created', state, now() + interval '1 day', created_at,
		       CASE WHEN state = 'in_flight' THEN now() + interval '1 minute' END,
		       CASE WHEN state = 'in_flight' THEN gen_random_uuid() END,
		       CASE WHEN state IN ('failed', 'expired') THEN now() END
		FROM shaped`, e.tenant, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, "ANALYZE webhook_deliveries, events"); err != nil {
		t.Fatal(err)
	}

}

// readsAsIntended says whether a plan over webhook_deliveries reads its history's time partitions only
// through the index named index (after the partition's name: "tenant_created_idx"), never whole (but for
// those PostgreSQL knows empty: the partitions made ahead); with index
// "", whether it reads none of them at all (a list of waiting or in-flight rows reads the queue's partition
// alone, small however long the history).
func readsAsIntended(plan, index string) bool {
	if index == "" {
		return !strings.Contains(plan, "webhook_deliveries_p")
	}
	return strings.Contains(plan, "_"+index) && len(testdb.WholeScans(plan, "webhook_deliveries_p")) == 0
}
