package catalogue

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/bounded"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/catalogue/schema"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/service"
)

// Each process keeps the catalogue compiled in memory and checks publishes against that copy: a publish
// never reads the catalogue. The copy is refreshed by polling the catalogue's version (one row, raised
// by every change in its transaction) every PollInterval, 1 s by default, and reloading everything when
// it moved; a change is therefore in force in every process within about a second (the contract allows
// five), and at once in the process that made it. Polling rather than LISTEN/NOTIFY: a primary-key read a
// second per process costs nothing next to the publishes, needs no connection held open per process, and
// cannot miss a change when a connection drops (a lost notification would need a poll behind it anyway).

// snapshot is the catalogue as one load found it.
type snapshot struct {
	version int64
	types   map[string]*compiled
	live    []string // names of the types not archived, for patterns
}

// compiled is one type as publishes are checked against it.
type compiled struct {
	archived bool
	schema   *schema.Schema // nil: no schema
	// schemaSum is the stored schema's SHA-256: a reload compiles only the schemas whose sum changed.
	schemaSum [sha256.Size]byte
}

// Load reads the catalogue and compiles its schemas when its version moved since the last load.
func (s *Service) Load(ctx context.Context) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	version, err := s.q.EventTypeCatalogueVersion(ctx)
	if err != nil {
		return fmt.Errorf("read the event catalogue's version: %w", err)
	}
	if version == s.snap.Load().version {
		return nil
	}
	// Read after the version: a change committed in between is loaded now and loaded again at the next
	// poll (its version is newer than the one kept), never missed.
	rows, err := s.q.ListEventTypes(ctx, true)
	if err != nil {
		return fmt.Errorf("load the event catalogue: %w", err)
	}
	prev := s.snap.Load()
	next := &snapshot{version: version, types: make(map[string]*compiled, len(rows))}
	for _, r := range rows {
		c := &compiled{archived: r.ArchivedAt != nil}
		if r.Schema != nil && !c.archived {
			c.schemaSum = sha256.Sum256(r.Schema)
			// A change compiles the schema it changed, not every stored one: compiling costs up to tens of
			// milliseconds a schema, and every process reloads after every change.
			if old := prev.types[r.Name]; old != nil && old.schemaSum == c.schemaSum {
				c.schema = old.schema
			} else {
				s.compiles.Add(1)
				sch, err := schema.Compile(r.Schema)
				if err != nil {
					// Stored schemas compiled when stored; one that no longer does (a library upgrade, or
					// stored before the catalogue's limits) is not enforced rather than refusing every
					// event of its type.
					s.o.Log.Error("stored event type schema does not compile; its events are accepted unchecked", "event_type", r.Name, "err", err)
				}
				c.schema = sch
			}
		}
		next.types[r.Name] = c
		if !c.archived {
			next.live = append(next.live, r.Name)
		}
	}
	s.snap.Store(next)
	return nil
}

// The catalogue's poll is a background service: the server starts and stops it with the others.
var _ service.Service = (*Service)(nil)

// Start loads the catalogue and keeps reloading it every PollInterval until Stop. ctx bounds the first
// load only, as for every service (internal/service).
func (s *Service) Start(ctx context.Context) error {
	if err := s.Load(ctx); err != nil {
		return err
	}
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.stop != nil {
		return nil
	}
	pollCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stop, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.poll(pollCtx)
	}()
	return nil
}

// poll reloads the catalogue every PollInterval until ctx ends. A reload that fails is tried again at the
// next tick: until then, publishes are checked against the last one loaded.
func (s *Service) poll(ctx context.Context) {
	t := time.NewTicker(s.o.PollInterval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := bounded.Do(ctx, bounded.Policy{PerTry: 5 * time.Second, Tries: 1}, s.Load)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			s.o.Log.Warn("event catalogue reload failed; publishes are checked against the last one loaded", "err", err)
		case err == nil && failing:
			failing = false
			s.o.Log.Info("event catalogue reloaded again")
		}
	}
}

// Stop ends the reloading started by Start and waits for it until ctx ends. Safe to call more than once,
// or without Start.
func (s *Service) Stop(ctx context.Context) error {
	s.stopMu.Lock()
	stop, done := s.stop, s.done
	s.stop = nil
	s.stopMu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("event catalogue: %w", ctx.Err())
	}
}

// CheckEvent is the publisher's check of an event against the catalogue, before anything is stored:
// a payload (compacted JSON object) that does not satisfy its type's schema is INVALID_REQUEST with
// details; with RegisteredOnly, a type that is not in the catalogue (or archived) is refused too. The
// dashboard's test event is always accepted.
func (s *Service) CheckEvent(eventType string, payload []byte) error {
	if brand.IsTestEventType(eventType) {
		return nil
	}
	c := s.snap.Load().types[eventType]
	if c == nil || c.archived {
		if s.o.RegisteredOnly {
			return fault.Invalid("event type %q is not in the event catalogue, and this server accepts only registered types (HOOKLINE_EVENT_TYPES=registered): register it with POST /api/v1/event-types", eventType)
		}
		return nil
	}
	if c.schema == nil {
		return nil
	}
	details, err := c.schema.Check(payload, "it")
	if err != nil {
		return fault.Invalid("payload of event type %q cannot be checked against its schema: %s", eventType, fault.As(err).Message)
	}
	if len(details) > 0 {
		return schema.InvalidPayload(fmt.Sprintf("payload does not satisfy the schema of event type %q", eventType), details)
	}
	return nil
}

// Known says whether a subscription may name typeOrPattern when only registered types are accepted: an
// exact name must be in the catalogue (not archived), a prefix pattern (invoice.*) must cover at least one
// type that is, as the fan-out would match it. The dashboard's test event is always known.
func (s *Service) Known(typeOrPattern string) bool {
	if brand.IsTestEventType(typeOrPattern) {
		return true
	}
	snap := s.snap.Load()
	if prefix, ok := strings.CutSuffix(typeOrPattern, "*"); ok && strings.HasSuffix(prefix, ".") {
		for _, name := range snap.live {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		}
		return false
	}
	c := snap.types[typeOrPattern]
	return c != nil && !c.archived
}
