package publish

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/filter"
)

// Payload filters are matched here, in the publishing process, against each event's payload: a filter in
// SQL would be a second implementation (the dashboard's and the API's filter test run this one), and would
// parse the payload once per subscription. The process keeps each tenant's filters, read in one statement
// with the tenant's filters_version; the publish statement stores an event only when that version is still
// the tenant's (any change of a filter or of a filtered subscription's event types moves it), else it
// answers "stale" and the event is published again after the filters are read again. So no event is ever
// fanned out by a filter that was changed or removed before it was stored.

// maxCachedTenants bounds the tenants whose filters a process keeps; past it the cache starts again empty
// (each tenant's filters are one indexed read away).
const maxCachedTenants = 10000

// staleTries bounds how often one publish reads the filters again because they changed under it.
const staleTries = 5

// tenantFilters are a tenant's filters at one filters_version.
type tenantFilters struct {
	version int64
	subs    []filteredSubscription
}

// filteredSubscription is one subscription with a filter, with the event types it wants (as the publish
// statement tests them: empty for every type, exact types, or prefix patterns "invoice.*").
type filteredSubscription struct {
	id         uuid.UUID
	eventTypes []string
	filter     *filter.Filter
}

// filterCache holds tenants' filters for the publishes of one process.
type filterCache struct {
	mu      sync.Mutex
	tenants map[uuid.UUID]*tenantFilters
}

// get returns the tenant's filters, read from the database when not kept (or when fresh is set: the kept
// ones were found stale).
func (c *filterCache) get(ctx context.Context, q *db.Queries, tenantID uuid.UUID, fresh bool) (*tenantFilters, error) {
	c.mu.Lock()
	tf := c.tenants[tenantID]
	c.mu.Unlock()
	if tf != nil && !fresh {
		return tf, nil
	}
	rows, err := q.TenantFilters(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("read the tenant's filters: %w", err)
	}
	if len(rows) == 0 {
		return nil, fault.Missing("tenant")
	}
	tf = &tenantFilters{version: rows[0].FiltersVersion}
	for _, r := range rows {
		if r.SubscriptionID == nil {
			continue
		}
		f, err := filter.Parse(r.Filter)
		if err != nil {
			// Stored filters were validated when saved; one that no longer parses (a stricter release)
			// matches nothing rather than everything: the customer asked for fewer events, not more.
			f = nil
		}
		tf.subs = append(tf.subs, filteredSubscription{id: *r.SubscriptionID, eventTypes: r.EventTypes, filter: f})
	}
	c.mu.Lock()
	if c.tenants == nil || len(c.tenants) >= maxCachedTenants {
		c.tenants = map[uuid.UUID]*tenantFilters{}
	}
	if cur := c.tenants[tenantID]; cur == nil || cur.version <= tf.version {
		c.tenants[tenantID] = tf
	}
	c.mu.Unlock()
	return tf, nil
}

// matching returns the subscriptions among tf whose type test and filter the event passes.
func (tf *tenantFilters) matching(eventType string, payload []byte) ([]uuid.UUID, error) {
	if len(tf.subs) == 0 {
		return nil, nil
	}
	var (
		doc    any
		parsed bool
		out    []uuid.UUID
	)
	for _, s := range tf.subs {
		if s.filter == nil || !wantsType(s.eventTypes, eventType) {
			continue
		}
		if !parsed {
			var err error
			if doc, err = filter.Event(eventType, payload); err != nil {
				return nil, fault.Invalid("payload must be a JSON object")
			}
			parsed = true
		}
		if s.filter.Match(doc) {
			out = append(out, s.id)
		}
	}
	return out, nil
}

// wantsType is the publish statement's type test: an empty list wants every type; otherwise the type
// itself or a pattern "prefix.*" whose prefix ends at one of the type's dots.
func wantsType(types []string, eventType string) bool {
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if t == eventType {
			return true
		}
		if prefix, ok := strings.CutSuffix(t, "*"); ok && strings.HasSuffix(prefix, ".") && strings.HasPrefix(eventType, prefix) {
			return true
		}
	}
	return false
}

// applyFilters sets ev's filters_version and the filtered subscriptions it passes, from the tenant's
// filters (read again when fresh).
func (p *Publisher) applyFilters(ctx context.Context, q *db.Queries, ev *storedEvent, payload []byte, fresh bool) error {
	tf, err := p.filters.get(ctx, q, ev.tenantID, fresh)
	if err != nil {
		return err
	}
	ev.filtersVersion = tf.version
	ev.passed = nil
	if ev.onlySubscription != uuid.Nil {
		return nil // a test event goes to its one subscription whatever its filter
	}
	ev.passed, err = tf.matching(ev.eventType, payload)
	return err
}

// isStale says whether PublishEvents refused the event because its tenant's filters moved meanwhile.
func isStale(rows []db.PublishEventsRow) bool {
	return len(rows) == 1 && rows[0].Stale
}
