// Package activity is a tenant's audit log: who changed what, through the dashboard or the API. An entry is
// written by the service making the change, in the change's own transaction (Record), so the log never
// shows a change that was rolled back nor misses one that was made. Who is asking (the Actor) travels in
// the request's context, put there by the API's and the dashboard's authentication, together with the
// request's correlation id. Every change is recorded, so a change with no actor in its context fails
// (ErrNoActor) rather than go unrecorded: what Hookline changes by itself (the operator notifications'
// subscription set up from the configuration, the demo's seed) names the system actor (System). What it
// does to deliveries and subscriptions on its own (retries, the circuit breaker, auto-disable) is not a
// change recorded here; the delivery and subscription pages show it.
package activity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/keyset"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Actions, as the API lists and filters them.
const (
	SubscriptionCreated = "subscription.created"
	SubscriptionChanged = "subscription.changed"
	SubscriptionDeleted = "subscription.deleted"
	SubscriptionPaused  = "subscription.paused"
	SubscriptionResumed = "subscription.resumed"
	SecretRevealed      = "secret.revealed"
	SecretRotated       = "secret.rotated"
	DeliveryResent      = "delivery.resent"
	DeliveryRetriedNow  = "delivery.retried_now"
	DeliveryDiscarded   = "delivery.discarded"
	RecoverStarted      = "recover.started"
	TestEventSent       = "test_event.sent"
	ExampleEventSent    = "example_event.sent"
	PortalLinkCreated   = "portal_link.created"
	PortalSessionsEnded = "portal_sessions.ended"
	TokenCreated        = "token.created"
	TokenRevoked        = "token.revoked"
	UserCreated         = "user.created"
	UserRemoved         = "user.removed"
	PasswordSet         = "user.password_set"
)

// Actions lists every action, in the order the dashboard's filter offers them.
var Actions = []string{
	SubscriptionCreated, SubscriptionChanged, SubscriptionDeleted, SubscriptionPaused, SubscriptionResumed,
	SecretRevealed, SecretRotated, DeliveryResent, DeliveryRetriedNow, DeliveryDiscarded, RecoverStarted,
	TestEventSent, ExampleEventSent, PortalLinkCreated, PortalSessionsEnded,
	TokenCreated, TokenRevoked, UserCreated, UserRemoved, PasswordSet,
}

// Kinds of actor.
const (
	ActorUser   = "user"   // a dashboard user signed in with a password
	ActorPortal = "portal" // a customer in a portal session, as the platform's link named them
	ActorToken  = "token"  // an API token, by its id and name
	ActorAdmin  = "admin"  // HOOKLINE_ADMIN_TOKEN or an operator signed in to the dashboard
	ActorSystem = "system" // Hookline itself, outside any request, named for what it was doing
)

// Actor is who made a change: whichever of id, email and name are known.
type Actor struct {
	Kind  string `json:"kind"`
	ID    string `json:"id,omitempty"`
	Email string `json:"email,omitempty"`
	Name  string `json:"name,omitempty"`
	// Via is, for a portal user, who made the link that let them in: the API token (kind token, its id
	// and name) or the admin. A portal session can do no more than its maker, who answers for it too.
	Via *Actor `json:"via,omitempty"`
}

// Label is how a page names the actor: the name, else the email, else the kind and id.
func (a Actor) Label() string {
	switch {
	case a.Name != "" && a.Kind == ActorToken:
		return "token " + a.Name
	case a.Name != "":
		return a.Name
	case a.Email != "":
		return a.Email
	case a.Kind == ActorAdmin:
		return "admin"
	case a.Kind == ActorPortal && a.ID != "":
		return "portal user " + a.ID
	case a.ID != "":
		return a.Kind + " " + a.ID
	}
	return a.Kind
}

type actorKey struct{}

// WithActor returns ctx carrying who is asking; every change Recorded under it names them.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// System returns ctx carrying Hookline itself as the actor, named for what it is doing ("operator
// notifications setup", "demo seed"): for changes made outside any request, which are recorded too.
func System(ctx context.Context, what string) context.Context {
	return WithActor(ctx, Actor{Kind: ActorSystem, Name: what})
}

// ActorOf returns the actor ctx carries.
func ActorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// Object is what a change was made to.
type Object struct {
	Type string `json:"type"` // subscription, delivery, recover, portal_link, tenant, token, user
	ID   string `json:"id"`
}

// Entry is one recorded change.
type Entry struct {
	ID            uuid.UUID      `json:"id"`
	At            time.Time      `json:"at"`
	Action        string         `json:"action"`
	Object        Object         `json:"object"`
	Actor         Actor          `json:"actor"`
	CorrelationID string         `json:"correlation_id"`
	Details       map[string]any `json:"details,omitempty"`
}

