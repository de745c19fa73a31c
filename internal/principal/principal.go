// Package principal is who is asking, whichever way they came in: an API token, HOOKLINE_ADMIN_TOKEN, a
// dashboard user signed in with a password, or a customer in a portal session. The API's and the
// dashboard's authentication make one (tenants and portal produce them), the handlers ask it what it may
// do (Can, CanChange), and the activity log and the pages name it (Actor, AuditName, Label).
//
// A principal of another tenant is told NOT_FOUND, not FORBIDDEN, so it cannot even learn that an object
// exists; within its tenant a token, or a portal session, may do only what its scopes say.
package principal

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
)

// Scopes a tenant token may hold; a portal session holds those of its role, a dashboard user all of them.
const (
	ScopeSubscriptionsRead  = "subscriptions:read"
	ScopeSubscriptionsWrite = "subscriptions:write"
	ScopeEventsWrite        = "events:write"
	ScopeDeliveriesRead     = "deliveries:read"
	ScopeDeliveriesWrite    = "deliveries:write"
	// ScopePortalWrite makes customer portal links (of a role whose scopes the token holds too: a link
	// grants no more than its maker) and ends portal sessions.
	ScopePortalWrite = "portal:write"
)

// AllScopes lists every tenant scope.
var AllScopes = []string{ScopeSubscriptionsRead, ScopeSubscriptionsWrite, ScopeEventsWrite, ScopeDeliveriesRead, ScopeDeliveriesWrite, ScopePortalWrite}

// Kind is the way a principal came in.
type Kind string

// Kinds of principal.
const (
	KindAdminToken Kind = "admin_token" // HOOKLINE_ADMIN_TOKEN
	KindToken      Kind = "token"       // an API token: a tenant's, or an admin token stored without a tenant
	KindUser       Kind = "user"        // a dashboard login: a tenant's customer, or an operator
	KindPortal     Kind = "portal"      // a customer in a portal session, as the platform's link named them
	KindOperator   Kind = "operator"    // Hookline's own code acting with the operator's rights (the demo)
)

// Principal is who is asking. Make one with AdminToken, Token, User, Portal or Operator; the zero
// Principal may do nothing.
type Principal struct {
	Kind Kind
	// Admin may do anything to any tenant: HOOKLINE_ADMIN_TOKEN, an admin API token, an operator login.
	Admin bool
	// TenantID is the tenant it acts for; uuid.Nil for an admin without one.
	TenantID uuid.UUID
	// Scopes are what it may do within its tenant (admins need none).
	Scopes []string
	// ID is the API token's, the dashboard user's or the portal session's id (uuid.Nil for the admin token
	// and the operator).
	ID uuid.UUID

	viewOnly bool
	who      activity.Actor
	audit    string
	label    string
}

// AdminToken is the caller holding HOOKLINE_ADMIN_TOKEN.
func AdminToken() Principal {
	return Principal{Kind: KindAdminToken, Admin: true, who: activity.Actor{Kind: activity.ActorAdmin},
		audit: "admin-token", label: "admin token"}
}

// Token is the caller holding an API token: of tenantID with scopes, or, with no tenant, an admin token.
func Token(id uuid.UUID, name string, tenantID *uuid.UUID, scopes []string) Principal {
	p := Principal{Kind: KindToken, Admin: tenantID == nil, ID: id,
		who:   activity.Actor{Kind: activity.ActorToken, ID: id.String(), Name: name},
		audit: "token:" + name, label: "token " + name}
	if tenantID != nil {
		p.TenantID, p.Scopes = *tenantID, slices.Clone(scopes)
		p.viewOnly = !slices.ContainsFunc(p.Scopes, func(s string) bool { return strings.HasSuffix(s, ":write") })
	}
	return p
}

// User is a dashboard login: one of tenantID's customers, who may do everything in the tenant's
// dashboard, or, with no tenant and admin set, an operator.
func User(id uuid.UUID, tenantID *uuid.UUID, email string, admin bool) Principal {
	p := Principal{Kind: KindUser, Admin: admin, ID: id,
		who:   activity.Actor{Kind: activity.ActorUser, ID: id.String(), Email: email},
		audit: email, label: email}
	if admin {
		p.who.Kind = activity.ActorAdmin
	}
	if tenantID != nil {
		p.TenantID, p.Scopes = *tenantID, slices.Clone(AllScopes)
	}
	return p
}

