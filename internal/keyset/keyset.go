// Package keyset holds what every newest-first list shares: page sizes and the opaque cursor naming the last
// item of a page by its keyset (a time and an id), so that the next page starts after it however many rows
// arrive meanwhile. Deliveries, replays, dead letters and the activity log all page this way.
package keyset

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
)

// MaxPageSize is the largest page a list returns.
const MaxPageSize = 100

// DefaultPageSize is a list's page when none is asked for.
const DefaultPageSize = 50

// Cursor names the last item of a page: its time (created_at, started_at, at) and id.
type Cursor struct {
	At time.Time `json:"t"`
	ID uuid.UUID `json:"i"`
}

// Encode makes the cursor of the item at (t, id): base64url of a small JSON object.
func Encode(t time.Time, id uuid.UUID) string {
	b, _ := json.Marshal(Cursor{t, id})
	return base64.RawURLEncoding.EncodeToString(b)
}

// Parse reads a cursor Encode made: nil for none (the first page); anything else is INVALID_REQUEST.
func Parse(s string) (*Cursor, error) {
	if s == "" {
		return nil, nil
	}
	var c Cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == uuid.Nil {
		return nil, fault.Invalid("cursor is not one this API returned")
	}
	return &c, nil
}

// After is the cursor as a keyset query's "after" parameters: both nil for the first page.
func (c *Cursor) After() (*time.Time, *uuid.UUID) {
	if c == nil {
		return nil, nil
	}
	return &c.At, &c.ID
}

// Limit checks a list's page size: 0 means DefaultPageSize, more than MaxPageSize is refused.
func Limit(n int) (int, error) {
	if n <= 0 {
		return DefaultPageSize, nil
	}
	if n > MaxPageSize {
		return 0, fault.Invalid("limit must be between 1 and %d", MaxPageSize)
	}
	return n, nil
}

// Page turns the up to limit+1 rows a keyset query returned into at most limit items and, when there was
// one more row, the cursor of the last item kept. key gives an item's keyset.
func Page[R, T any](rows []R, limit int, conv func(R) T, key func(T) (time.Time, uuid.UUID)) ([]T, string) {
	items := make([]T, 0, min(len(rows), limit))
	for _, r := range rows[:min(len(rows), limit)] {
		items = append(items, conv(r))
	}
	if len(rows) <= limit || len(items) == 0 {
		return items, ""
	}
	return items, Encode(key(items[len(items)-1]))
}
