// Package catalogue owns the event catalogue: the event types a platform publishes, each with a
// description, a group, and optionally a JSON Schema its payloads must satisfy and an example. It is
// global, changed by the admin and read by any token. Publishes are checked against it from a cache of
// compiled schemas that every process keeps and refreshes (see cache.go), never by reading the database.
package catalogue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/catalogue/schema"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestEventType is the dashboard's test event without a brand; under a brand it is
// brand.NeutralTestEventType. Both are always accepted, whatever the catalogue says (brand.IsTestEventType).
const TestEventType = brand.DefaultTestEventType

// Limits on what an event type may hold; its schema's are the schema package's.
const (
	maxDescription = 4000
	maxGroup       = 100
	// MaxExampleBytes bounds an example (compact JSON, after an import resolved its $refs and YAML
	// aliases): every page and every listing of the catalogue carries it.
	MaxExampleBytes = 64 << 10
)

// limitError is a refusal by one of the catalogue's limits: INVALID_REQUEST saying which.
func limitError(format string, args ...any) error { return fault.Invalid(format, args...) }

// EventType is one type of the catalogue as the API shows it.
type EventType struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Group       string `json:"group"`
	// Schema is the JSON Schema its payloads must satisfy, as written (null: none); Example a payload.
	Schema     json.RawMessage `json:"schema"`
	Example    json.RawMessage `json:"example"`
	Deprecated bool            `json:"deprecated"`
	// Archived types are out of the catalogue: not listed unless asked, their schema not enforced.
	Archived   bool       `json:"archived"`
	ArchivedAt *time.Time `json:"archived_at"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

func fromRow(r db.EventType) EventType {
	t := EventType{Name: r.Name, Description: r.Description, Group: r.GroupName, Deprecated: r.Deprecated,
		Archived: r.ArchivedAt != nil, ArchivedAt: r.ArchivedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Schema: json.RawMessage("null"), Example: json.RawMessage("null")}
	if r.Schema != nil {
		t.Schema = json.RawMessage(r.Schema)
	}
	if r.Example != nil {
		t.Example = json.RawMessage(r.Example)
	}
	return t
}

// Input creates or changes a type. On a change, a nil field is left as it is; a Schema or Example of JSON
// null removes it.
type Input struct {
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Group       *string         `json:"group"`
	Schema      json.RawMessage `json:"schema"`
	Example     json.RawMessage `json:"example"`
	Deprecated  *bool           `json:"deprecated"`
}

// Options configure a Service.
type Options struct {
	// RegisteredOnly refuses events of types that are not in the catalogue, and subscriptions naming
	// them (HOOKLINE_EVENT_TYPES=registered).
	RegisteredOnly bool
	// PollInterval is how often the catalogue's version is read to notice other processes' changes
	// (default 1 s).
	PollInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Service manages the catalogue and checks events against it.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	o    Options

	// snap is the compiled catalogue this process checks events against; loadMu makes one load at a time.
	snap   atomic.Pointer[snapshot]
	loadMu sync.Mutex
	// compiles counts the schemas loads compiled (tests read it).
	compiles atomic.Int64

	stopMu sync.Mutex
	stop   context.CancelFunc
	done   chan struct{}
}

// New returns a Service. Load (or Start) fills its cache; until then it checks nothing.
func New(pool *pgxpool.Pool, o Options) *Service {
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{pool: pool, q: db.New(pool), o: o}
	s.snap.Store(&snapshot{version: -1, types: map[string]*compiled{}})
	return s
}

// RegisteredOnly says whether only registered types are accepted.
func (s *Service) RegisteredOnly() bool { return s.o.RegisteredOnly }

// List returns the catalogue sorted by group and name; archived types too when includeArchived.
// Groups are one whatever their capitalisation ("Billing" and "billing" are one group), spelled as the
// catalogue spells them: a change that names a group gives all of its types that spelling, a type whose
// group is its default takes the spelling the group has, and types stored before (or by hand) in
// another capitalisation are shown in the spelling of the group's most recently changed type, live
// types first, as EventTypeGroupSpelling finds it.

// List returns the catalogue sorted by group and name; archived types too when includeArchived.
func (s *Service) List(ctx context.Context, includeArchived bool) ([]EventType, error) {
	rows, err := s.q.ListEventTypes(ctx, includeArchived)
	if err != nil {
		return nil, fmt.Errorf("list event types: %w", err)
	}
	spelling := map[string]db.EventType{} // lower-case group → the type whose spelling it takes
	for _, r := range rows {
		key := strings.ToLower(r.GroupName)
		if cur, ok := spelling[key]; !ok || spellsBefore(r, cur) {
			spelling[key] = r
		}
	}
	out := make([]EventType, 0, len(rows))
	for _, r := range rows {
		t := fromRow(r)
		t.Group = spelling[strings.ToLower(r.GroupName)].GroupName
		out = append(out, t)
	}
	return out, nil
}

// spellsBefore says whether a's spelling of its group wins over b's: live first, then the most recently
// changed, then the name (EventTypeGroupSpelling's order).
func spellsBefore(a, b db.EventType) bool {
	if (a.ArchivedAt == nil) != (b.ArchivedAt == nil) {
		return a.ArchivedAt == nil
	}
	if !a.UpdatedAt.Equal(b.UpdatedAt) {
		return a.UpdatedAt.After(b.UpdatedAt)
	}
	return a.Name < b.Name
}

// Get returns one type, archived or not.
func (s *Service) Get(ctx context.Context, name string) (EventType, error) {
	r, err := s.q.GetEventType(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return EventType{}, fault.Missing("event type")
	}
	if err != nil {
		return EventType{}, fmt.Errorf("get event type: %w", err)
	}
	t := fromRow(r)
	g, err := s.q.EventTypeGroupSpelling(ctx, db.EventTypeGroupSpellingParams{GroupName: r.GroupName})
	if err != nil {
		return EventType{}, fmt.Errorf("get event type: its group: %w", err)
	}
	t.Group = g
	return t, nil
}

// spellGroup makes f's group the catalogue's spelling of it, before the type name is stored with it: a
// group the change names is given to every type of the group; a default or unchanged one takes the
// spelling the group has.
func spellGroup(ctx context.Context, q *db.Queries, name string, f *fields, now time.Time) error {
	if f.groupGiven {
		return q.SpellEventTypeGroup(ctx, db.SpellEventTypeGroupParams{GroupName: f.group, Now: now})
	}
	g, err := q.EventTypeGroupSpelling(ctx, db.EventTypeGroupSpellingParams{GroupName: f.group, ExceptName: name})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	f.group = g
	return nil
}

// DefaultGroup is a type's group when none is given: its name up to the first dot (all of it without one).
func DefaultGroup(name string) string {
	g, _, _ := strings.Cut(name, ".")
	return g
}

// fields are a type's checked fields, ready to store.
type fields struct {
	description, group string
	schema, example    []byte // nil: none
	deprecated         bool
	// groupGiven: the change named the group (rather than leaving it, or its default).
	groupGiven bool
}

// merge applies in to cur (a type's stored fields, or zero ones for a new type) and checks the result:
// the schema compiles, the example is a JSON object that satisfies it.
func merge(name string, cur fields, in Input) (fields, error) {
	out := cur
	if in.Description != nil {
		d := *in.Description
		if len(d) > maxDescription {
			return out, fault.Invalid("description is longer than %d characters", maxDescription)
		}
		if !utf8.ValidString(d) || strings.ContainsRune(d, 0) {
			return out, fault.Invalid("description must be UTF-8 text without NUL characters")
		}
		out.description = d
	}
	if in.Group != nil {
		g := strings.TrimSpace(*in.Group)
		if g == "" {
			g = DefaultGroup(name)
		} else {
			out.groupGiven = true
		}
		if len(g) > maxGroup || !utf8.ValidString(g) || strings.ContainsFunc(g, unicode.IsControl) {
			return out, fault.Invalid("group must be printable text of at most %d characters", maxGroup)
		}
		out.group = g
	}
	if out.group == "" {
		out.group = DefaultGroup(name)
	}
	if in.Deprecated != nil {
		out.deprecated = *in.Deprecated
	}
	if in.Schema != nil {
		b, err := compactJSON(in.Schema)
		if err != nil {
			return out, fault.Invalid("schema is not valid JSON")
		}
		if bytes.Equal(b, []byte("null")) {
			out.schema = nil
		} else {
			if b[0] != '{' {
				return out, fault.Invalid("schema must be a JSON object: a JSON Schema (draft 2020-12 unless its $schema names another)")
			}
			out.schema = b
		}
	}
	if in.Example != nil {
		b, err := compactJSON(in.Example)
		if err != nil {
			return out, fault.Invalid("example is not valid JSON")
		}
		if bytes.Equal(b, []byte("null")) {
			out.example = nil
		} else {
			if b[0] != '{' {
				return out, fault.Invalid("example must be a JSON object, as every payload is")
			}
			if len(b) > MaxExampleBytes {
				return out, limitError("example is %d KiB as compact JSON; the catalogue takes examples of at most %d KiB", (len(b)+1023)>>10, MaxExampleBytes>>10)
			}
			out.example = b
		}
	}
	var sch *schema.Schema
	if out.schema != nil {
		var err error
		if sch, err = schema.Compile(out.schema); err != nil {
			return out, err
		}
	}
	if sch != nil && out.example != nil {
		details, err := sch.Check(out.example, "example")
		if err != nil {
			return out, err
		}
		if len(details) > 0 {
			return out, schema.InvalidPayload("example does not satisfy the schema", details)
		}
	}
	return out, nil
}

func compactJSON(raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if !utf8.Valid(raw) {
		return nil, errors.New("invalid UTF-8")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil || b.Len() == 0 {
		return nil, errors.New("invalid JSON")
	}
	return b.Bytes(), nil
}

func checkName(name string) error {
	if !eventtype.Valid(name) {
		return fault.Invalid("name must be an event type: 1 to 128 letters, digits or . _ - : /, starting with a letter or digit")
	}
	if brand.IsTestEventType(name) {
		return fault.Invalid("%s is the dashboard's test event, which is always accepted and cannot be in the catalogue", name)
	}
	return nil
}

// Create adds a type. A live type of that name is 409 INVALID_STATE; an archived one is brought back with
// the fields given.
func (s *Service) Create(ctx context.Context, in Input) (EventType, error) {
	if err := checkName(in.Name); err != nil {
		return EventType{}, err
	}
	f, err := merge(in.Name, fields{}, in)
	if err != nil {
		return EventType{}, err
	}
	var row db.EventType
	err = s.change(ctx, func(q *db.Queries) error {
		now := s.o.Now()
		if err := spellGroup(ctx, q, in.Name, &f, now); err != nil {
			return err
		}
		var err error
		row, err = q.CreateEventType(ctx, db.CreateEventTypeParams{Name: in.Name, Description: f.description, GroupName: f.group,
			Schema: f.schema, Example: f.example, Deprecated: f.deprecated, Now: now})
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.New(fault.InvalidState, "event type %q already exists: change it with PATCH", in.Name)
		}
		return err
	})
	if err != nil {
		return EventType{}, err
	}
	return fromRow(row), nil
}

// Update changes the fields given of a type (archived ones too, which stay archived).
func (s *Service) Update(ctx context.Context, name string, in Input) (EventType, error) {
	if in.Name != "" && in.Name != name {
		return EventType{}, fault.Invalid("an event type cannot be renamed: create the new name and archive the old one")
	}
	var row db.EventType
	err := s.change(ctx, func(q *db.Queries) error {
		cur, err := q.GetEventType(ctx, name)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.Missing("event type")
		}
		if err != nil {
			return err
		}
		f, err := merge(name, stored(cur), in)
		if err != nil {
			return err
		}
		now := s.o.Now()
		if err := spellGroup(ctx, q, name, &f, now); err != nil {
			return err
		}
		row, err = q.UpdateEventType(ctx, updateParams(name, f, false, now))
		return err
	})
	if err != nil {
		return EventType{}, err
	}
	return fromRow(row), nil
}

func stored(r db.EventType) fields {
	return fields{description: r.Description, group: r.GroupName, schema: r.Schema, example: r.Example, deprecated: r.Deprecated}
}

func updateParams(name string, f fields, restore bool, now time.Time) db.UpdateEventTypeParams {
	return db.UpdateEventTypeParams{Name: name, Description: f.description, GroupName: f.group, Schema: f.schema,
		Example: f.example, Deprecated: f.deprecated, Restore: restore, Now: now}
}

// Archive takes a type out of the catalogue. Archiving an archived type does nothing.
func (s *Service) Archive(ctx context.Context, name string) error {
	return s.change(ctx, func(q *db.Queries) error {
		_, err := q.ArchiveEventType(ctx, db.ArchiveEventTypeParams{Name: name, Now: s.o.Now()})
		if errors.Is(err, pgx.ErrNoRows) {
			if _, gerr := q.GetEventType(ctx, name); errors.Is(gerr, pgx.ErrNoRows) {
				return fault.Missing("event type")
			} else if gerr != nil {
				return gerr
			}
			return errUnchanged
		}
		return err
	})
}

// errUnchanged rolls a change back without failing it.
var errUnchanged = errors.New("unchanged")

// change runs f in a transaction holding the catalogue's lock (raising its version), then reloads this
// process's cache at once, so the process that made a change checks with it from its next publish; the
// others see it within their poll interval. f returning errUnchanged rolls back and succeeds.
func (s *Service) change(ctx context.Context, f func(q *db.Queries) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if _, err := q.LockEventTypeCatalogue(ctx); err != nil {
			return err
		}
		return f(q)
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	if err != nil {
		if fault.As(err) != nil {
			return err
		}
		return fmt.Errorf("change the event catalogue: %w", err)
	}
	if lerr := s.Load(ctx); lerr != nil {
		s.o.Log.Warn("event catalogue changed, but this process could not reload it; its poll will", "err", lerr)
	}
	return nil
}