// PortalSession is what a portal session says of itself.
type PortalSession struct {
	// ID is the session's own id; TenantID the tenant whose dashboard it opens.
	ID, TenantID uuid.UUID
	// Scopes are those of its role; ViewOnly is a role that changes nothing.
	Scopes   []string
	ViewOnly bool
	// UserID, UserEmail and UserName are who the platform's link says the person is; each may be empty.
	UserID, UserEmail, UserName string
	// MadeBy is who made the link: an API token (by id and name) or the admin.
	MadeBy activity.Actor
}

// Portal is a customer in a portal session. The activity log names the person as the link said, or, when
// it said nothing, by the session's own id; and, as Via, who made the link, since a session can do no
// more than its maker, who answers for it too.
func Portal(s PortalSession) Principal {
	p := Principal{Kind: KindPortal, TenantID: s.TenantID, Scopes: slices.Clone(s.Scopes), ID: s.ID, viewOnly: s.ViewOnly,
		who: activity.Actor{Kind: activity.ActorPortal, ID: s.UserID, Email: s.UserEmail, Name: s.UserName}}
	if p.who.ID == "" && p.who.Email == "" && p.who.Name == "" {
		p.who.ID = s.ID.String()
	}
	by := s.MadeBy
	p.who.Via = &by
	// Logs and audit records: the platform's id, else the email, else the session's own id.
	switch {
	case s.UserID != "":
		p.audit = "portal:" + s.UserID
	case s.UserEmail != "":
		p.audit = "portal:" + s.UserEmail
	default:
		p.audit = "portal:" + s.ID.String()
	}
	// Pages: the name, else the email, else "portal user".
	switch {
	case s.UserName != "":
		p.label = s.UserName
	case s.UserEmail != "":
		p.label = s.UserEmail
	default:
		p.label = "portal user"
	}
	return p
}

// Operator is Hookline's own code acting with the operator's rights (the demo making portal links), named
// in the activity log as who.
func Operator(who activity.Actor) Principal {
	label := who.Label()
	return Principal{Kind: KindOperator, Admin: true, who: who, audit: label, label: label}
}

// Can checks that p may act on tenantID with scope ("" for any access at all). Another tenant's objects
// are NOT_FOUND, so a principal cannot even learn that they exist; a scope it lacks is FORBIDDEN.
func (p Principal) Can(tenantID uuid.UUID, scope string) error {
	if p.Admin {
		return nil
	}
	if p.TenantID == uuid.Nil || p.TenantID != tenantID {
		return fault.Missing("tenant")
	}
	if scope != "" && !p.Holds(scope) {
		if p.Kind == KindPortal {
			return fault.New(fault.Forbidden, "this portal session lacks the %s scope", scope)
		}
		return fault.New(fault.Forbidden, "this token lacks the %s scope", scope)
	}
	return nil
}

// Holds reports whether p holds scope (admins hold every scope).
func (p Principal) Holds(scope string) bool { return p.Admin || slices.Contains(p.Scopes, scope) }

// Tenant is the tenant whose pages and objects p sees; ok is false for an admin without one.
func (p Principal) Tenant() (uuid.UUID, bool) { return p.TenantID, p.TenantID != uuid.Nil }

// Token is the API token p came in with; ok is false for any other way in.
func (p Principal) Token() (uuid.UUID, bool) { return p.ID, p.Kind == KindToken }

// CanChange reports whether p may change anything at all: false for a view-only portal session and for a
// token holding no write scope.
func (p Principal) CanChange() bool { return p.Admin || (p.Kind != "" && !p.viewOnly) }

// Actor is p as the activity log records it.
func (p Principal) Actor() activity.Actor { return p.who }

// AuditName names p in logs and replay records: "admin-token", "token:<name>", a user's email,
// "portal:<the platform's user id>".
func (p Principal) AuditName() string {
	switch {
	case p.audit != "":
		return p.audit
	case p.Admin:
		return "admin token"
	}
	return "tenant token"
}

// Label is how a page names p: a user's email, a portal user's name (else email, else "portal user"),
// "token <name>", "admin token".
func (p Principal) Label() string { return p.label }

type contextKey struct{}

// NewContext returns ctx carrying p, and p as the actor of every change recorded under it.
func NewContext(ctx context.Context, p Principal) context.Context {
	return activity.WithActor(context.WithValue(ctx, contextKey{}, p), p.who)
}

// FromContext returns the principal ctx carries; ok is false when there is none.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(contextKey{}).(Principal)
	return p, ok
}
