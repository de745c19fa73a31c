package delivery_test

import (
	"fmt"
	"testing"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// BenchmarkRecordSmallBatch times Record alone (the claim is untimed) for batches of one subscription's
// successes, planned with each batch's arrays (customPlans) or on the cached generic plan (GenericPool):
// the generic plan saves the planning, about 1.5 ms a call, which is most of a small batch's write.
func BenchmarkRecordSmallBatch(b *testing.B) {
	const rows = 3000
	for _, batch := range []int{20, 64, 200} {
		for _, generic := range []bool{false, true} {
			b.Run(fmt.Sprintf("batch=%d/generic=%t", batch, generic), func(b *testing.B) {
				e := setup(b)
				sub, _ := e.subscribe("http://127.0.0.1:1/x", subscriptions.Input{})
				event := e.publish("order.created", `{"n":1}`).ID
				insertDeliveries(b, e, sub.ID, event, "pending", rows-1, e.clock.Now())
				if _, err := e.pool.Exec(e.ctx, "ANALYZE webhook_deliveries, subscriptions, events"); err != nil {
					b.Fatal(err)
				}
				e.plannedCompletions = !generic
				w := e.worker(delivery.WorkerOptions{BatchSize: batch, EndpointConcurrency: batch}, nil)
				left := rows
				for b.Loop() {
					b.StopTimer()
					if left < batch {
						refill(b, e)
						left = rows
					}
					got, lease, err := w.Claim(e.ctx, batch)
					if err != nil || len(got) != batch {
						b.Fatal(err)
					}
					b.StartTimer()
					if err := w.RecordStatus(e.ctx, got, lease, 200); err != nil {
						b.Fatal(err)
					}
					left -= batch
				}
			})
		}
	}
}
