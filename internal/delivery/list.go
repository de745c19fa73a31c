package delivery

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
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
	// TotalAtLeast is set when counting stopped at Filter.CountUpTo.
	TotalAtLeast bool `json:"-"`
}

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
			add(string(Failed))
			add(string(Expired))
		case s == "retrying":
			onlyRetrying = true
		case State(s).Valid():
			add(s)
		default:
			return nil, nil, fault.Invalid("state %q is not one of pending, retrying, in_flight, delivered, failed, expired, dead", s)
		}
	}
	if onlyRetrying {
		if len(states) == 0 {
			t := true
			return []string{string(Pending)}, &t, nil
		}
		add(string(Pending)) // retrying among other states: all pending ones are a superset
	}
	return states, nil, nil
}

func joinStates(states []string) string { return strings.Join(states, ",") }

// A cursor names the last item of a page by its keyset: (created_at, id), or (started_at, id) for replays.
type cursor struct {
	CreatedAt time.Time `json:"t"`
	ID        uuid.UUID `json:"i"`
}

func encodeCursor(t time.Time, id uuid.UUID) string {
	b, _ := json.Marshal(cursor{t, id})
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseCursor reads a cursor this API returned: nil for none (the first page).
func parseCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == uuid.Nil {
		return nil, fault.Invalid("cursor is not one this API returned")
	}
	return &c, nil
}

// keyset is the cursor as a keyset query's "after" parameters: both nil for the first page.
func (c *cursor) keyset() (*time.Time, *uuid.UUID) {
	if c == nil {
		return nil, nil
	}
	return &c.CreatedAt, &c.ID
}

// pageLimit checks a list's page size: 0 means the default of 50, more than MaxPageSize is refused.
func pageLimit(n int) (int, error) {
	if n <= 0 {
		return 50, nil
	}
	if n > MaxPageSize {
		return 0, fault.Invalid("limit must be between 1 and %d", MaxPageSize)
	}
	return n, nil
}

// keysetPage turns the up to limit+1 rows a keyset query returned into at most limit items and, when there
// was one more row, the cursor of the last item kept. key gives an item's keyset.
func keysetPage[R, T any](rows []R, limit int, conv func(R) T, key func(T) (time.Time, uuid.UUID)) ([]T, string) {
	items := make([]T, 0, min(len(rows), limit))
	for _, r := range rows[:min(len(rows), limit)] {
		items = append(items, conv(r))
	}
	if len(rows) <= limit || len(items) == 0 {
		return items, ""
	}
	return items, encodeCursor(key(items[len(items)-1]))
}

func deliveryKey(d Delivery) (time.Time, uuid.UUID) { return d.CreatedAt, d.ID }

// MaxPageSize is the largest page a list returns.
const MaxPageSize = 100

// List returns a tenant's deliveries newest first.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID, f Filter) (Page, error) {
	states, retrying, err := ParseStates(joinStates(f.States))
	if err != nil {
		return Page{}, err
	}
	if f.Limit, err = pageLimit(f.Limit); err != nil {
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
	after, err := parseCursor(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	p.AfterCreatedAt, p.AfterID = after.keyset()
	rows, err := s.q.ListDeliveries(ctx, p)
	if err != nil {
		return Page{}, fmt.Errorf("list deliveries: %w", err)
	}
	var page Page
	page.Items, page.NextCursor = keysetPage(rows, f.Limit, fromRow, deliveryKey)
	if f.WithTotal {
		n, atLeast, err := s.Count(ctx, tenantID, f, f.CountUpTo)
		if err != nil {
			return Page{}, err
		}
		page.Total, page.TotalAtLeast = &n, atLeast
	}
	return page, nil
}
