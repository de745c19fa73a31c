package subscriptions_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
)

// Two PATCHes of different fields at the same moment both stick: the one that commits second does not
// put back the other's field as it read it. Repeated so that the two statements overlap some of the
// times (a read-then-write loses one change in most rounds here).
func TestConcurrentPatchesKeepBothChanges(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool, err := server.Connect(ctx, dbURL, 8, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "concurrent patch")
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, time.Now, true)
	url0, desc0, types0 := "https://example.com/0", "start", []string{"a.b"}
	sub, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &url0, Description: &desc0, EventTypes: &types0})
	if err != nil {
		t.Fatal(err)
	}

	const rounds = 40
	for i := range rounds {
		url := fmt.Sprintf("https://example.com/%d", i+1)
		desc := fmt.Sprintf("round %d", i+1)
		types := []string{fmt.Sprintf("t%d.created", i+1)}
		headers := map[string]string{"X-Round": fmt.Sprint(i + 1)}
		rate := i + 1
		// Each round changes two disjoint sets of fields at once.
		a := subscriptions.Input{URL: &url, EventTypes: &types}
		b := subscriptions.Input{Description: &desc, Headers: &headers, RateLimitPerSecond: &rate}
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, in := range []subscriptions.Input{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[j] = svc.Update(ctx, tn.ID, sub.ID, in)
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := svc.Get(ctx, tn.ID, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.URL != url || !slices.Equal(got.EventTypes, types) || got.Description != desc ||
			!slices.Equal(got.HeaderNames, []string{"X-Round"}) || got.RateLimitPerSecond == nil || *got.RateLimitPerSecond != rate {
			t.Fatalf("round %d: a change was lost: url %q types %v description %q headers %v rate %v",
				i+1, got.URL, got.EventTypes, got.Description, got.HeaderNames, got.RateLimitPerSecond)
		}
	}
}

// A PATCH changes only the fields it names; null and 0 remove the rate limit, an empty list of event
// types means every type, and a deleted subscription is not found.
func TestPatchChangesOnlyWhatItNames(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool, err := server.Connect(ctx, dbURL, 2, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "patch fields")
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, time.Now, true)
	url, desc, types, rate := "https://example.com/x", "d", []string{"a.b", "c.d"}, 5
	headers := map[string]string{"x-key": "v"}
	sub, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &url, Description: &desc, EventTypes: &types,
		Headers: &headers, RateLimitPerSecond: &rate})
	if err != nil {
		t.Fatal(err)
	}
	desc2 := "d2"
	got, err := svc.Update(ctx, tn.ID, sub.ID, subscriptions.Input{Description: &desc2})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != url || got.Description != desc2 || !slices.Equal(got.EventTypes, types) ||
		!slices.Equal(got.HeaderNames, []string{"X-Key"}) || got.RateLimitPerSecond == nil || *got.RateLimitPerSecond != 5 {
		t.Fatalf("after a description PATCH: %+v", got)
	}
	if got, err = svc.Update(ctx, tn.ID, sub.ID, subscriptions.Input{ClearRateLimit: true}); err != nil || got.RateLimitPerSecond != nil {
		t.Fatalf("rate_limit_per_second: null: %v %v", got.RateLimitPerSecond, err)
	}
	rate = 7
	if got, err = svc.Update(ctx, tn.ID, sub.ID, subscriptions.Input{RateLimitPerSecond: &rate}); err != nil || *got.RateLimitPerSecond != 7 {
		t.Fatalf("rate 7: %v %v", got.RateLimitPerSecond, err)
	}
	// 0 is out of range (1 to MaxRatePerSecond), not "no limit": refused, and the limit stays.
	zero := 0
	var field *subscriptions.FieldError
	if _, err = svc.Update(ctx, tn.ID, sub.ID, subscriptions.Input{RateLimitPerSecond: &zero}); !errors.As(err, &field) || field.Field != "rate_limit_per_second" {
		t.Fatalf("rate 0: %v, want a refusal of rate_limit_per_second", err)
	}
	if got, err = svc.Get(ctx, tn.ID, sub.ID); err != nil || got.RateLimitPerSecond == nil || *got.RateLimitPerSecond != 7 {
		t.Fatalf("after a refused rate 0: %v %v", got.RateLimitPerSecond, err)
	}
	empty, none := []string{}, map[string]string{}
	if got, err = svc.Update(ctx, tn.ID, sub.ID, subscriptions.Input{EventTypes: &empty, Headers: &none}); err != nil ||
		len(got.EventTypes) != 0 || len(got.HeaderNames) != 0 || got.Description != desc2 {
		t.Fatalf("empty types and headers: %+v %v", got, err)
	}
	if err := svc.Delete(ctx, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Update(ctx, tn.ID, sub.ID, subscriptions.Input{Description: &desc}); err == nil {
		t.Fatal("PATCH of a deleted subscription succeeded")
	}
}