// ErrNoActor is Record's error for a context without an actor: a change nobody is named for would go
// unrecorded, so Record fails and the change's transaction with it.
var ErrNoActor = errors.New("record activity: no actor in the context (a request's authentication puts one there; code outside a request uses activity.System)")

// Tx is the transaction of a change, in which its entry is written: a pgx.Tx, as the services changing
// things hold it, so none of them hands another its generated queries.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Record writes the entry of a change in tx, which must be the change's transaction. ctx must carry the
// actor (WithActor, System); without one Record writes nothing and returns ErrNoActor, which rolls the
// change back. details (small, never a secret) say more, such as the fields a change named.
func Record(ctx context.Context, tx Tx, tenantID uuid.UUID, at time.Time, action string, obj Object, details map[string]any) error {
	a, ok := ActorOf(ctx)
	if !ok || a.Kind == "" {
		return ErrNoActor
	}
	if details == nil {
		details = map[string]any{}
	}
	b, err := json.Marshal(details)
	if err != nil {
		return fmt.Errorf("record activity: %w", err)
	}
	arg := db.RecordActivityParams{
		TenantID: tenantID, At: at, Action: action, ObjectType: obj.Type, ObjectID: obj.ID,
		ActorKind: a.Kind, ActorID: a.ID, ActorEmail: a.Email, ActorName: a.Name,
		CorrelationID: httpx.CorrelationID(ctx), Details: b,
	}
	if a.Via != nil {
		arg.ActorViaKind, arg.ActorViaID, arg.ActorViaName = a.Via.Kind, a.Via.ID, a.Via.Name
	}
	err = db.New(tx).RecordActivity(ctx, arg)
	if err != nil {
		return fmt.Errorf("record activity: %w", err)
	}
	return nil
}

// Filter narrows a tenant's log.
type Filter struct {
	Action string     // one of Actions, or "" for all
	Since  *time.Time // inclusive
	Until  *time.Time // exclusive
	Limit  int        // 0: keyset.DefaultPageSize
	Cursor string     // the previous page's NextCursor
}

// Page is one page of the log, newest first.
type Page struct {
	Items      []Entry `json:"items"`
	NextCursor string  `json:"next_cursor"`
}

// Log reads the activity log.
type Log struct {
	q *db.Queries
}

// NewLog returns a Log.
func NewLog(pool *pgxpool.Pool) *Log { return &Log{q: db.New(pool)} }

// ValidAction reports whether s is an action the log records.
func ValidAction(s string) bool {
	return slices.Contains(Actions, s)
}

// List returns a page of a tenant's entries, newest first.
func (l *Log) List(ctx context.Context, tenantID uuid.UUID, f Filter) (Page, error) {
	limit, err := keyset.Limit(f.Limit)
	if err != nil {
		return Page{}, err
	}
	if f.Action != "" && !ValidAction(f.Action) {
		return Page{}, fault.Invalid("action must be one of %s", strings.Join(Actions, ", "))
	}
	after, err := keyset.Parse(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	arg := db.ListActivityParams{TenantID: tenantID, Since: f.Since, Until: f.Until, MaxRows: int32(limit + 1)}
	if f.Action != "" {
		arg.Action = &f.Action
	}
	arg.AfterAt, arg.AfterID = after.After()
	rows, err := l.q.ListActivity(ctx, arg)
	if err != nil {
		return Page{}, fmt.Errorf("list activity: %w", err)
	}
	var page Page
	page.Items, page.NextCursor = keyset.Page(rows, limit, fromRow, func(e Entry) (time.Time, uuid.UUID) { return e.At, e.ID })
	return page, nil
}

func fromRow(r db.Activity) Entry {
	e := Entry{
		ID: r.ID, At: r.At, Action: r.Action, Object: Object{Type: r.ObjectType, ID: r.ObjectID},
		Actor:         Actor{Kind: r.ActorKind, ID: r.ActorID, Email: r.ActorEmail, Name: r.ActorName},
		CorrelationID: r.CorrelationID,
	}
	if r.ActorViaKind != "" {
		e.Actor.Via = &Actor{Kind: r.ActorViaKind, ID: r.ActorViaID, Name: r.ActorViaName}
	}
	if len(r.Details) > 0 {
		_ = json.Unmarshal(r.Details, &e.Details) // written by Record from a map: always an object
		if len(e.Details) == 0 {
			e.Details = nil
		}
	}
	return e
}

// Prune deletes entries older than cutoff, in batches of batch, and says how many it deleted.
func (l *Log) Prune(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		n, err := l.q.DeleteActivityBefore(ctx, db.DeleteActivityBeforeParams{Cutoff: cutoff, Max: int32(batch)})
		total += n
		if err != nil {
			return total, fmt.Errorf("prune activity: %w", err)
		}
		if n < int64(batch) || ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}
