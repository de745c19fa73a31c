package deliveries_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/subscriptions"
)

// BenchmarkListAtScale measures the dashboard's and API's list queries on a large table: by default one
// million deliveries of one tenant (HOOKLINE_BENCH_ROWS changes it), 90 % delivered to one subscription and
// 10 % dead at another, created over 30 days. Setting up takes about half a minute.
func BenchmarkListAtScale(b *testing.B) {
	rows := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("HOOKLINE_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	e := setup(b)
	good, _ := e.subscribe("http://127.0.0.1:1/good", subscriptions.Input{})
	bad, _ := e.subscribe("http://127.0.0.1:1/bad", subscriptions.Input{})
	event := e.publish("order.created", `{"n":1}`).ID
	now := time.Now()
	spread := 30 * 24 * time.Hour / time.Duration(rows)
	if _, err := e.pool.Exec(e.ctx, `
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, state, next_attempt_at,
		                                give_up_at, created_at, updated_at, attempt_count, total_attempts, dead_reason, dead_at,
		                                last_attempt_at)
		SELECT $1, $2, CASE WHEN g % 10 = 0 THEN $4::uuid ELSE $3::uuid END, CASE WHEN g % 3 = 0 THEN 'invoice.paid' ELSE 'order.created' END,
		       CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'delivered' END, t, t + interval '72 hours', t, t, 1, 1,
		       CASE WHEN g % 10 = 0 THEN 'permanent_status' END, CASE WHEN g % 10 = 0 THEN t END, t
		FROM generate_series(1, $5::int) g, LATERAL (SELECT $6::timestamptz - g * $7::interval AS t) x`,
		e.tenant, event, good.ID, bad.ID, rows, now, spread); err != nil {
		b.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, "VACUUM ANALYZE webhook_deliveries"); err != nil {
		b.Fatal(err)
	}
	deep, err := e.svc.List(e.ctx, e.tenant, deliveries.Filter{SubscriptionID: &good.ID, Limit: 100})
	if err != nil {
		b.Fatal(err)
	}
	for range 50 { // a cursor 5,000 rows deep
		deep, err = e.svc.List(e.ctx, e.tenant, deliveries.Filter{SubscriptionID: &good.ID, Limit: 100, Cursor: deep.NextCursor})
		if err != nil {
			b.Fatal(err)
		}
	}
	since := now.Add(-10 * 24 * time.Hour)
	cases := []struct {
		name string
		f    deliveries.Filter
	}{
		{"subscription first page", deliveries.Filter{SubscriptionID: &good.ID, Limit: 25}},
		{"subscription page 5000 rows deep", deliveries.Filter{SubscriptionID: &good.ID, Limit: 25, Cursor: deep.NextCursor}},
		{"tenant dead", deliveries.Filter{States: []string{"dead"}, Limit: 50}},
		{"subscription dead with capped count", deliveries.Filter{SubscriptionID: &bad.ID, States: []string{"dead"}, Limit: 25, WithTotal: true, CountUpTo: 10000}},
		{"subscription event type since", deliveries.Filter{SubscriptionID: &good.ID, EventType: "invoice.paid", Since: &since, Limit: 25}},
		{"dashboard page with capped count", deliveries.Filter{SubscriptionID: &good.ID, Limit: 25, WithTotal: true, CountUpTo: 10000}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.svc.List(e.ctx, e.tenant, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("detail", func(b *testing.B) {
		id := deep.Items[0].ID
		for b.Loop() {
			if _, err := e.svc.Get(e.ctx, e.tenant, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
