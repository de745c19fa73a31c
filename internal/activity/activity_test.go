package activity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "activity", func(u string) { dbURL = u }) }

// Prune deletes the entries older than the cutoff, every one of them across batches, and no other.
func TestPruneDeletesOnlyOldEntries(t *testing.T) {
	// Parallel: Prune spans every tenant, but the package's other entries are written now, long after
	// this test's cutoff in 2026-11.
	t.Parallel()
	ctx := context.Background()
	pool, err := server.Connect(ctx, dbURL, 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "prune")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	actx := activity.WithActor(ctx, activity.Actor{Kind: activity.ActorAdmin})
	for i := range 25 { // 1 h apart: 13 older than 12 h
		at := now.Add(-time.Duration(i) * time.Hour)
		if err := activity.Record(actx, pool, tn.ID, at, activity.SubscriptionPaused, activity.Object{Type: "subscription", ID: "s"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	log := activity.NewLog(pool)
	n, err := log.Prune(ctx, now.Add(-12*time.Hour), 5)
	if err != nil || n != 12 {
		t.Fatalf("pruned %d (%v), want the 12 entries older than 12 h", n, err)
	}
	page, err := log.List(ctx, tn.ID, activity.Filter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 13 || page.Items[len(page.Items)-1].At.Before(now.Add(-12*time.Hour)) {
		t.Fatalf("%d entries left, the oldest at %v", len(page.Items), page.Items[len(page.Items)-1].At)
	}
}

// Every change is recorded: Record with no actor in the context fails (so the change's transaction rolls
// back) and writes nothing; the system actor, for what Hookline changes by itself, is recorded as such.
func TestRecordWithoutActorFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := server.Connect(ctx, dbURL, 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "no actor")
	if err != nil {
		t.Fatal(err)
	}
	obj := activity.Object{Type: "subscription", ID: "s"}
	err = activity.Record(ctx, pool, tn.ID, time.Now(), activity.SubscriptionPaused, obj, nil)
	if !errors.Is(err, activity.ErrNoActor) {
		t.Fatalf("Record without an actor: %v, want ErrNoActor", err)
	}
	log := activity.NewLog(pool)
	page, err := log.List(ctx, tn.ID, activity.Filter{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("%d entries (%v), want none", len(page.Items), err)
	}

	sys := activity.System(ctx, "operator notifications setup")
	if err := activity.Record(sys, pool, tn.ID, time.Now(), activity.SubscriptionCreated, obj, nil); err != nil {
		t.Fatalf("Record as the system: %v", err)
	}
	page, err = log.List(ctx, tn.ID, activity.Filter{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("%d entries (%v), want the system's one", len(page.Items), err)
	}
	if a := page.Items[0].Actor; a.Kind != activity.ActorSystem || a.Label() != "operator notifications setup" {
		t.Errorf("actor %+v (%q), want the system named for what it did", a, a.Label())
	}
}
