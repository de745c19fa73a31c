package tenants

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "tenants", func(u string) { dbURL = u }) }

func newService(t *testing.T, adminToken string) (*Service, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxuuid.NewPool(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return NewService(pool, adminToken), pool
}

func TestValidateLogin(t *testing.T) {
	t.Parallel()
	const good = "amber walrus canoe"
	for _, c := range []struct {
		email, password string
		ok              bool
	}{
		{"a@example.com", good, true},
		{" a@example.com ", good, true},
		{"a@example.com", "zq8-Lw3r-Ph", true},
		{"a@example.com", "", false},
		{"", good, false},
		{"nope", good, false},
		{"A <a@example.com>", good, false},
		{"a\x00@example.com", good, false},
		{strings.Repeat("a", 250) + "@example.com", good, false},
	} {
		_, err := validateLogin(c.email, c.password)
		if (err == nil) != c.ok {
			t.Errorf("validateLogin(%q, %q) = %v, want ok=%v", c.email, c.password, err, c.ok)
		}
	}
}

// Passwords: counted in characters, at most bcrypt's 72 bytes, text a person can type (no control
// characters, no invalid UTF-8), and not easy to guess; each refusal says which rule it broke.
func TestValidatePassword(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		password string
		want     string // a part of the message; "" for accepted
	}{
		{"amber walrus canoe", ""},
		{"zq8-Lw3r-Ph", ""},
		{"grüne Möwe über Kiel", ""},         // 20 characters, 23 bytes
		{"多摩川の河原で凧揚げ", ""},                   // 10 characters, 30 bytes
		{strings.Repeat("zq8-Lw3r-", 8), ""}, // 72 bytes
		{strings.Repeat("zq8-Lw3r-", 8) + "x", "at most 72 bytes"},
		{strings.Repeat("ü", 37), "at most 72 bytes"}, // 37 characters, 74 bytes
		{"zq8-Lw3r", "at least 10 characters; it has 8"},
		{"ébène€ü", "at least 10 characters; it has 7"}, // 13 bytes, 7 characters
		{"amber walrus\x00canoe", "control characters"},
		{"amber\twalrus canoe", "control characters"},
		{"amber walrus canoe\n", "control characters"},
		{"amber walrus\x7fcanoe", "control characters"},
		{"amber walrus\u0085canoe", "control characters"},
		{"amber walrus \xff canoe", "valid UTF-8"},
		{"amber walrus \uFFFD canoe", "valid UTF-8"},
		{strings.Repeat(" ", 10), "only spaces"},
		{" \u3000 \u00a0  \u2003    ", "only spaces"},
		{"password12", "too easy to guess"},
		{"Password123!", "too easy to guess"},
		{"0123456789", "too easy to guess"},
		{"qwertyuiop", "too easy to guess"},
		{"aaaaaaaaaaaa", "too easy to guess"},
		{"hookline2024", "too easy to guess"},
		{"ann.smith1987", "too easy to guess"}, // the account's own email
	} {
		err := validatePassword("ann.smith1987@example.com", c.password)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("validatePassword(%q) = %v, want accepted", c.password, err)
		case c.want != "" && (!fault.Is(err, fault.InvalidRequest) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("validatePassword(%q) = %v, want INVALID_REQUEST saying %q", c.password, err, c.want)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	// Not parallel: it listens for revocations, and a revocation another test makes meanwhile would keep
	// its lookup out of the cache (a revocation heard during a lookup does), which it times.
	ctx := activity.System(t.Context(), "test setup")
	s, pool := newService(t, "the-admin-token")
	tn, err := s.CreateTenant(ctx, "  auth tenant  ")
	if err != nil || tn.Name != "auth tenant" {
		t.Fatalf("create tenant: %+v %v", tn, err)
	}
	tok, err := s.CreateToken(ctx, tn.ID, "ci", []string{ScopeEventsWrite, ScopeDeliveriesRead})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Token, TokenPrefix) || len(tok.Token) < 40 {
		t.Errorf("token %q", tok.Token)
	}
	// Only the SHA-256 is stored.
	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT token_hash FROM api_tokens WHERE id = $1`, tok.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(tok.Token))
	if string(stored) != string(sum[:]) {
		t.Error("stored token hash is not the token's SHA-256")
	}
	var plain int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE position($1::bytea in token_hash) > 0`, []byte(tok.Token)).Scan(&plain)
	if plain != 0 {
		t.Error("the token is stored in plain")
	}
	checkAuthenticate(t, s, tn, tok)
	checkTokenCache(t, s, pool, tn, tok)
	// Without HOOKLINE_ADMIN_TOKEN an empty token is not the admin.
	none, _ := newService(t, "")
	if _, err := none.Authenticate(ctx, ""); !fault.Is(err, fault.Unauthenticated) {
		t.Errorf("empty token with no admin token: %v", err)
	}
}

