// Package tenants owns tenants, their API tokens and scopes, and dashboard users.
package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/principal"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/bcrypt"
)

// Scopes a tenant token may hold (principal's, named here too for the callers that make tokens).
const (
	ScopeSubscriptionsRead  = principal.ScopeSubscriptionsRead
	ScopeSubscriptionsWrite = principal.ScopeSubscriptionsWrite
	ScopeEventsWrite        = principal.ScopeEventsWrite
	ScopeDeliveriesRead     = principal.ScopeDeliveriesRead
	ScopeDeliveriesWrite    = principal.ScopeDeliveriesWrite
	ScopePortalWrite        = principal.ScopePortalWrite
)

// AllScopes lists every tenant scope.
var AllScopes = principal.AllScopes

// Tenant is one customer account.
type Tenant struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Service manages tenants, tokens and users.
type Service struct {
	pool       *pgxpool.Pool
	q          *db.Queries
	adminToken string
	// Now is the clock (time.Now unless a test sets it).
	Now func() time.Time
	// Log reports the revocation listener's failures (slog.Default unless set).
	Log *slog.Logger
	// touched remembers when this process last wrote a token's last_used_at (uuid → time.Time).
	touched sync.Map
	// known caches recent successful token lookups (revocation.go).
	known tokenCache
	// listener is the revocation listener's state (revocation.go).
	listener listener
}

// NewService returns a Service. adminToken is HOOKLINE_ADMIN_TOKEN (empty: none).
func NewService(pool *pgxpool.Pool, adminToken string) *Service {
	return &Service{pool: pool, q: db.New(pool), adminToken: adminToken, Now: time.Now, Log: slog.Default(),
		known: tokenCache{entries: map[string]knownToken{}}}
}

// touchEvery is how stale last_used_at may get: it is written at most this often per token and process.
const touchEvery = time.Minute

// TokenPrefix starts every tenant token, so leaked tokens are easy to find by scanners.
const TokenPrefix = "hl_"

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Authenticate resolves a bearer token: HOOKLINE_ADMIN_TOKEN, or an API token (of a tenant, or an admin
// token stored without one).
func (s *Service) Authenticate(ctx context.Context, token string) (principal.Principal, error) {
	if token == "" {
		return principal.Principal{}, fault.New(fault.Unauthenticated, "missing bearer token")
	}
	if s.adminToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.adminToken)) == 1 {
		return principal.AdminToken(), nil
	}
	hash := hashToken(token)
	now := s.Now()
	if p, ok := s.known.get(string(hash), now, s.listener.live()); ok {
		return p, nil
	}
	gen := s.known.generation()
	row, err := s.q.GetAPITokenByHash(ctx, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return principal.Principal{}, fault.New(fault.Unauthenticated, "invalid bearer token")
	}
	if err != nil {
		return principal.Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	s.touch(ctx, row.ID)
	p := principal.Token(row.ID, row.Name, row.TenantID, row.Scopes)
	// Only tokens found valid are kept, so made-up tokens cannot fill the cache; and only while this
	// process hears of revocations, and none was heard while the lookup ran.
	if s.listener.live() {
		s.known.put(string(hash), knownToken{p: p, until: now.Add(knownFor)}, gen)
	}
	return p, nil
}

// touch writes a token's last_used_at unless this process did so within touchEvery. A failed write must
// not fail the request it rides on, so its error is dropped (the next use tries again).
func (s *Service) touch(ctx context.Context, id uuid.UUID) {
	now := s.Now()
	if last, ok := s.touched.Load(id); ok && now.Sub(last.(time.Time)) < touchEvery {
		return
	}
	if err := s.q.TouchAPIToken(ctx, db.TouchAPITokenParams{ID: id, Now: now}); err == nil {
		s.touched.Store(id, now)
	}
}

// Token is a tenant's API token as listed: never its value.
type Token struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// ListTokens lists a tenant's tokens that are not revoked, oldest first.
func (s *Service) ListTokens(ctx context.Context, tenantID uuid.UUID) ([]Token, error) {
	rows, err := s.q.ListAPITokens(ctx, &tenantID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]Token, 0, len(rows))
	for _, r := range rows {
		out = append(out, Token{ID: r.ID, Name: r.Name, Scopes: r.Scopes, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt})
	}
	return out, nil
}

