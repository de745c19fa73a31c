package replays

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/keyset"
)

// Dead letters across tenants: the filter operators and replays share, and its keyset pages.

// DeadFilter selects dead deliveries: the dead-letter list's filters and a replay's criteria. Every field is
// optional for the list; a replay needs CreatedFrom and CreatedTo.
type DeadFilter struct {
	TenantID       *uuid.UUID `json:"tenant_id,omitempty"`
	SubscriptionID *uuid.UUID `json:"subscription_id,omitempty"`
	EventType      string     `json:"event_type,omitempty"`
	// States narrows to failed or expired (empty: both).
	States []delivery.State `json:"states,omitempty"`
	// DeadReason is one of the Reason* values.
	DeadReason  string     `json:"dead_reason,omitempty"`
	CreatedFrom *time.Time `json:"created_from,omitempty"`
	CreatedTo   *time.Time `json:"created_to,omitempty"`
}

// DeadReasons lists every dead reason, for filters.
var DeadReasons = []string{delivery.ReasonPermanentStatus, delivery.ReasonMaxAttempts, delivery.ReasonDeadline, delivery.ReasonSubscriptionDeleted}

// Validate checks the filter's values (not whether a replay's times are present: see ValidateReplay).
func (f DeadFilter) Validate() error {
	for _, s := range f.States {
		if !s.Dead() {
			return fault.Invalid("states may only hold failed and expired, not %q", s)
		}
	}
	if f.EventType != "" && !eventtype.Valid(f.EventType) {
		return fault.Invalid("event_type is not a valid event type")
	}
	if f.DeadReason != "" && !contains(DeadReasons, f.DeadReason) {
		return fault.Invalid("dead_reason must be one of %s", strings.Join(DeadReasons, ", "))
	}
	if f.CreatedFrom != nil && f.CreatedTo != nil && !f.CreatedFrom.Before(*f.CreatedTo) {
		return fault.Invalid("created_from must be before created_to")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (f DeadFilter) states() []string {
	out := make([]string, 0, len(f.States))
	for _, s := range f.States {
		if !contains(out, string(s)) {
			out = append(out, string(s))
		}
	}
	return out
}

func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// DeadLetter is a dead delivery in the cross-tenant list, with whose it is. SubscriptionDeleted says its
// subscription was deleted: it is never sent again, and no replay schedules it.
type DeadLetter struct {
	deliveries.Delivery
	TenantID            uuid.UUID `json:"tenant_id"`
	TenantName          string    `json:"tenant_name"`
	SubscriptionURL     string    `json:"subscription_url"`
	SubscriptionDeleted bool      `json:"subscription_deleted"`
}

// DeadPage is one page of dead letters.
type DeadPage struct {
	Items      []DeadLetter `json:"items"`
	NextCursor string       `json:"next_cursor"`
	// Total counts the matches, at most CountUpTo; TotalAtLeast says counting stopped there.
	Total        int64 `json:"total"`
	TotalAtLeast bool  `json:"total_at_least"`
}

type deadParams struct {
	TenantID, SubscriptionID *uuid.UUID
	EventType, DeadReason    *string
	States                   []string
	CreatedFrom, CreatedTo   *time.Time
	DeadBefore               *time.Time
	Replayable               bool
}

// params are the filter's query parameters. deadBefore is set when the question is what a replay would
// schedule: then only deliveries dead by then count, and not those of deleted subscriptions, which no worker
// would ever claim. The dead-letter list (deadBefore nil) shows every dead delivery.
func (f DeadFilter) params(deadBefore *time.Time) deadParams {
	return deadParams{TenantID: f.TenantID, SubscriptionID: f.SubscriptionID, EventType: optText(f.EventType),
		DeadReason: optText(f.DeadReason), States: f.states(), CreatedFrom: f.CreatedFrom, CreatedTo: f.CreatedTo,
		DeadBefore: deadBefore, Replayable: deadBefore != nil}
}

func (s *Replays) count(ctx context.Context, f DeadFilter, deadBefore *time.Time, upTo int) (int64, error) {
	return s.countParams(ctx, f.params(deadBefore), upTo)
}

func (s *Replays) countParams(ctx context.Context, p deadParams, upTo int) (int64, error) {
	n, err := s.q.CountDeadLetters(ctx, db.CountDeadLettersParams{
		TenantID: p.TenantID, SubscriptionID: p.SubscriptionID, EventType: p.EventType, States: p.States,
		DeadReason: p.DeadReason, CreatedFrom: p.CreatedFrom, CreatedTo: p.CreatedTo, DeadBefore: p.DeadBefore,
		Replayable: p.Replayable, UpTo: int32(min(upTo, math.MaxInt32)),
	})
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

func (s *Replays) list(ctx context.Context, f DeadFilter, deadBefore *time.Time, limit int, after *keyset.Cursor) ([]DeadLetter, error) {
	p := f.params(deadBefore)
	arg := db.ListDeadLettersParams{
		TenantID: p.TenantID, SubscriptionID: p.SubscriptionID, EventType: p.EventType, States: p.States,
		DeadReason: p.DeadReason, CreatedFrom: p.CreatedFrom, CreatedTo: p.CreatedTo, DeadBefore: p.DeadBefore,
		Replayable: p.Replayable, MaxRows: int32(limit),
	}
	arg.AfterCreatedAt, arg.AfterID = after.After()
	rows, err := s.q.ListDeadLetters(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(rows))
	for _, r := range rows {
		out = append(out, DeadLetter{Delivery: deliveries.FromRow(r.WebhookDelivery), TenantID: r.WebhookDelivery.TenantID,
			TenantName: r.TenantName, SubscriptionURL: r.SubscriptionURL, SubscriptionDeleted: r.SubscriptionDeleted})
	}
	return out, nil
}

// DeadLetters lists dead deliveries of every tenant (or the filter's), newest first, with a total counted up
// to countUpTo (0: 10,000).
func (s *Replays) DeadLetters(ctx context.Context, f DeadFilter, limit int, cursorText string, countUpTo int) (DeadPage, error) {
	if err := f.Validate(); err != nil {
		return DeadPage{}, err
	}
	limit, err := keyset.Limit(limit)
	if err != nil {
		return DeadPage{}, err
	}
	if countUpTo <= 0 {
		countUpTo = 10000
	}
	after, err := keyset.Parse(cursorText)
	if err != nil {
		return DeadPage{}, err
	}
	items, err := s.list(ctx, f, nil, limit+1, after)
	if err != nil {
		return DeadPage{}, err
	}
	var page DeadPage
	page.Items, page.NextCursor = keyset.Page(items, limit, func(d DeadLetter) DeadLetter { return d },
		func(d DeadLetter) (time.Time, uuid.UUID) { return d.CreatedAt, d.ID })
	if page.Total, err = s.count(ctx, f, nil, countUpTo); err != nil {
		return DeadPage{}, err
	}
	page.TotalAtLeast = page.Total >= int64(countUpTo)
	return page, nil
}
