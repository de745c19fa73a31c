package publish_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
)

// BenchmarkPublishFanOut100 publishes from 16 goroutines to 100 paused subscriptions, without filters and
// with a four-condition filter on each that every event passes (the same deliveries either way).
func BenchmarkPublishFanOut100(b *testing.B) {
	filter := json.RawMessage(`{"type": {"$startsWith": "bench."}, "data": {"order": {"total": {"$gte": 100},
		"currency": {"$in": ["EUR", "USD"]}, "id": {"$startsWith": "ord_"}}}}`)
	for _, filtered := range []bool{false, true} {
		b.Run(fmt.Sprintf("filters=%v", filtered), func(b *testing.B) {
			e := setup(b)
			for i := range 100 {
				in := subscriptions.Input{}
				if filtered {
					in.Filter = filter
				}
				s, _ := e.subscribe(fmt.Sprintf("http://127.0.0.1:1/s%d", i), in)
				if _, err := e.subs.Pause(e.ctx, e.tenant, s.ID); err != nil {
					b.Fatal(err)
				}
			}
			payload := json.RawMessage(`{"order":{"id":"ord_00000001","total":1250,"currency":"EUR"},"pad":"` + strings.Repeat("x", 950) + `"}`)
			b.SetParallelism(8) // 16 publishers on 2 cores: the writers batch them, as in production
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "bench.ingest", Payload: payload})
					if err != nil || len(p.Deliveries) != 100 {
						b.Errorf("%d deliveries, %v", len(p.Deliveries), err)
						return
					}
				}
			})
		})
	}
}
