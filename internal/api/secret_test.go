package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/tenants"
)

type secretsReply struct {
	Secrets []struct {
		Secret    string     `json:"secret"`
		ExpiresAt *time.Time `json:"expires_at"`
	} `json:"secrets"`
}

// GET .../secret answers the secrets valid now, newest first, to subscriptions:write only; another
// tenant's subscription (by its path or one's own) is NOT_FOUND and shows nothing of it.
func TestGetSubscriptionSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn, other := e.newTenant("secrets"), e.newTenant("secrets other")
	s := e.newSubscription(tn, map[string]any{"url": "https://example.com/hook"})
	theirs := e.newSubscription(other, map[string]any{"url": "https://example.com/theirs"})
	write := e.newToken(tn, tenants.ScopeSubscriptionsWrite)
	read := e.newToken(tn, tenants.ScopeSubscriptionsRead)
	path := "/tenants/" + tn + "/subscriptions/" + s.ID + "/secret"

	got := must[secretsReply](e, 200, "GET", path, write, nil)
	if len(got.Secrets) != 1 || got.Secrets[0].Secret != s.Secret || got.Secrets[0].ExpiresAt != nil {
		t.Fatalf("before rotation: %+v, want the create's secret without expiry", got)
	}
	before := time.Now()
	rot := must[struct {
		Secret string `json:"secret"`
	}](e, 200, "POST", "/tenants/"+tn+"/subscriptions/"+s.ID+"/rotate-secret", write, nil)
	got = must[secretsReply](e, 200, "GET", path, write, nil)
	if len(got.Secrets) != 2 || got.Secrets[0].Secret != rot.Secret || got.Secrets[0].ExpiresAt != nil || got.Secrets[1].Secret != s.Secret {
		t.Fatalf("after rotation: %+v, want the new secret then the old one", got)
	}
	if exp := got.Secrets[1].ExpiresAt; exp == nil || exp.Before(before.Add(24*time.Hour-time.Minute)) || exp.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("the old secret expires at %v, want in 24 h", exp)
	}

	wantError(t, "GET secret with subscriptions:read", e.call("GET", path, read, nil), "FORBIDDEN")
	for what, p := range map[string]string{
		"another tenant's subscription under one's own tenant": "/tenants/" + tn + "/subscriptions/" + theirs.ID + "/secret",
		"another tenant's path":                                "/tenants/" + other + "/subscriptions/" + theirs.ID + "/secret",
	} {
		r := e.call("GET", p, write, nil)
		wantError(t, what, r, "NOT_FOUND")
		if strings.Contains(string(r.body), theirs.Secret) {
			t.Errorf("%s: the answer holds the other tenant's secret", what)
		}
	}
}

// The API refuses a subscription past HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT with 400 INVALID_REQUEST
// saying so; a deleted one makes room.
func TestSubscriptionLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly, func(c *config.Config) { c.MaxSubscriptions = 2 })
	tn := e.newTenant("limit")
	a := e.newSubscription(tn, map[string]any{"url": "https://example.com/a"})
	e.newSubscription(tn, map[string]any{"url": "https://example.com/b"})
	r := e.call("POST", "/tenants/"+tn+"/subscriptions", adminToken, map[string]any{"url": "https://example.com/c"})
	if er := wantError(t, "the third subscription", r, "INVALID_REQUEST"); !strings.Contains(er.Error.Message, "already has 2 subscriptions") {
		t.Errorf("the refusal says %q", er.Error.Message)
	}
	if r.status != 400 {
		t.Errorf("status %d, want 400", r.status)
	}
	e.call("DELETE", "/tenants/"+tn+"/subscriptions/"+a.ID, adminToken, nil)
	e.newSubscription(tn, map[string]any{"url": "https://example.com/c"})
}
