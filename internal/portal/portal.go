// Package portal owns customer portal links: single-use links a platform makes for one of its customers to
// open the tenant's dashboard without a password (like Svix's App Portal and Stripe's billing portal
// sessions), and the portal sessions they start.
//
// A link's token is 32 random bytes (base64url); only its SHA-256 is stored. Redeeming is one guarded
// UPDATE, so of two racing redeems exactly one wins. The session a link starts is the link's own row:
// the dashboard checks it on every request, so a session ends for good, in every process at once, when it
// reaches session_expires_at, when its user signs out, or when the platform ends all of a tenant's
// sessions (which also voids the tenant's links not used yet), or when the token that made its link is
// revoked.
//
// A link grants no more than its maker: a token makes a link only of a role whose scopes it holds
// (roleScopes), and the session's changes are recorded with the person and, as Via, the link's maker.
package portal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/principal"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Roles of a portal session.
const (
	RoleManage = "manage" // everything a tenant's dashboard user may do
	RoleView   = "view"   // every page, no change
)

// Themes of a portal session.
const (
	ThemeAuto  = "auto"
	ThemeLight = "light"
	ThemeDark  = "dark"
)

// Limits of a link.
const (
	// LinkValidFor is how long a link may be used (once) after it is made.
	LinkValidFor = 10 * time.Minute
	// DefaultSessionTTL and MaxSessionTTL bound session_ttl_seconds.
	DefaultSessionTTL = 24 * time.Hour
	MaxSessionTTL     = 7 * 24 * time.Hour
	// MaxUserID, MaxUserEmail and MaxUserName bound the user fields, in characters.
	MaxUserID    = 128
	MaxUserEmail = 254
	MaxUserName  = 200
)

// User is who the platform says the portal user is; each field may be empty.
type User struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

// LinkRequest is the body of POST /tenants/{t}/portal-links; zero values take the defaults.
type LinkRequest struct {
	Role              string `json:"role"`
	User              User   `json:"user"`
	SessionTTLSeconds *int64 `json:"session_ttl_seconds"`
	Theme             string `json:"theme"`
}

// Link is a new portal link. URL holds the token: it is shown once and never stored.
type Link struct {
	URL              string    `json:"url"`
	ExpiresAt        time.Time `json:"expires_at"`
	SessionExpiresAt time.Time `json:"session_expires_at"`
}

// roleScopes are the token scopes each role's session uses: a link of that role may only be made by an
// admin or by a token holding all of them, so a session never does what the token that made it could
// not (portal:write alone makes no link). view reads subscriptions (with their health and the activity
// log) and deliveries (with events, replays and recovers); manage also changes subscriptions (create,
// edit, delete, pause, resume, reveal and rotate the signing secret), deliveries (resend, retry now,
// recover) and sends events (test and example events).
var roleScopes = map[string][]string{
	RoleView: {principal.ScopeSubscriptionsRead, principal.ScopeDeliveriesRead},
	RoleManage: {principal.ScopeSubscriptionsRead, principal.ScopeSubscriptionsWrite, principal.ScopeDeliveriesRead,
		principal.ScopeDeliveriesWrite, principal.ScopeEventsWrite},
}

// Session is a running portal session.
type Session struct {
	// ID is the link's id: the session's own, kept in the dashboard's session cookie.
	ID        uuid.UUID
	TenantID  uuid.UUID
	Role      string
	Theme     string
	User      User
	ExpiresAt time.Time
	// MadeBy is who made the link: an API token (by id and name) or the admin.
	MadeBy activity.Actor
}

// Principal is the person in the session as every handler sees them: of the session's tenant, with its
// role's scopes, named as the platform's link named them and, as Via, by who made the link.
func (s Session) Principal() principal.Principal {
	return principal.Portal(principal.PortalSession{ID: s.ID, TenantID: s.TenantID, Scopes: roleScopes[s.Role],
		ViewOnly: s.Role != RoleManage, UserID: s.User.ID, UserEmail: s.User.Email, UserName: s.User.Name, MadeBy: s.MadeBy})
}

// CanChange reports whether the session may change anything.
func (s Session) CanChange() bool { return s.Principal().CanChange() }

// Label is how pages name the person: the name, else the email, else "portal user".
func (s Session) Label() string { return s.Principal().Label() }

