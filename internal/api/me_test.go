package api_test

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"testing"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/tenants"
)

// GET /me tells any valid token who it is: its tenant (null for an admin), its scopes and its id (null for
// HOOKLINE_ADMIN_TOKEN), so a client holding only a token finds its tenant.
func TestMe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tenant := e.newTenant("me")
	created := must[struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}](e, 201, "POST", "/tenants/"+tenant+"/tokens", adminToken, map[string]any{"name": "me", "scopes": []string{"events:write", "deliveries:read"}})

	// An admin API token: stored without a tenant (made by the operator, not through the API).
	const storedAdmin = "hl_me-test-stored-admin-token"
	hash := sha256.Sum256([]byte(storedAdmin))
	row, err := db.New(e.srv.Pool).CreateAPIToken(t.Context(), db.CreateAPITokenParams{Name: "operator", TokenHash: hash[:], Scopes: []string{}})
	if err != nil {
		t.Fatalf("store an admin token: %v", err)
	}
	everything := append([]string{"admin"}, tenants.AllScopes...)

	for _, c := range []struct {
		what, token       string
		tenantID, tokenID string // "" for null
		scopes            []string
	}{
		{"tenant token", created.Token, tenant, created.ID, []string{"events:write", "deliveries:read"}},
		{"HOOKLINE_ADMIN_TOKEN", adminToken, "", "", everything},
		{"stored admin token", storedAdmin, "", row.ID.String(), everything},
	} {
		r := e.call("GET", "/me", c.token, nil)
		if r.status != 200 {
			t.Fatalf("%s: %s", c.what, r)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &raw); err != nil {
			t.Fatalf("%s: %v in %s", c.what, err, r)
		}
		if len(raw) != 3 {
			t.Errorf("%s: want exactly tenant_id, scopes and token_id, got %s", c.what, r.body)
		}
		for field, want := range map[string]string{"tenant_id": c.tenantID, "token_id": c.tokenID} {
			wantJSON := "null"
			if want != "" {
				wantJSON = `"` + want + `"`
			}
			if got := string(raw[field]); got != wantJSON {
				t.Errorf("%s: %s is %s, want %s", c.what, field, got, wantJSON)
			}
		}
		var scopes []string
		if err := json.Unmarshal(raw["scopes"], &scopes); err != nil || !slices.Equal(scopes, c.scopes) {
			t.Errorf("%s: scopes %s, want %q", c.what, raw["scopes"], c.scopes)
		}
	}

	// Any scope will do: a token holding only portal:write reads it too.
	if r := e.call("GET", "/me", e.newToken(tenant, "portal:write"), nil); r.status != 200 {
		t.Errorf("token with only portal:write: %s", r)
	}
	wantError(t, "no token", e.call("GET", "/me", "", nil), "UNAUTHENTICATED")
	wantError(t, "unknown token", e.call("GET", "/me", "hl_nobody", nil), "UNAUTHENTICATED")
	wantError(t, "POST", e.call("POST", "/me", adminToken, nil), "INVALID_REQUEST")
}
