package subscriptions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
)

// A change and its activity entry commit together or not at all: an entry the database refuses (an actor
// kind its CHECK does not know) takes the pause with it, and a change with no actor in its context is
// refused: every change is recorded (what Hookline changes by itself names the system actor).
func TestActivityEntryInTheChangesTransaction(t *testing.T) {
	t.Parallel()
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

// A change's entry names only the fields whose value moved, compared before and after in the change's
// transaction — not every field the request (a form sends them all) named. Custom headers are compared by
// value under the key they are sealed with (the same value sealed twice is stored differently), and the
// entry names the headers added, removed and given a new value, never a value. A save that changes
// nothing records nothing.
func TestChangeRecordsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := server.Connect(ctx, dbURL, 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "only what changed")
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.Parse(secretbox.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, time.Now, true)
	svc.UseKeys(box)
	user := activity.WithActor(ctx, activity.Actor{Kind: activity.ActorUser, ID: "u1", Email: "ann@example.com"})
	u, desc, types, rate := "https://example.com/hook", "Orders", []string{"order.created", "order.paid"}, 5
	headers := map[string]string{"X-Api-Key": "key-1", "X-Team": "billing"}
	sub, _, err := svc.Create(user, tn.ID, subscriptions.Input{URL: &u, Description: &desc, EventTypes: &types, Headers: &headers, RateLimitPerSecond: &rate})
	if err != nil {
		t.Fatal(err)
	}
	log := activity.NewLog(pool)
	entries := func() []activity.Entry {
		t.Helper()
		page, err := log.List(ctx, tn.ID, activity.Filter{Action: activity.SubscriptionChanged})
		if err != nil {
			t.Fatal(err)
		}
		return page.Items
	}
	// What the dashboard's form sends: every field, header values left empty (kept), the types reordered.
	form := func(desc string, headers map[string]string, rate int) subscriptions.Input {
		types := []string{"order.paid", "order.created"}
		return subscriptions.Input{URL: &u, Description: &desc, EventTypes: &types, Headers: &headers,
			RateLimitPerSecond: &rate, KeepHeaderValues: true}
	}
	kept := map[string]string{"X-Api-Key": "", "X-Team": ""}

	steps := []struct {
		name    string
		in      subscriptions.Input
		fields  []string
		headers map[string][]string // nil: no "headers" detail
	}{
		{"only the description", form("Orders v2", kept, 5), []string{"description"}, nil},
		{"nothing", form("Orders v2", kept, 5), nil, nil},
		{"the same header value typed again", form("Orders v2", map[string]string{"X-Api-Key": "key-1", "X-Team": ""}, 5), nil, nil},
		{"a header value and the rate limit", form("Orders v2", map[string]string{"X-Api-Key": "key-2", "X-Team": ""}, 7), []string{"headers", "rate_limit_per_second"},
			map[string][]string{"added": {}, "removed": {}, "changed": {"X-Api-Key"}}},
		{"a header added, one removed", form("Orders v2", map[string]string{"X-Api-Key": "", "X-Region": "eu"}, 7), []string{"headers"},
			map[string][]string{"added": {"X-Region"}, "removed": {"X-Team"}, "changed": {}}},
		{"the URL (API, one field)", subscriptions.Input{URL: ptr("https://example.com/hook2")}, []string{"url"}, nil},
		{"the rate limit removed (API)", subscriptions.Input{ClearRateLimit: true}, []string{"rate_limit_per_second"}, nil},
		{"the event types (API)", subscriptions.Input{EventTypes: &[]string{"order.created"}}, []string{"event_types"}, nil},
	}
	want := 0
	for _, st := range steps {
		if _, err := svc.Update(user, tn.ID, sub.ID, st.in); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := entries()
		if st.fields == nil {
			if len(got) != want {
				t.Errorf("%s: %d entries, want %d (a save that changes nothing records nothing)", st.name, len(got), want)
			}
			continue
		}
		want++
		if len(got) != want {
			t.Fatalf("%s: %d entries, want %d", st.name, len(got), want)
		}
		checkChangeEntry(t, st.name, got[0].Details, st.fields, st.headers)
	}
}

// checkChangeEntry checks a subscription.changed entry's details: the fields named, the headers added,
// removed and changed (nil: no headers detail), and no header value anywhere.
func checkChangeEntry(t *testing.T, step string, d map[string]any, fields []string, headers map[string][]string) {
	t.Helper()
	if f := strings.Join(anyStrings(d["fields"]), ","); f != strings.Join(fields, ",") {
		t.Errorf("%s: fields %q, want %q", step, f, strings.Join(fields, ","))
	}
	h, _ := d["headers"].(map[string]any)
	if (h != nil) != (headers != nil) {
		t.Errorf("%s: headers detail %v, want %v", step, d["headers"], headers)
	}
	for k, names := range headers {
		if g := strings.Join(anyStrings(h[k]), ","); g != strings.Join(names, ",") {
			t.Errorf("%s: headers %s %q, want %q", step, k, g, strings.Join(names, ","))
		}
	}
	for _, secret := range []string{"key-1", "key-2", "eu", "billing"} {
		if raw := fmt.Sprint(d); strings.Contains(raw, secret) {
			t.Errorf("%s: the entry holds a header value: %s", step, raw)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// anyStrings reads a JSON array of strings.
func anyStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
