package subscriptions_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
)

// A change and its activity entry commit together or not at all: an entry the database refuses (an actor
// kind its CHECK does not know) takes the pause with it, and a change made outside a request (no actor:
// the demo seed, maintenance) records nothing.
func TestActivityEntryInTheChangesTransaction(t *testing.T) {
	ctx := context.Background()
	pool, err := server.Connect(ctx, dbURL, 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "activity tx")
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, time.Now, true)
	u := "https://example.com/hook"
	sub, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &u})
	if err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM activity WHERE tenant_id = $1`, tn.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("a create without an actor wrote %d entries", n)
	}

	bad := activity.WithActor(ctx, activity.Actor{Kind: "robot"})
	if _, err := svc.Pause(bad, tn.ID, sub.ID); err == nil {
		t.Fatal("pause succeeded though its activity entry could not be written")
	}
	if got, err := svc.Get(ctx, tn.ID, sub.ID); err != nil || got.State != subscriptions.Active {
		t.Fatalf("after the failed entry the subscription is %q (%v), want still active", got.State, err)
	}

	user := activity.WithActor(ctx, activity.Actor{Kind: activity.ActorUser, ID: "u1", Email: "ann@example.com"})
	if _, err := svc.Pause(user, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	var action, kind, email string
	if err := pool.QueryRow(ctx, `SELECT action, actor_kind, actor_email FROM activity WHERE tenant_id = $1`, tn.ID).
		Scan(&action, &kind, &email); err != nil || action != activity.SubscriptionPaused || kind != "user" || email != "ann@example.com" {
		t.Fatalf("entry %s %s %s (%v), want subscription.paused by user ann@example.com", action, kind, email, err)
	}
}
