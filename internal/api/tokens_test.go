package api_test

import (
	"strings"
	"testing"
	"time"
)

// Tokens are listed without their value, show when they were last used, and a revoked token stops
// working at once. Only admins manage them; another tenant's token is a 404.
func TestTokensListAndRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tenant, other := e.newTenant("tokens"), e.newTenant("tokens-other")
	used := e.newToken(tenant, "deliveries:read")
	unused := e.newToken(tenant, "events:write")
	otherToken := e.newToken(other, "deliveries:read")

	if r := e.call("GET", "/tenants/"+tenant+"/deliveries", used, nil); r.status != 200 {
		t.Fatalf("token before revocation: %s", r)
	}
	type token struct {
		ID         string     `json:"id"`
		Name       string     `json:"name"`
		Scopes     []string   `json:"scopes"`
		CreatedAt  time.Time  `json:"created_at"`
		LastUsedAt *time.Time `json:"last_used_at"`
	}
	list := func(tenantID string) []token {
		return must[struct {
			Items []token `json:"items"`
		}](e, 200, "GET", "/tenants/"+tenantID+"/tokens", adminToken, nil).Items
	}
	r := e.call("GET", "/tenants/"+tenant+"/tokens", adminToken, nil)
	if strings.Contains(string(r.body), used) || strings.Contains(string(r.body), unused) || strings.Contains(string(r.body), "token_hash") {
		t.Fatalf("the list shows a token's value: %s", r)
	}
	toks := list(tenant)
	if len(toks) != 2 {
		t.Fatalf("tokens: %+v, want 2", toks)
	}
	var usedID, unusedID string
	for _, tk := range toks {
		switch tk.Scopes[0] {
		case "deliveries:read":
			usedID = tk.ID
			if tk.LastUsedAt == nil || time.Since(*tk.LastUsedAt) > time.Minute {
				t.Errorf("used token: last_used_at %v, want just now", tk.LastUsedAt)
			}
		case "events:write":
			unusedID = tk.ID
			if tk.LastUsedAt != nil {
				t.Errorf("unused token: last_used_at %v, want null", tk.LastUsedAt)
			}
		}
	}

	// Only admins, and only the tenant's own tokens.
	wantError(t, "tenant token lists tokens", e.call("GET", "/tenants/"+tenant+"/tokens", used, nil), "FORBIDDEN")
	wantError(t, "tenant token revokes", e.call("DELETE", "/tenants/"+tenant+"/tokens/"+unusedID, used, nil), "FORBIDDEN")
	wantError(t, "another tenant's token", e.call("DELETE", "/tenants/"+other+"/tokens/"+usedID, adminToken, nil), "NOT_FOUND")
	wantError(t, "malformed id", e.call("DELETE", "/tenants/"+tenant+"/tokens/nope", adminToken, nil), "NOT_FOUND")

	if r := e.call("DELETE", "/tenants/"+tenant+"/tokens/"+usedID, adminToken, nil); r.status != 204 {
		t.Fatalf("revoke: %s", r)
	}
	wantError(t, "revoked token", e.call("GET", "/tenants/"+tenant+"/deliveries", used, nil), "UNAUTHENTICATED")
	wantError(t, "revoking twice", e.call("DELETE", "/tenants/"+tenant+"/tokens/"+usedID, adminToken, nil), "NOT_FOUND")
	if toks := list(tenant); len(toks) != 1 || toks[0].ID != unusedID {
		t.Fatalf("after revocation: %+v, want only the unused token", toks)
	}
	if r := e.call("GET", "/tenants/"+other+"/deliveries", otherToken, nil); r.status != 200 {
		t.Fatalf("another tenant's token stopped working: %s", r)
	}
}

// A revoked token gets 401 from every process on the database as soon as the DELETE answered, though
// the other process had just found it valid (and keeps such a token for 2 s rather than looking it up on
// every request): two servers, no waiting.
func TestRevokedTokenRefusedByEveryProcessAtOnce(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t, httpOnly), newEnv(t, httpOnly)
	tenant := a.newTenant("revoked everywhere")
	token := a.newToken(tenant, "deliveries:read")
	list := "/tenants/" + tenant + "/deliveries"
	for _, e := range []*env{a, b, b} {
		if r := e.call("GET", list, token, nil); r.status != 200 {
			t.Fatalf("before the revocation: %s", r)
		}
	}
	id := must[struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}](a, 200, "GET", "/tenants/"+tenant+"/tokens", adminToken, nil).Items[0].ID
	if r := a.call("DELETE", "/tenants/"+tenant+"/tokens/"+id, adminToken, nil); r.status != 204 {
		t.Fatalf("revoke: %s", r)
	}
	wantError(t, "the other process, right after the 204", b.call("GET", list, token, nil), "UNAUTHENTICATED")
	wantError(t, "the revoking process", a.call("GET", list, token, nil), "UNAUTHENTICATED")
}
