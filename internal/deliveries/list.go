package deliveries

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/keyset"
)

// Lists of deliveries: filters, keyset pages and their cursors.

// Filter selects deliveries for a list.
type Filter struct {
	SubscriptionID *uuid.UUID
	// States are states to include; "retrying" is pending with earlier attempts, "dead" failed + expired.
	States []string
	// EventID selects one event's deliveries (one per subscription it went to).
	EventID   *uuid.UUID
	EventType string
	// EventTypePrefix selects event types starting with it ("invoice." matches "invoice.paid").
	EventTypePrefix string
	// Status selects by last HTTP status: an exact code ("404") or a class ("4xx", "5xx"); see ParseStatus.
	Status string
	Since  *time.Time
	Until  *time.Time
	Limit  int
	Cursor string
	// WithTotal asks for the count of all matches.
	WithTotal bool
	// CountUpTo, when positive, stops counting there: Total is then at most CountUpTo and TotalAtLeast says
	// there may be more. Pages use it so that a count never costs a scan of millions of rows.
	CountUpTo int
}

// Page is one page of a list.
type Page struct {
	Items      []Delivery `json:"items"`
	NextCursor string     `json:"next_cursor"`
	Total      *int64     `json:"total,omitempty"`
	// TotalAtLeast comes with Total: true when counting stopped at Filter.CountUpTo, so there are Total
	// matches or more.
	TotalAtLeast *bool `json:"total_at_least,omitempty"`
}

// TotalUpTo is where a list's total stops counting for the API's include_totals, as the dashboard's
// counts do: past it a total says "at least", so a count never scans millions of rows.
const TotalUpTo = 1000

// ParseStates turns the API's comma list (with "dead" and "retrying") into states and a retrying flag.
func ParseStates(list string) (states []string, retrying *bool, err error) {
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			states = append(states, s)
		}
	}
	onlyRetrying := false
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
		case s == "dead":
			add(string(delivery.Failed))
			add(string(delivery.Expired))
		case s == "retrying":
			onlyRetrying = true
		case delivery.State(s).Valid():
			add(s)
		default:
			return nil, nil, fault.Invalid("state %q is not one of pending, retrying, in_flight, delivered, failed, expired, dead", s)
		}
	}
	if onlyRetrying {
		if len(states) == 0 {
			t := true
			return []string{string(delivery.Pending)}, &t, nil
		}
		add(string(delivery.Pending)) // retrying among other states: all pending ones are a superset
	}
	return states, nil, nil
}

func joinStates(states []string) string { return strings.Join(states, ",") }

// PageKey is a delivery's place in a list's keyset pages: newest first.
func PageKey(d Delivery) (time.Time, uuid.UUID) { return d.CreatedAt, d.ID }

// MaxPageSize is the largest page a list returns.
const MaxPageSize = keyset.MaxPageSize

// List returns a tenant's deliveries newest first. With WithTotal the page and its total are read in one
// snapshot (a View), so the total counts the rows the page lists.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID, f Filter) (Page, error) {
	if !f.WithTotal {
		return s.list(ctx, s.q, tenantID, f)
	}
	var p Page
	err := s.Read(ctx, func(v *View) error {
		var err error
		p, err = v.List(ctx, tenantID, f)
		return err
	})
	return p, err
}

// list is List on q: the pool, or a View's transaction.
func (s *Service) list(ctx context.Context, q *db.Queries, tenantID uuid.UUID, f Filter) (Page, error) {
	states, retrying, err := ParseStates(joinStates(f.States))
	if err != nil {
		return Page{}, err
	}
	if f.Limit, err = keyset.Limit(f.Limit); err != nil {
		return Page{}, err
	}
	statusMin, statusMax, err := ParseStatus(f.Status)
	if err != nil {
		return Page{}, err
	}
	p := db.ListDeliveriesParams{
		TenantID: tenantID, SubscriptionID: f.SubscriptionID, States: states, Retrying: retrying, EventID: f.EventID,
		EventType: optional(f.EventType), EventTypePrefix: optional(f.EventTypePrefix), StatusMin: statusMin, StatusMax: statusMax,
		Since: f.Since, Until: f.Until, MaxRows: int32(f.Limit + 1),
	}
	if states == nil {
		p.States = []string{}
	}
	after, err := keyset.Parse(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	p.AfterCreatedAt, p.AfterID = after.After()
	rows, err := q.ListDeliveries(ctx, p)
	if err != nil {
		return Page{}, fmt.Errorf("list deliveries: %w", err)
	}
	var page Page
	page.Items, page.NextCursor = keyset.Page(rows, f.Limit, FromRow, PageKey)
	items := make([]*Delivery, len(page.Items))
	for i := range page.Items {
		items[i] = &page.Items[i]
	}
	if err := s.fillWaitingFor(ctx, tenantID, items); err != nil {
		return Page{}, err
	}
	if f.WithTotal {
		n, atLeast, err := s.count(ctx, q, tenantID, f, f.CountUpTo)
		if err != nil {
			return Page{}, err
		}
		page.Total, page.TotalAtLeast = &n, &atLeast
	}
	return page, nil
}