// checkAuthenticate: the tenant token and the admin token authenticate, anything near them does not.
func checkAuthenticate(t *testing.T, s *Service, tn Tenant, tok CreatedToken) {
	ctx := activity.System(t.Context(), "test setup")
	p, err := s.Authenticate(ctx, tok.Token)
	if err != nil || p.Admin || p.TenantID != tn.ID || len(p.Scopes) != 2 || p.AuditName() != "token:ci" {
		t.Errorf("Authenticate(tenant token) = %+v, %v", p, err)
	}
	if p, err := s.Authenticate(ctx, "the-admin-token"); err != nil || !p.Admin {
		t.Errorf("Authenticate(admin) = %+v, %v", p, err)
	}
	for _, bad := range []string{"", "nope", tok.Token + "x", strings.TrimPrefix(tok.Token, TokenPrefix), strings.ToUpper(tok.Token), "the-admin-token ", "the-admin-toke"} {
		if _, err := s.Authenticate(ctx, bad); !fault.Is(err, fault.Unauthenticated) {
			t.Errorf("Authenticate(%q) = %v, want UNAUTHENTICATED", bad, err)
		}
	}
}

// checkTokenCache: without a revocation listener nothing is cached; with one, a token is trusted from the
// cache for at most knownFor, and one revoked through this process is unknown at once.
func checkTokenCache(t *testing.T, s *Service, pool *pgxpool.Pool, tn Tenant, tok CreatedToken) {
	ctx := activity.System(t.Context(), "test setup")
	// Without a listener nothing is cached: every request looks its token up.
	if _, err := pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, tok.Token); !fault.Is(err, fault.Unauthenticated) {
		t.Errorf("a token revoked in SQL, no listener: %v, want UNAUTHENTICATED", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = NULL WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	// With one, a token revoked behind the service's back (in SQL, without its NOTIFY) is trusted from the
	// cache for at most knownFor, then unknown.
	s.StartListening(ctx)
	t.Cleanup(s.StopListening)
	if !s.listener.live() {
		t.Fatal("the listener did not connect")
	}
	now := time.Now()
	s.Now = func() time.Time { return now }
	if _, err := s.Authenticate(ctx, tok.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(knownFor - time.Millisecond)
	if _, err := s.Authenticate(ctx, tok.Token); err != nil {
		t.Errorf("a token found valid %v ago was looked up again: %v", knownFor-time.Millisecond, err)
	}
	now = now.Add(time.Millisecond)
	if _, err := s.Authenticate(ctx, tok.Token); !fault.Is(err, fault.Unauthenticated) {
		t.Errorf("revoked token after %v: %v, want UNAUTHENTICATED", knownFor, err)
	}
	// A token revoked through this process is unknown at once.
	tok2, err := s.CreateToken(ctx, tn.ID, "ci2", []string{ScopeEventsWrite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, tok2.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeToken(ctx, tn.ID, tok2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, tok2.Token); !fault.Is(err, fault.Unauthenticated) {
		t.Errorf("token revoked through this process: %v, want UNAUTHENTICATED", err)
	}
}

func TestCreateTokenAndTenantValidation(t *testing.T) {
	t.Parallel()
	ctx := activity.System(t.Context(), "test setup")
	s, _ := newService(t, "")
	tn, err := s.CreateTenant(ctx, "validation")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "   ", strings.Repeat("n", 201), "a\x00b", "\xff"} {
		if _, err := s.CreateTenant(ctx, name); !fault.Is(err, fault.InvalidRequest) {
			t.Errorf("CreateTenant(%q) = %v", name, err)
		}
		if _, err := s.CreateToken(ctx, tn.ID, name, []string{ScopeEventsWrite}); !fault.Is(err, fault.InvalidRequest) {
			t.Errorf("CreateToken(name %q) = %v", name, err)
		}
	}
	for _, scopes := range [][]string{nil, {}, {"admin"}, {ScopeEventsWrite, "events:read"}, {""}} {
		if _, err := s.CreateToken(ctx, tn.ID, "x", scopes); !fault.Is(err, fault.InvalidRequest) {
			t.Errorf("CreateToken(scopes %q) = %v", scopes, err)
		}
	}
	if _, err := s.CreateToken(ctx, uuid.New(), "x", []string{ScopeEventsWrite}); !fault.Is(err, fault.NotFound) {
		t.Errorf("token for an unknown tenant: %v", err)
	}
	email := "u-" + tn.ID.String() + "@example.com" // unique per run, so -count=N works on one database
	if _, err := s.CreateUser(ctx, tn.ID, email, "zq8-Lw3r-Ph"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, tn.ID, strings.ToUpper(email[:1])+email[1:], "zq8-Lw3r-Ph"); !fault.Is(err, fault.InvalidState) {
		t.Errorf("duplicate email (other case): %v, want INVALID_STATE", err)
	}
	if _, err := s.CreateUser(ctx, uuid.New(), "v@example.com", "zq8-Lw3r-Ph"); !fault.Is(err, fault.NotFound) {
		t.Errorf("user for an unknown tenant: %v", err)
	}
}

// An operator lists, re-passwords and removes a tenant's users; never another tenant's, never an operator.
func TestManageUsers(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, "")
	ctx := activity.System(context.Background(), "test setup")
	a, err := s.CreateTenant(ctx, "users-a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.CreateTenant(ctx, "users-b")
	ua, err := s.CreateUser(ctx, a.ID, "zed@users-a.example", "first password")
	if err != nil {
		t.Fatal(err)
	}
	ua2, _ := s.CreateUser(ctx, a.ID, "amy@users-a.example", "first password")
	ub, _ := s.CreateUser(ctx, b.ID, "bob@users-b.example", "first password")
	if err := s.EnsureAdminUser(ctx, "ops@users.example", "operator password"); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListUsers(ctx, a.ID)
	if err != nil || len(list) != 2 || list[0].Email != "amy@users-a.example" || list[1].ID != ua.ID || list[0].CreatedAt.IsZero() {
		t.Fatalf("ListUsers = %+v, %v; want amy then zed", list, err)
	}
	if _, err := s.ListUsers(ctx, uuid.New()); !fault.Is(err, fault.NotFound) {
		t.Errorf("ListUsers of an unknown tenant: %v", err)
	}

	if err := s.SetPassword(ctx, a.ID, ua.ID, "short"); !fault.Is(err, fault.InvalidRequest) {
		t.Errorf("a short password: %v", err)
	}
	if err := s.SetPassword(ctx, a.ID, ub.ID, "second password"); !fault.Is(err, fault.NotFound) {
		t.Errorf("another tenant's user: %v", err)
	}
	if err := s.SetPassword(ctx, a.ID, ua.ID, "second password"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckLogin(ctx, ua.Email, "first password"); !errors.Is(err, ErrBadLogin) {
		t.Errorf("the old password still works: %v", err)
	}
	if _, err := s.CheckLogin(ctx, ua.Email, "second password"); err != nil {
		t.Errorf("the new password: %v", err)
	}

	if err := s.RemoveUser(ctx, a.ID, ub.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("removing another tenant's user: %v", err)
	}
	admin, _ := s.CheckLogin(ctx, "ops@users.example", "operator password")
	if err := s.RemoveUser(ctx, a.ID, admin.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("removing an operator: %v", err)
	}
	if err := s.RemoveUser(ctx, a.ID, ua2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUser(ctx, ua2.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("a removed user is still there: %v", err)
	}
	if err := s.RemoveUser(ctx, a.ID, ua2.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("removing twice: %v", err)
	}
	if _, err := s.GetUser(ctx, ub.ID); err != nil {
		t.Errorf("the other tenant's user: %v", err)
	}
}
