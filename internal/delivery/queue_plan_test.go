package delivery_test

import (
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestHotPathReadsTheQueueAlone: the statements every delivery goes through (the publish, the claim, the
// completion, the rescue) are planned over the queue's partition (and the legacy one, empty here) and no
// time partition of the finished deliveries, with the arguments known (custom plans) or not (the generic
// plans the engine's pools cache): however many days of history there are, they read and lock the same.
func TestHotPathReadsTheQueueAlone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tr := testdb.RecordStatements("PublishEvents", "ClaimDeliveries", "CompleteAttempts", "RescueExpiredLeases")
	cfg, err := pgxpool.ParseConfig(urlOf(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tr
	traced, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()
	e.pool, e.pub, e.plannedCompletions = traced, publish.NewPublisher(traced, e.policy, e.clock.Now), true
	e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	e.publish("order.created", `{}`)
	w := e.worker(delivery.WorkerOptions{BatchSize: 10}, nil)
	if n, err := w.ClaimAndRecord(e.ctx, 200); err != nil || n != 1 {
		t.Fatalf("claimed and recorded %d: %v", n, err)
	}
	if _, err := w.RescueExpired(e.ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := traced.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(e.ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"PublishEvents", "ClaimDeliveries", "CompleteAttempts", "RescueExpiredLeases"} {
			sql, args := tr.Last(t, name)
			plan := testdb.ExplainExecute(t, conn.Conn(), "hl_"+strings.ToLower(name), sql, args...)
			// (a publish's insert names no partition: it routes each row when it runs, a pending one to the queue)
			if strings.Contains(plan, "webhook_deliveries_p") || (name != "PublishEvents" && !strings.Contains(plan, "webhook_deliveries_queue")) {
				t.Errorf("%s (%s) is planned over other partitions than the queue's:\n%s", name, mode, plan)
			}
		}
	}
}
