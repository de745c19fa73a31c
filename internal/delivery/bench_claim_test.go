package delivery_test

import (
	"fmt"
	"testing"

	"github.com/hookline/hookline/internal/delivery"
)

// BenchmarkClaimAtScale measures claim+record (32 free slots, the default cap of 10 per subscription, no
// HTTP) as the queue grows, for backlogs on one subscription and spread over 1,000: the fair-share claim
// reads each candidate subscription's due rows through its own index, so a million waiting rows should
// cost about what a thousand do. Setting up the million-row cases takes about half a minute each.
func BenchmarkClaimAtScale(b *testing.B) {
	for _, c := range []struct{ subs, perSub int }{{1, 1_000}, {1, 1_000_000}, {1_000, 10}, {1_000, 1_000}} {
		b.Run(fmt.Sprintf("subs=%d/pending=%d", c.subs, c.subs*c.perSub), func(b *testing.B) {
			e := setup(b)
			event := e.publish("bench.seed", `{}`).ID
			if _, err := e.pool.Exec(e.ctx, `
				INSERT INTO subscriptions (tenant_id, url) SELECT $1, 'http://127.0.0.1:1/' || g FROM generate_series(1, $2::int) g`,
				e.tenant, c.subs); err != nil {
				b.Fatal(err)
			}
			if _, err := e.pool.Exec(e.ctx, `
				INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at)
				SELECT $1, $2, s.id, 'bench', $3::timestamptz - g * interval '1 millisecond', $3::timestamptz + interval '1 day'
				FROM subscriptions s, generate_series(1, $4::int) g`, e.tenant, event, e.clock.Now(), c.perSub); err != nil {
				b.Fatal(err)
			}
			if _, err := e.pool.Exec(e.ctx, "VACUUM ANALYZE webhook_deliveries, subscriptions"); err != nil {
				b.Fatal(err)
			}
			w := e.worker(delivery.WorkerOptions{BatchSize: 32}, nil)
			handled := 0
			for b.Loop() {
				n, err := w.ClaimAndRecord(e.ctx, 200)
				if err != nil || n == 0 {
					b.Fatalf("claimed and recorded %d: %v", n, err)
				}
				handled += n
			}
			b.ReportMetric(float64(handled)/float64(b.N), "rows/claim")
			b.ReportMetric(float64(handled)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
