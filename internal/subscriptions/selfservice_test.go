package subscriptions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5/pgxpool"
)

func selfServicePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := server.Connect(context.Background(), dbURL, 12, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newTenantID(t *testing.T, pool *pgxpool.Pool, name string) uuid.UUID {
	t.Helper()
	tn, err := tenants.NewService(pool, "").CreateTenant(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tn.ID
}

// A tenant at its limit gets no more subscriptions, however many creates arrive at once: of ten concurrent
// creates with room for three, exactly three succeed, the others are INVALID_REQUEST saying why. Deleting
// one makes room again.
func TestSubscriptionLimitPerTenant(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool := selfServicePool(t)
	svc := subscriptions.NewService(pool, time.Now, true)
	svc.LimitPerTenant(5)
	tn := newTenantID(t, pool, "limit")
	url := "https://example.com/hook"
	var first uuid.UUID
	for i := range 2 {
		s, _, err := svc.Create(ctx, tn, subscriptions.Input{URL: &url})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = s.ID
		}
	}
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, 10)
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() {
				<-start
				_, _, errs[i] = svc.Create(ctx, tn, subscriptions.Input{URL: &url})
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !fault.Is(err, fault.InvalidRequest) || !strings.Contains(err.Error(), "already has 5 subscriptions"):
				t.Errorf("round %d: refusal %v, want INVALID_REQUEST naming the limit", round, err)
			}
		}
		if want := map[int]int{0: 3, 1: 0, 2: 1}[round]; ok != want {
			t.Errorf("round %d: %d creates succeeded, want %d", round, ok, want)
		}
		all, err := svc.List(ctx, tn)
		if err != nil || len(all) != 5 {
			t.Fatalf("round %d: %d subscriptions (%v), want 5", round, len(all), err)
		}
		if round == 1 {
			if err := svc.Delete(ctx, tn, first); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Another tenant has a limit of its own.
	if _, _, err := svc.Create(ctx, newTenantID(t, pool, "limit other"), subscriptions.Input{URL: &url}); err != nil {
		t.Errorf("another tenant's first subscription: %v", err)
	}
}

// Refusals name their field (for the dashboard's form), keep the API's code and message, and say the
// SSRF guard's refusal in a customer's words.
func TestFieldErrors(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool := selfServicePool(t)
	svc := subscriptions.NewService(pool, time.Now, false)
	tn := newTenantID(t, pool, "field errors")
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	cases := []struct {
		in         subscriptions.Input
		field, api string
		people     string
	}{
		{subscriptions.Input{URL: str("ftp://example.com/")}, "url", "url must be an absolute http:// or https:// URL", "full web address"},
		{subscriptions.Input{URL: str("http://10.1.2.3/hook")}, "url", "url points to an internal address (10.1.2.3)", "private network"},
		{subscriptions.Input{URL: str("http://localhost:8080/")}, "url", "url points to localhost", "private network"},
		{subscriptions.Input{URL: str("https://example.com/"), Headers: &map[string]string{"Bad Name": "x"}}, "headers", `custom header name "Bad Name" is not a valid HTTP header name`, "not a valid HTTP header name"},
		{subscriptions.Input{URL: str("https://example.com/"), Headers: &map[string]string{"Webhook-Signature": "x"}}, "headers", `custom header "Webhook-Signature" is set by Hookline`, "by the webhook service itself"},
		{subscriptions.Input{URL: str("https://example.com/"), Headers: &map[string]string{"X-A": "a\nb"}}, "headers", `custom header "X-A" has an invalid value`, "control characters"},
		{subscriptions.Input{URL: str("https://example.com/"), RateLimitPerSecond: num(10001)}, "rate_limit_per_second", "rate_limit_per_second must be between 1 and 10000", "1 to 10000"},
		{subscriptions.Input{URL: str("https://example.com/"), RateLimitPerSecond: num(0)}, "rate_limit_per_second", "rate_limit_per_second must be between 1 and 10000, or null", "1 to 10000, or leave it empty for no limit"},
		{subscriptions.Input{URL: str("https://example.com/"), EventTypes: &[]string{"bad type"}}, "event_types", `event type "bad type" is not valid`, `"bad type"`},
		{subscriptions.Input{URL: str("https://example.com/"), Description: str(strings.Repeat("d", 501))}, "description", "description is longer than 500", "longer than 500"},
	}
	for _, c := range cases {
		_, _, err := svc.Create(ctx, tn, c.in)
		var fe *subscriptions.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%+v: %v, want a FieldError", c.in, err)
			continue
		}
		if fe.Field != c.field || !strings.Contains(fe.Message, c.people) {
			t.Errorf("%+v: field %q message %q, want %q saying %q", c.in, fe.Field, fe.Message, c.field, c.people)
		}
		if f := fault.As(err); f == nil || f.Code != fault.InvalidRequest || !strings.HasPrefix(f.Message, c.api) {
			t.Errorf("%+v: the API's fault %v, want INVALID_REQUEST %q", c.in, f, c.api)
		}
		if c.field == "url" && strings.Contains(fe.Message, "HOOKLINE_") {
			t.Errorf("the customer's message names the server's settings: %q", fe.Message)
		}
	}
	if all, _ := svc.List(ctx, tn); len(all) != 0 {
		t.Errorf("%d subscriptions saved from refused creates", len(all))
	}
}

