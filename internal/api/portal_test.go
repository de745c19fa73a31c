package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
)

type portalLink struct {
	URL              string    `json:"url"`
	ExpiresAt        time.Time `json:"expires_at"`
	SessionExpiresAt time.Time `json:"session_expires_at"`
}

// Portal links: admin or portal:write only, the tenant's own only, the body's fields checked; the answer's
// url holds a 256-bit token of which only the hash is stored.
func TestPortalLinkStatuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly, func(c *config.Config) { c.PublicURL = "https://hooks.example.com/" })
	tenant, other := e.newTenant("portal"), e.newTenant("portal-other")
	writer := e.newToken(tenant, append([]string{"portal:write"}, manageScopes...)...)
	reader := e.newToken(tenant, "subscriptions:read", "subscriptions:write", "deliveries:write")
	otherWriter := e.newToken(other, append([]string{"portal:write"}, manageScopes...)...)
	path := "/tenants/" + tenant + "/portal-links"

	before := time.Now()
	l := must[portalLink](e, 201, "POST", path, adminToken, nil) // no body: every default
	token, ok := strings.CutPrefix(l.URL, "https://hooks.example.com/portal/")
	if !ok {
		t.Fatalf("url %q, want https://hooks.example.com/portal/<token>", l.URL)
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < 16 {
		t.Fatalf("token %q: %d random bytes (%v), want at least 16 in base64url", token, len(raw), err)
	}
	if d := l.ExpiresAt.Sub(before); d < 9*time.Minute || d > 11*time.Minute {
		t.Errorf("expires_at %v: %v from now, want 10 min", l.ExpiresAt, d)
	}
	if d := l.SessionExpiresAt.Sub(before); d < 24*time.Hour-time.Minute || d > 24*time.Hour+time.Minute {
		t.Errorf("session_expires_at %v: %v from now, want the default 24 h", l.SessionExpiresAt, d)
	}
	var stored int
	sum := sha256.Sum256([]byte(token))
	if err := e.srv.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM portal_links WHERE token_hash = $1 AND strpos(encode(token_hash, 'escape'), $2) = 0`,
		sum[:], token).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("stored hash rows: %d (%v), want the link stored as its SHA-256 only", stored, err)
	}

	full := map[string]any{"role": "view", "theme": "dark", "session_ttl_seconds": 604800,
		"user": map[string]any{"id": strings.Repeat("u", 128), "email": "ann@example.com", "name": "Ann"}}
	l = must[portalLink](e, 201, "POST", path, writer, full)
	if d := l.SessionExpiresAt.Sub(before); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour+time.Minute {
		t.Errorf("session_expires_at %v with a week's ttl", l.SessionExpiresAt)
	}
	must[portalLink](e, 201, "POST", path, writer, map[string]any{"session_ttl_seconds": 1, "role": "manage", "theme": "light"})
	must[portalLink](e, 201, "POST", path, writer, "{}")

	for name, body := range map[string]any{
		"bad role":       map[string]any{"role": "admin"},
		"bad theme":      map[string]any{"theme": "blue"},
		"ttl 0":          map[string]any{"session_ttl_seconds": 0},
		"ttl too long":   map[string]any{"session_ttl_seconds": 604801},
		"ttl not number": map[string]any{"session_ttl_seconds": "60"},
		"long user id":   map[string]any{"user": map[string]any{"id": strings.Repeat("u", 129)}},
		"long email":     map[string]any{"user": map[string]any{"email": strings.Repeat("e", 255)}},
		"long name":      map[string]any{"user": map[string]any{"name": strings.Repeat("n", 201)}},
		"unknown field":  map[string]any{"rol": "view"},
		"not an object":  "[1]",
	} {
		wantError(t, name, e.call("POST", path, writer, body), "INVALID_REQUEST")
	}
	wantError(t, "no token", e.call("POST", path, "", nil), "UNAUTHENTICATED")
	wantError(t, "wrong token", e.call("POST", path, "hl_nope", nil), "UNAUTHENTICATED")
	wantError(t, "token without portal:write", e.call("POST", path, reader, nil), "FORBIDDEN")
	wantError(t, "another tenant's token", e.call("POST", path, otherWriter, nil), "NOT_FOUND")
	wantError(t, "unknown tenant", e.call("POST", "/tenants/00000000-0000-0000-0000-000000000001/portal-links", adminToken, nil), "NOT_FOUND")
	wantError(t, "malformed tenant", e.call("POST", "/tenants/nope/portal-links", adminToken, nil), "NOT_FOUND")

	sessions := "/tenants/" + tenant + "/portal-sessions"
	if r := e.call("DELETE", sessions, writer, nil); r.status != 204 {
		t.Errorf("end sessions with portal:write: %s, want 204", r)
	}
	if r := e.call("DELETE", sessions, adminToken, nil); r.status != 204 {
		t.Errorf("end sessions as admin: %s, want 204", r)
	}
	wantError(t, "end sessions without token", e.call("DELETE", sessions, "", nil), "UNAUTHENTICATED")
	wantError(t, "end sessions without portal:write", e.call("DELETE", sessions, reader, nil), "FORBIDDEN")
	wantError(t, "end another tenant's sessions", e.call("DELETE", sessions, otherWriter, nil), "NOT_FOUND")
	wantError(t, "end an unknown tenant's sessions", e.call("DELETE", "/tenants/00000000-0000-0000-0000-000000000001/portal-sessions", adminToken, nil), "NOT_FOUND")
}

// manageScopes are what a manage session can do; a view session, viewScopes.
var (
	manageScopes = []string{"subscriptions:read", "subscriptions:write", "deliveries:read", "deliveries:write", "events:write"}
	viewScopes   = []string{"subscriptions:read", "deliveries:read"}
)

// A link grants no more than the token that made it: portal:write alone makes no link (it still ends
// sessions), a view link needs the read scopes, a manage link every scope a manage session uses; the
// refusal is 403 FORBIDDEN naming what the token lacks, and nothing is made. The admin makes any link.
func TestPortalLinkNeedsTheScopesItGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tenant := e.newTenant("portal scopes")
	path := "/tenants/" + tenant + "/portal-links"
	portalOnly := e.newToken(tenant, "portal:write")
	viewer := e.newToken(tenant, append([]string{"portal:write"}, viewScopes...)...)
	allButEvents := e.newToken(tenant, "portal:write", "subscriptions:read", "subscriptions:write", "deliveries:read", "deliveries:write")
	manager := e.newToken(tenant, append([]string{"portal:write"}, manageScopes...)...)

	for _, c := range []struct {
		what, token, role, lacks string
	}{
		{"portal:write alone, manage (the default)", portalOnly, "", "lacks subscriptions:read, subscriptions:write, deliveries:read, deliveries:write, events:write"},
		{"portal:write alone, view", portalOnly, "view", "lacks subscriptions:read, deliveries:read"},
		{"read scopes, manage", viewer, "manage", "lacks subscriptions:write, deliveries:write, events:write"},
		{"all but events:write, manage", allButEvents, "manage", "lacks events:write"},
	} {
		body := map[string]any{}
		if c.role != "" {
			body["role"] = c.role
		}
		got := wantError(t, c.what, e.call("POST", path, c.token, body), "FORBIDDEN")
		if !strings.Contains(got.Error.Message, c.lacks) {
			t.Errorf("%s: message %q, want it to say %q", c.what, got.Error.Message, c.lacks)
		}
	}
	var links int
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM portal_links WHERE tenant_id = $1`, tenant).Scan(&links); err != nil || links != 0 {
		t.Fatalf("links after refusals: %d (%v), want none", links, err)
	}
	must[portalLink](e, 201, "POST", path, viewer, map[string]any{"role": "view"})
	must[portalLink](e, 201, "POST", path, allButEvents, map[string]any{"role": "view"})
	must[portalLink](e, 201, "POST", path, manager, nil)
	must[portalLink](e, 201, "POST", path, manager, map[string]any{"role": "view"})
	must[portalLink](e, 201, "POST", path, adminToken, nil)
	if r := e.call("DELETE", "/tenants/"+tenant+"/portal-sessions", portalOnly, nil); r.status != 204 {
		t.Errorf("portal:write alone ends sessions: %s, want 204", r)
	}
}