// RevokeToken revokes a tenant's token at once: it returns when no process of the deployment accepts the
// token any more (revocation.go), so its next request anywhere is UNAUTHENTICATED, and the portal sessions
// started by links the token made have ended. An unknown, another tenant's or an already revoked token is
// NOT_FOUND.
func (s *Service) RevokeToken(ctx context.Context, tenantID, id uuid.UUID) error {
	nonce, acks := s.listener.await()
	defer s.listener.doneWith(nonce)
	details := map[string]any{}
	err := s.change(ctx, tenantID, activity.TokenRevoked, "token", details, func(q *db.Queries) (uuid.UUID, error) {
		now := s.Now()
		if _, err := q.RevokeAPIToken(ctx, db.RevokeAPITokenParams{ID: id, TenantID: &tenantID, Now: now}); err != nil {
			return id, err
		}
		// A portal link grants no more than the token that made it, and a revoked token grants nothing:
		// the sessions its links started end with it (and its links not used yet are voided).
		ended, err := q.EndTokenPortalSessions(ctx, db.EndTokenPortalSessionsParams{TokenID: &id, Now: now})
		if err != nil {
			return id, err
		}
		if ended > 0 {
			details["portal_links_ended"] = ended
		}
		return id, q.NotifyTokens(ctx, revokedPayload(id, nonce))
	})
	committed := time.Now()
	s.known.forget(id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Missing("token")
	}
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	s.awaitForgotten(ctx, committed, acks)
	return nil
}

// validText reports whether s can be stored as text: valid UTF-8 without NUL (PostgreSQL refuses both).
func validText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// CreateTenant adds a tenant.
func (s *Service) CreateTenant(ctx context.Context, name string) (Tenant, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 || !validText(name) {
		return Tenant{}, fault.Invalid("name must be 1 to 200 characters")
	}
	r, err := s.q.CreateTenant(ctx, name)
	if err != nil {
		return Tenant{}, fmt.Errorf("create tenant: %w", err)
	}
	return Tenant{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}, nil
}

// GetTenant returns one tenant.
func (s *Service) GetTenant(ctx context.Context, id uuid.UUID) (Tenant, error) {
	r, err := s.q.GetTenant(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, fault.Missing("tenant")
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("get tenant: %w", err)
	}
	return Tenant{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}, nil
}

// PruneSessions deletes the dashboard sessions that have expired (scs refuses them on read anyway).
func (s *Service) PruneSessions(ctx context.Context) (int64, error) {
	return s.q.DeleteExpiredSessions(ctx, s.Now())
}

// TenantByName returns the oldest tenant named name (names are not unique: the demo finds its own by name).
func (s *Service) TenantByName(ctx context.Context, name string) (Tenant, error) {
	r, err := s.q.GetTenantByName(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, fault.Missing("tenant")
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("tenant by name: %w", err)
	}
	return Tenant{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}, nil
}

