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
			benchClaimAndRecord(b, c.subs, c.perSub, delivery.WorkerOptions{BatchSize: 32})
		})
	}
}

// BenchmarkClaimRecordManyEndpoints is the database's side of make bench's drains (a) and (c), without
// HTTP: claims of 200 rows and their completions, one after the other, over a backlog on one subscription
// (its cap high enough not to bind, as the harness sets it) and the same backlog spread over 100. The
// ratio of the two rates is what the 100-subscription drain pays per delivery for taking every
// subscription's share in turns: its per-subscription steps (a candidate's probe, the reserved slots, the
// finished count and health of each subscription in a completion).
func BenchmarkClaimRecordManyEndpoints(b *testing.B) {
	const total = 200_000
	for _, c := range []struct{ subs, cap int }{{1, 1000}, {100, 10}} {
		b.Run(fmt.Sprintf("subs=%d", c.subs), func(b *testing.B) {
			benchClaimAndRecord(b, c.subs, total/c.subs, delivery.WorkerOptions{BatchSize: 200, EndpointConcurrency: c.cap})
		})
	}
}

// benchClaimAndRecord seeds perSub due deliveries on each of subs new subscriptions, event by event (each
// event's deliveries to every subscription together, the order of a fanned-out backlog), and times
// ClaimAndRecord with a worker of these options.
func benchClaimAndRecord(b *testing.B, subs, perSub int, o delivery.WorkerOptions) {
	e := setup(b)
	event := e.publish("bench.seed", `{}`).ID
	if _, err := e.pool.Exec(e.ctx, `
		INSERT INTO subscriptions (tenant_id, url) SELECT $1, 'http://127.0.0.1:1/' || g FROM generate_series(1, $2::int) g`,
		e.tenant, subs); err != nil {
		b.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `
		INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at)
		SELECT $1, $2, s.id, 'bench', $3::timestamptz - g * interval '1 millisecond', $3::timestamptz + interval '1 day'
		FROM generate_series(1, $4::int) g, subscriptions s ORDER BY g DESC`, e.tenant, event, e.clock.Now(), perSub); err != nil {
		b.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, "VACUUM ANALYZE webhook_deliveries, subscriptions"); err != nil {
		b.Fatal(err)
	}
	w := e.worker(o, nil)
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
	b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(handled), "µs/delivery")
}