// The dashboard's edit form never shows stored header values: with KeepHeaderValues an empty value keeps
// the stored one, a new value replaces it, a header left out is removed. Without it (the API) an empty
// value is stored as given.
func TestUpdateKeepsEmptyHeaderValues(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool := selfServicePool(t)
	svc := subscriptions.NewService(pool, time.Now, true)
	box := parseBox(t, secretbox.NewKey())
	svc.UseKeys(box)
	tn := newTenantID(t, pool, "keep headers")
	url := "https://example.com/hook"
	h := map[string]string{"X-Api-Key": "key-1", "X-Env": "prod", "X-Gone": "bye"}
	s, _, err := svc.Create(ctx, tn, subscriptions.Input{URL: &url, Headers: &h})
	if err != nil {
		t.Fatal(err)
	}
	edit := map[string]string{"x-api-key": "", "X-Env": "staging", "X-New": ""}
	got, err := svc.Update(ctx, tn, s.ID, subscriptions.Input{Headers: &edit, KeepHeaderValues: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.HeaderNames) != "[X-Api-Key X-Env X-New]" {
		t.Errorf("header names %v", got.HeaderNames)
	}
	openHeaders := func() map[string]string {
		t.Helper()
		_, h := stored(t, pool, s.ID)
		_, plain := openAll(t, box, nil, h)
		return plain
	}
	values := openHeaders()
	if values["X-Api-Key"] != "key-1" || values["X-Env"] != "staging" || values["X-New"] != "" || len(values) != 3 {
		t.Errorf("stored values %v, want the key kept, X-Env changed, X-New empty, X-Gone removed", values)
	}
	// The API's PATCH stores an empty value as given.
	api := map[string]string{"X-Api-Key": ""}
	if _, err := svc.Update(ctx, tn, s.ID, subscriptions.Input{Headers: &api}); err != nil {
		t.Fatal(err)
	}
	if v := openHeaders(); v["X-Api-Key"] != "" || len(v) != 1 {
		t.Errorf("after the API's PATCH: %v", v)
	}
	// Another tenant's subscription is not found, and nothing changes.
	if _, err := svc.Update(ctx, newTenantID(t, pool, "keep other"), s.ID, subscriptions.Input{Headers: &edit, KeepHeaderValues: true}); !fault.Is(err, fault.NotFound) {
		t.Errorf("another tenant's update: %v, want NOT_FOUND", err)
	}
}

// Secrets lists the secrets valid now, newest first, with when a rotated-out one stops; an expired one
// is not listed, another tenant's subscription is NOT_FOUND.
func TestSecretsValidNow(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool := selfServicePool(t)
	now := time.Now()
	clock := func() time.Time { return now }
	svc := subscriptions.NewService(pool, clock, true)
	tn := newTenantID(t, pool, "secrets")
	url := "https://example.com/hook"
	s, first, err := svc.Create(ctx, tn, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.Secrets(ctx, tn, s.ID)
	if err != nil || len(got) != 1 || got[0].Secret != first || got[0].ExpiresAt != nil {
		t.Fatalf("before rotation: %+v %v", got, err)
	}
	second, err := svc.RotateSecret(ctx, tn, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err = svc.Secrets(ctx, tn, s.ID)
	if err != nil || len(got) != 2 || got[0].Secret != second || got[0].ExpiresAt != nil || got[1].Secret != first {
		t.Fatalf("after rotation: %+v %v", got, err)
	}
	if got[1].ExpiresAt == nil || !got[1].ExpiresAt.Equal(now.Add(subscriptions.SecretOverlap).Truncate(time.Microsecond)) {
		t.Errorf("the old secret expires at %v, want %v", got[1].ExpiresAt, now.Add(subscriptions.SecretOverlap))
	}
	now = now.Add(subscriptions.SecretOverlap + time.Second)
	if got, err = svc.Secrets(ctx, tn, s.ID); err != nil || len(got) != 1 || got[0].Secret != second {
		t.Errorf("a day later: %+v %v", got, err)
	}
	if _, err := svc.Secrets(ctx, newTenantID(t, pool, "secrets other"), s.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("another tenant's: %v, want NOT_FOUND", err)
	}
}