// Actor names the person in logs and audit records: "portal:" and the platform's id, else email, else
// the session's own id.
func (s Session) Actor() string { return s.Principal().AuditName() }

// ActivityActor is the person as the activity log records them: what the platform's link said, or, when
// it said nothing, the session's own id; and, as Via, who made the link.
func (s Session) ActivityActor() activity.Actor { return s.Principal().Actor() }

// ErrUnusable is a used, expired, voided or unknown link: all answered alike.
var ErrUnusable = errors.New("portal link expired or already used")

// ErrEnded is a portal session that has ended (by time, sign-out or for the whole tenant).
var ErrEnded = errors.New("portal session ended")

// Service makes and redeems portal links.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	// Now is the clock (time.Now unless a test sets it).
	Now func() time.Time
	// PublicURL is the base of the links: HOOKLINE_PUBLIC_URL without a trailing slash.
	PublicURL string
}

// New returns a Service.
func New(pool *pgxpool.Pool, publicURL string) *Service {
	return &Service{pool: pool, q: db.New(pool), Now: time.Now, PublicURL: strings.TrimRight(publicURL, "/")}
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func checkText(field, s string, most int) error {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || utf8.RuneCountInString(s) > most {
		return fault.Invalid("%s must be valid text of at most %d characters", field, most)
	}
	return nil
}

// CreateLink makes a single-use link into tenantID's dashboard for by, an admin or a token of the tenant
// holding portal:write. The caller has checked that the tenant exists and that by may reach it; CreateLink
// checks that by holds every scope the link's role uses (FORBIDDEN otherwise).
func (s *Service) CreateLink(ctx context.Context, tenantID uuid.UUID, by principal.Principal, in LinkRequest) (Link, error) {
	switch in.Role {
	case "":
		in.Role = RoleManage
	case RoleManage, RoleView:
	default:
		return Link{}, fault.Invalid("role must be manage or view")
	}
	switch in.Theme {
	case "":
		in.Theme = ThemeAuto
	case ThemeAuto, ThemeLight, ThemeDark:
	default:
		return Link{}, fault.Invalid("theme must be auto, light or dark")
	}
	ttl := DefaultSessionTTL
	if in.SessionTTLSeconds != nil {
		n := *in.SessionTTLSeconds
		if n < 1 || n > int64(MaxSessionTTL/time.Second) {
			return Link{}, fault.Invalid("session_ttl_seconds must be 1 to %d", int64(MaxSessionTTL/time.Second))
		}
		ttl = time.Duration(n) * time.Second
	}
	u := User{ID: strings.TrimSpace(in.User.ID), Email: strings.TrimSpace(in.User.Email), Name: strings.TrimSpace(in.User.Name)}
	for _, f := range []struct {
		name, v string
		most    int
	}{{"user.id", u.ID, MaxUserID}, {"user.email", u.Email, MaxUserEmail}, {"user.name", u.Name, MaxUserName}} {
		if err := checkText(f.name, f.v, f.most); err != nil {
			return Link{}, err
		}
	}
	if !by.Admin {
		var lacks []string
		for _, sc := range roleScopes[in.Role] {
			if !by.Holds(sc) {
				lacks = append(lacks, sc)
			}
		}
		if len(lacks) > 0 {
			return Link{}, fault.New(fault.Forbidden, "a %s link lets its user do what a token with %s does, so it needs a token holding them; this token lacks %s",
				in.Role, strings.Join(roleScopes[in.Role], ", "), strings.Join(lacks, ", "))
		}
	}
	madeBy := by.Actor()
	if madeBy.Kind != activity.ActorToken { // HOOKLINE_ADMIN_TOKEN, or Hookline's own demo
		madeBy.Kind = activity.ActorAdmin
	}
	var madeByToken *uuid.UUID
	if id, ok := by.Token(); ok && madeBy.Kind == activity.ActorToken {
		madeByToken = &id
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails (crypto/rand panics rather than return an error)
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.Now().UTC().Truncate(time.Microsecond)
	l := Link{URL: s.PublicURL + "/portal/" + token, ExpiresAt: now.Add(LinkValidFor), SessionExpiresAt: now.Add(ttl)}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		id, err := q.CreatePortalLink(ctx, db.CreatePortalLinkParams{
			TenantID: tenantID, TokenHash: hashToken(token), Role: in.Role, Theme: in.Theme,
			UserID: u.ID, UserEmail: u.Email, UserName: u.Name,
			Now: now, ExpiresAt: l.ExpiresAt, SessionExpiresAt: l.SessionExpiresAt,
			MadeByKind: madeBy.Kind, MadeByID: madeBy.ID, MadeByName: madeBy.Name, MadeByTokenID: madeByToken,
		})
		if err != nil {
			return err
		}
		// Who the link is for, never its token.
		return activity.Record(ctx, tx, tenantID, now, activity.PortalLinkCreated,
			activity.Object{Type: "portal_link", ID: id.String()},
			map[string]any{"role": in.Role, "user": u})
	})
	if err != nil {
		return Link{}, fmt.Errorf("create portal link: %w", err)
	}
	return l, nil
}