// ListTenants returns every tenant, oldest first.
func (s *Service) ListTenants(ctx context.Context) ([]Tenant, error) {
	rows, err := s.q.ListTenants(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out := make([]Tenant, 0, len(rows))
	for _, r := range rows {
		out = append(out, Tenant{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt})
	}
	return out, nil
}

// CreatedToken is a new token; Token is shown only once.
type CreatedToken struct {
	ID     uuid.UUID `json:"id"`
	Token  string    `json:"token"`
	Name   string    `json:"name"`
	Scopes []string  `json:"scopes"`
}

// CreateToken issues a tenant token with the given scopes.
func (s *Service) CreateToken(ctx context.Context, tenantID uuid.UUID, name string, scopes []string) (CreatedToken, error) {
	if _, err := s.GetTenant(ctx, tenantID); err != nil {
		return CreatedToken{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 || !validText(name) {
		return CreatedToken{}, fault.Invalid("name must be 1 to 200 characters")
	}
	if len(scopes) == 0 {
		return CreatedToken{}, fault.Invalid("scopes must list at least one of %s", strings.Join(AllScopes, ", "))
	}
	for _, sc := range scopes {
		if !slices.Contains(AllScopes, sc) {
			return CreatedToken{}, fault.Invalid("unknown scope %q; scopes are %s", sc, strings.Join(AllScopes, ", "))
		}
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	var r db.ApiToken
	err := s.change(ctx, tenantID, activity.TokenCreated, "token", map[string]any{"name": name, "scopes": scopes},
		func(q *db.Queries) (_ uuid.UUID, err error) {
			r, err = q.CreateAPIToken(ctx, db.CreateAPITokenParams{TenantID: &tenantID, Name: name, TokenHash: hashToken(token), Scopes: scopes})
			return r.ID, err
		})
	if err != nil {
		return CreatedToken{}, fmt.Errorf("create token: %w", err)
	}
	return CreatedToken{ID: r.ID, Token: token, Name: name, Scopes: scopes}, nil
}

// User is a dashboard login.
type User struct {
	ID       uuid.UUID  `json:"id"`
	TenantID *uuid.UUID `json:"tenant_id"`
	Email    string     `json:"email"`
	Admin    bool       `json:"is_admin"`
	// PasswordStamp changes whenever an operator sets the user's password (SetPassword): a session
	// remembers the stamp it signed in with and ends when it no longer matches.
	PasswordStamp string `json:"-"`
}

// passwordStamp is a user's password version as a session keeps it: empty for the first, so that sessions
// signed in before stamps existed stay valid until a password is set.
func passwordStamp(version int32) string {
	if version == 0 {
		return ""
	}
	return strconv.Itoa(int(version))
}

func validateLogin(email, password string) (string, error) {
	email = strings.TrimSpace(email)
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 || !validText(email) {
		return "", fault.Invalid("email is not a valid address")
	}
	if err := validatePassword(email, password); err != nil {
		return "", err
	}
	return email, nil
}

// CreateUser adds a dashboard login for a tenant's customer.
func (s *Service) CreateUser(ctx context.Context, tenantID uuid.UUID, email, password string) (User, error) {
	email, err := validateLogin(email, password)
	if err != nil {
		return User{}, err
	}
	if _, err := s.GetTenant(ctx, tenantID); err != nil {
		return User{}, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return User{}, err
	}
	var r db.User
	err = s.change(ctx, tenantID, activity.UserCreated, "user", map[string]any{"email": email},
		func(q *db.Queries) (_ uuid.UUID, err error) {
			r, err = q.CreateUser(ctx, db.CreateUserParams{TenantID: &tenantID, Email: email, PasswordHash: string(hash)})
			return r.ID, err
		})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return User{}, fault.New(fault.InvalidState, "a user with this email already exists")
	}
	if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	return User{ID: r.ID, TenantID: r.TenantID, Email: r.Email, Admin: r.IsAdmin}, nil
}

// EnsureAdminUser creates or updates the operator login from HOOKLINE_ADMIN_EMAIL/PASSWORD.
func (s *Service) EnsureAdminUser(ctx context.Context, email, password string) error {
	return s.ensureUser(ctx, nil, email, password)
}

// EnsureTenantUser creates or updates a tenant customer's login, so a login printed at start (the demo's)
// works whatever the database held before.
func (s *Service) EnsureTenantUser(ctx context.Context, tenantID uuid.UUID, email, password string) error {
	return s.ensureUser(ctx, &tenantID, email, password)
}

// ensureUser upserts a login; no tenant means an admin.
func (s *Service) ensureUser(ctx context.Context, tenantID *uuid.UUID, email, password string) error {
	email, err := validateLogin(email, password)
	if err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	_, err = s.q.UpsertUser(ctx, db.UpsertUserParams{TenantID: tenantID, Email: email, PasswordHash: string(hash), IsAdmin: tenantID == nil})
	return err
}

// ErrBadLogin is returned for a wrong email or password, without saying which.
var ErrBadLogin = errors.New("invalid email or password")

// dummyHash is compared against when the email is unknown, so a login takes as long either way.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("hookline-dummy-password"), bcrypt.DefaultCost)

// CheckLogin verifies an email and password.
func (s *Service) CheckLogin(ctx context.Context, email, password string) (User, error) {
	r, err := s.q.GetUserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, pgx.ErrNoRows) {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return User{}, ErrBadLogin
	}
	if err != nil {
		return User{}, fmt.Errorf("check login: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(r.PasswordHash), []byte(password)) != nil {
		return User{}, ErrBadLogin
	}
	return User{ID: r.ID, TenantID: r.TenantID, Email: r.Email, Admin: r.IsAdmin, PasswordStamp: passwordStamp(r.PasswordVersion)}, nil
}

// GetUser returns a user by id (for sessions).
func (s *Service) GetUser(ctx context.Context, id uuid.UUID) (User, error) {
	r, err := s.q.GetUser(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, fault.Missing("user")
	}
	if err != nil {
		return User{}, fmt.Errorf("get user: %w", err)
	}
	return User{ID: r.ID, TenantID: r.TenantID, Email: r.Email, Admin: r.IsAdmin, PasswordStamp: passwordStamp(r.PasswordVersion)}, nil
}

// ListedUser is a tenant's dashboard login as the operator's page lists it.
type ListedUser struct {
	User
	CreatedAt time.Time
}

// ListUsers lists a tenant's dashboard logins by email. An unknown tenant is NOT_FOUND.
func (s *Service) ListUsers(ctx context.Context, tenantID uuid.UUID) ([]ListedUser, error) {
	if _, err := s.GetTenant(ctx, tenantID); err != nil {
		return nil, err
	}
	rows, err := s.q.ListTenantUsers(ctx, &tenantID)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]ListedUser, 0, len(rows))
	for _, r := range rows {
		out = append(out, ListedUser{User: User{ID: r.ID, TenantID: r.TenantID, Email: r.Email, Admin: r.IsAdmin}, CreatedAt: r.CreatedAt})
	}
	return out, nil
}

// RemoveUser deletes one of a tenant's customer logins. Its sessions end with it: every dashboard request
// loads the session's user, and a session whose user is gone is signed out. Another tenant's user, an
// operator or an unknown id is NOT_FOUND. Its activity entry keeps the email: the log names whom it
// removed, whose row is gone.
func (s *Service) RemoveUser(ctx context.Context, tenantID, userID uuid.UUID) error {
	details := map[string]any{}
	err := s.change(ctx, tenantID, activity.UserRemoved, "user", details, func(q *db.Queries) (uuid.UUID, error) {
		email, err := q.DeleteTenantUser(ctx, db.DeleteTenantUserParams{ID: userID, TenantID: &tenantID})
		details["email"] = email
		return userID, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Missing("user")
	}
	if err != nil {
		return fmt.Errorf("remove user: %w", err)
	}
	return nil
}

// SetPassword gives one of a tenant's customer logins a new password, under CreateUser's rules. Their
// sessions end with the old password (its stamp no longer matches theirs). Another tenant's user, an
// operator or an unknown id is NOT_FOUND.
func (s *Service) SetPassword(ctx context.Context, tenantID, userID uuid.UUID, password string) error {
	u, err := s.q.GetUser(ctx, userID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (u.TenantID == nil || *u.TenantID != tenantID || u.IsAdmin)) {
		return fault.Missing("user")
	}
	if err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	if err := validatePassword(u.Email, password); err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	err = s.change(ctx, tenantID, activity.PasswordSet, "user", nil, func(q *db.Queries) (uuid.UUID, error) {
		_, err := q.SetTenantUserPassword(ctx, db.SetTenantUserPasswordParams{ID: userID, TenantID: &tenantID, PasswordHash: string(hash)})
		return userID, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Missing("user")
	}
	if err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	return nil
}

// change runs do, which changes the object of type objType whose id it returns, and records the change's
// activity entry in the same transaction.
func (s *Service) change(ctx context.Context, tenantID uuid.UUID, action, objType string, details map[string]any,
	do func(q *db.Queries) (uuid.UUID, error)) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		id, err := do(s.q.WithTx(tx))
		if err != nil {
			return err
		}
		return activity.Record(ctx, tx, tenantID, s.Now(), action, activity.Object{Type: objType, ID: id.String()}, details)
	})
}
