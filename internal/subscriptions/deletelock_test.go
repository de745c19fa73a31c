package subscriptions_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Deleting a subscription while a claim holds one of its waiting deliveries must not deadlock. A claim locks
// the due deliveries it picks, then the subscription's row (to reserve slots). Here a transaction does
// exactly that, around a delete started between its two steps: the delete must wait for the delivery without
// holding the row, so the claim's second step goes through and both finish. (Locking the row first, as the
// delete once did, made PostgreSQL detect a deadlock and abort one of them.)
func TestDeleteWhileClaimingDoesNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	// A database of its own: the delete is seen waiting by any lock wait on the database.
	pool, err := server.Connect(ctx, ownDatabase(t, "subs_deletelock"), 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "delete while claiming")
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, time.Now, true)
	u := "https://example.com/hook"
	sub, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &u})
	if err != nil {
		t.Fatal(err)
	}
	pub := publish.NewPublisher(pool, delivery.RetryPolicy{Base: time.Second, MaxDelay: time.Minute, MaxAttempts: 3, Window: time.Hour}, time.Now)
	// Two waiting deliveries: the claim takes one, the delete dead-letters the other.
	for range 2 {
		if _, err := pub.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "order.paid", Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}

	claim, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback(ctx)
	var claimed string
	if err := claim.QueryRow(ctx, `SELECT id::text FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'pending'
		ORDER BY id LIMIT 1 FOR UPDATE`, sub.ID).Scan(&claimed); err != nil {
		t.Fatal(err)
	}

	deleted := make(chan error, 1)
	go func() { deleted <- svc.Delete(ctx, tn.ID, sub.ID) }()
	waitUntilBlocked(t, pool, deleted)

	// The claim's second step: the subscription's row, with a lock timeout far below the delete's wait, so a
	// delete holding the row fails this step instead of waiting for the deadlock detector.
	if _, err := claim.Exec(ctx, `SET LOCAL lock_timeout = '3s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := claim.Exec(ctx, `SELECT 1 FROM subscriptions WHERE id = $1 FOR NO KEY UPDATE`, sub.ID); err != nil {
		t.Fatalf("the claim could not lock the subscription's row while the delete waited: %v", err)
	}
	if _, err := claim.Exec(ctx, `UPDATE webhook_deliveries SET state = 'in_flight', lease_expires_at = now() + interval '1 minute',
		lease_id = gen_random_uuid() WHERE id = $1`, claimed); err != nil {
		t.Fatal(err)
	}
	if err := claim.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the delete did not finish after the claim committed")
	}
	checkDeletedWhileClaimed(t, svc, pool, tn.ID, sub.ID)
}

// waitUntilBlocked waits until a statement on the database waits for a lock (the delete, for the claim's
// delivery), and fails the test if the delete finishes instead, or after 10 s.
func waitUntilBlocked(t *testing.T, pool *pgxpool.Pool, deleted <-chan error) {
	t.Helper()
	ctx := context.Background()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		select {
		case err := <-deleted:
			t.Fatalf("the delete finished (%v) while the claim held a waiting delivery", err)
		case <-deadline:
			t.Fatal("the delete never waited for the claim's delivery")
		case <-tick.C:
		}
	}
}

// checkDeletedWhileClaimed: the claimed delivery finishes its attempt; the other was dead-lettered with
// the reason, and the subscription is gone.
func checkDeletedWhileClaimed(t *testing.T, svc *subscriptions.Service, pool *pgxpool.Pool, tenant, sub uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	var inFlight, dead int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'in_flight'),
		count(*) FILTER (WHERE state = 'failed' AND dead_reason = 'subscription_deleted')
		FROM webhook_deliveries WHERE subscription_id = $1`, sub).Scan(&inFlight, &dead); err != nil {
		t.Fatal(err)
	}
	if inFlight != 1 || dead != 1 {
		t.Errorf("%d in flight and %d dead-lettered, want 1 and 1", inFlight, dead)
	}
	if _, err := svc.Get(ctx, tenant, sub); err == nil {
		t.Error("the subscription is still there")
	}
}
