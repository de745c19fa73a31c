package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
)

// Benchmarks of the engine against the test database. Each keeps its table to a few thousand rows, so
// `go test -run XXX -bench . -benchtime=1x ./internal/delivery/` takes seconds.

// BenchmarkPublish measures ingest: one event fanned out to three subscriptions per op.
func BenchmarkPublish(b *testing.B) {
	e := setup(b)
	for i := range 3 {
		e.subscribe(fmt.Sprintf("http://127.0.0.1:1/%d", i), subscriptions.Input{})
	}
	in := publish.PublishInput{TenantID: e.tenant, EventType: "order.created",
		Payload: json.RawMessage(`{"order":{"id":"ord_1","total":1250,"currency":"EUR","items":[{"sku":"a","qty":2}]}}`)}
	for b.Loop() {
		if _, err := e.pub.Publish(e.ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkPublishConcurrent measures ingest with 16 concurrent publishers, fan-out 1: where commits that
// notify serialise (PostgreSQL takes a global lock to queue a NOTIFY at commit).
func BenchmarkPublishConcurrent(b *testing.B) {
	e := setup(b)
	e.subscribe("http://127.0.0.1:1/one", subscriptions.Input{})
	in := publish.PublishInput{TenantID: e.tenant, EventType: "order.created",
		Payload: json.RawMessage(`{"order":{"id":"ord_1","total":1250,"currency":"EUR","items":[{"sku":"a","qty":2}]}}`)}
	b.SetParallelism(8) // 8 × GOMAXPROCS (2 here) = 16 publishers
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.pub.Publish(e.ctx, in); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkClaimRecord measures the database ceiling: one op claims up to a batch of due deliveries and
// records a synthetic 200 for each through Worker.Record, with no HTTP. Batch sizes show what batching buys.
func BenchmarkClaimRecord(b *testing.B) {
	const rows = 3000
	for _, batch := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			e := backlog(b, rows)
			w := e.worker(delivery.WorkerOptions{BatchSize: batch, EndpointConcurrency: batch}, nil)
			left, handled := rows, 0
			for b.Loop() {
				if left < batch { // refill, untimed
					b.StopTimer()
					refill(b, e)
					left = rows
					b.StartTimer()
				}
				n, err := w.ClaimAndRecord(e.ctx, 200)
				if err != nil || n != batch {
					b.Fatalf("claimed and recorded %d, want %d: %v", n, batch, err)
				}
				left -= n
				handled += n
			}
			b.ReportMetric(float64(handled)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// backlog is an env with one subscription and rows pending deliveries of one event, analyzed.
func backlog(b *testing.B, rows int) *env {
	e := setup(b)
	sub, _ := e.subscribe("http://127.0.0.1:1/x", subscriptions.Input{})
	event := e.publish("order.created", `{"n":1}`).ID
	insertDeliveries(b, e, sub.ID, event, "pending", rows-1, e.clock.Now())
	if _, err := e.pool.Exec(e.ctx, "ANALYZE webhook_deliveries, subscriptions, events"); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkRecordSmallBatch times Record alone (the claim is untimed) for batches of one subscription's
// successes, planned with each batch's arrays (customPlans) or on the cached generic plan (GenericPool):
// the generic plan saves the planning, about 1.5 ms a call, which is most of a small batch's write. Above
// 64 results Record plans the batch either way.
func BenchmarkRecordSmallBatch(b *testing.B) {
	const rows = 3000
	for _, batch := range []int{20, 64, 200} {
		for _, generic := range []bool{false, true} {
			b.Run(fmt.Sprintf("batch=%d/generic=%t", batch, generic), func(b *testing.B) {
				e := backlog(b, rows)
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
						b.Fatalf("claimed %d, want %d: %v", len(got), batch, err)
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

// refill puts every delivery back in the queue and drops the attempt rows.
func refill(b *testing.B, e *env) {
	if _, err := e.pool.Exec(e.ctx, "DELETE FROM webhook_attempts"); err != nil {
		b.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = 'pending', attempt_count = 0, next_attempt_at = $1,
		lease_id = NULL, lease_expires_at = NULL WHERE state <> 'pending'`, e.clock.Now()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDrain measures the whole engine: a started Worker (concurrency 32, batch 100) drains 1,000
// deliveries per op through signing, HTTP to a local httptest receiver and batched recording.
func BenchmarkDrain(b *testing.B) {
	const perOp = 1000
	e := setup(b)
	rc := newReceiver(b, nil)
	sub, _ := e.subscribe(rc.URL(), subscriptions.Input{})
	event := uuid.MustParse(e.publish("order.created", `{"n":1}`).ID)
	w := e.worker(delivery.WorkerOptions{Concurrency: 32, EndpointConcurrency: 32, Now: time.Now, PollInterval: time.Minute}, nil)
	if err := w.Start(e.ctx); err != nil {
		b.Fatal(err)
	}
	defer w.Stop(context.Background())
	waitDrained(b, e)
	for b.Loop() {
		b.StopTimer()
		insertDeliveries(b, e, sub.ID, event.String(), "pending", perOp, time.Now())
		b.StartTimer()
		w.Wake()
		waitDrained(b, e)
	}
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'"); n != 0 {
		b.Fatalf("%d deliveries not delivered", n)
	}
}

func waitDrained(b *testing.B, e *env) {
	deadline := time.Now().Add(time.Minute)
	poll := time.NewTicker(10 * time.Millisecond) // polling harder takes CPU and connections from the worker measured
	defer poll.Stop()
	for e.count("SELECT count(*) FROM webhook_deliveries WHERE state IN ('pending', 'in_flight')") > 0 {
		if time.Now().After(deadline) {
			b.Fatal("the worker did not drain the queue within a minute")
		}
		<-poll.C
	}
}