// Redeem uses a link's token once and starts its session: store (the dashboard's, storing the session
// it keeps in its cookie) runs in the transaction that marks the link used, so the link is used up only
// if its session was stored, and a failure to store it leaves the link as it was. ErrUnusable for a
// used, expired, voided or unknown link.
func (s *Service) Redeem(ctx context.Context, token string, store func(context.Context, pgx.Tx, Session) error) (Session, error) {
	if token == "" || len(token) > 100 {
		return Session{}, ErrUnusable
	}
	var sess Session
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := s.q.WithTx(tx).RedeemPortalLink(ctx, db.RedeemPortalLinkParams{TokenHash: hashToken(token), Now: s.Now()})
		if err != nil {
			return err
		}
		sess = Session{ID: r.ID, TenantID: r.TenantID, Role: r.Role, Theme: r.Theme, ExpiresAt: r.SessionExpiresAt,
			User:   User{ID: r.UserID, Email: r.UserEmail, Name: r.UserName},
			MadeBy: activity.Actor{Kind: r.MadeByKind, ID: r.MadeByID, Name: r.MadeByName}}
		return store(ctx, tx, sess)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, ErrUnusable
	}
	if err != nil {
		return Session{}, fmt.Errorf("redeem portal link: %w", err)
	}
	return sess, nil
}

// Session returns a running session; ErrEnded once it has ended.
func (s *Service) Session(ctx context.Context, id uuid.UUID) (Session, error) {
	r, err := s.q.GetPortalSession(ctx, db.GetPortalSessionParams{ID: id, Now: s.Now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, ErrEnded
	}
	if err != nil {
		return Session{}, fmt.Errorf("portal session: %w", err)
	}
	return Session{ID: r.ID, TenantID: r.TenantID, Role: r.Role, Theme: r.Theme, ExpiresAt: r.SessionExpiresAt,
		User:   User{ID: r.UserID, Email: r.UserEmail, Name: r.UserName},
		MadeBy: activity.Actor{Kind: r.MadeByKind, ID: r.MadeByID, Name: r.MadeByName}}, nil
}

// End ends one session (Sign out).
func (s *Service) End(ctx context.Context, id uuid.UUID) error {
	now := s.Now()
	if err := s.q.EndPortalSession(ctx, db.EndPortalSessionParams{ID: id, Now: now}); err != nil {
		return fmt.Errorf("end portal session: %w", err)
	}
	return nil
}

// EndTenant ends every portal session of a tenant and voids its links not used yet; it returns how many.
func (s *Service) EndTenant(ctx context.Context, tenantID uuid.UUID) (int64, error) {
	now := s.Now()
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		if n, err = q.EndTenantPortalSessions(ctx, db.EndTenantPortalSessionsParams{TenantID: tenantID, Now: now}); err != nil {
			return err
		}
		return activity.Record(ctx, tx, tenantID, now, activity.PortalSessionsEnded,
			activity.Object{Type: "tenant", ID: tenantID.String()}, map[string]any{"ended": n})
	})
	if err != nil {
		return 0, fmt.Errorf("end portal sessions: %w", err)
	}
	return n, nil
}

// Prune deletes links whose session cannot run any more.
func (s *Service) Prune(ctx context.Context) (int64, error) {
	// A day's margin: a process whose clock is ahead (or a test's set ahead) must not delete links others
	// are about to use; an expired link is refused by its times anyway, deleted or not.
	return s.q.PrunePortalLinks(ctx, s.Now().Add(-24*time.Hour))
}
