package subscriptions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
)

// A change and its activity entry commit together or not at all: an entry the database refuses (an actor
// kind its CHECK does not know) takes the pause with it, and a change with no actor in its context is
// refused: every change is recorded (what Hookline changes by itself names the system actor).
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
	if _, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &u}); !errors.Is(err, activity.ErrNoActor) {
		t.Fatalf("a create without an actor: %v, want ErrNoActor", err)
	}
	if subs, err := svc.List(ctx, tn.ID); err != nil || len(subs) != 0 {
		t.Fatalf("a create without an actor made %d subscriptions (%v), want none", len(subs), err)
	}
	sub, _, err := svc.Create(activity.System(ctx, "test setup"), tn.ID, subscriptions.Input{URL: &u})
	if err != nil {
		t.Fatal(err)
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
	if err := pool.QueryRow(ctx, `SELECT action, actor_kind, actor_email FROM activity WHERE tenant_id = $1 ORDER BY at DESC, id DESC LIMIT 1`, tn.ID).
		Scan(&action, &kind, &email); err != nil || action != activity.SubscriptionPaused || kind != "user" || email != "ann@example.com" {
		t.Fatalf("entry %s %s %s (%v), want subscription.paused by user ann@example.com", action, kind, email, err)
	}
}
