// Package publish stores published events and fans them out into pending deliveries, one per matching
// subscription, in the transaction that answers the publish; publishes that arrive together share a
// statement and a commit (publishbatch.go). It then wakes the workers: its own process's at once, every
// other process's with a NOTIFY. A publish stored alone at a quiet moment claims for its own process's
// idle worker in the same round trip (publishclaim.go), through Claimer, which *delivery.Worker satisfies:
// publish depends on delivery, never the reverse.
package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/tracing"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// PublishInput is one event to publish.
type PublishInput struct {
	TenantID  uuid.UUID
	EventType string
	// Payload is the event's data as published: a JSON object.
	Payload json.RawMessage
	// IdempotencyKey, when set, makes a repeated publish return the first answer and create nothing.
	IdempotencyKey string
	// OrderingKey, when set, orders the event's deliveries to ordered subscriptions after the earlier
	// events of the same key ("" for none).
	OrderingKey string
	// OnlySubscription sends the event to that one subscription only, whatever its event types (the
	// dashboard's "Send test event"): no other subscription gets it.
	OnlySubscription *uuid.UUID
	// Internal marks Hookline's own events (operator notifications): their types are Hookline's, not the
	// platform's, so CheckEvent is not asked about them.
	Internal bool
}

// Published is the answer to a publish.
type Published struct {
	ID         string              `json:"id"`
	EventType  string              `json:"event_type"`
	CreatedAt  time.Time           `json:"created_at"`
	Deliveries []PublishedDelivery `json:"deliveries"`
}

// PublishedDelivery is one delivery a publish created.
type PublishedDelivery struct {
	ID             string `json:"id"`
	SubscriptionID string `json:"subscription_id"`
	State          string `json:"state"`
}

// Publisher stores events and fans them out into deliveries.
type Publisher struct {
	pool   *pgxpool.Pool
	policy delivery.RetryPolicy
	now    func() time.Time
	// wakeMu guards the NOTIFY schedule (see wake).
	// batchMu guards the publishes waiting to be stored and the number of goroutines storing them (see store).
	batchMu       sync.Mutex
	waiting       []*publishRequest
	executors     int
	wakeMu        sync.Mutex
	wakeScheduled bool
	wokeAt        time.Time
	// notifyTimeout bounds a NOTIFY (notifyTimeout; tests shorten it).
	notifyTimeout time.Duration
	// notified, set by tests, hears how each background NOTIFY ended.
	notified func(error)
	// Metrics, when set, counts the events accepted (EventsPublished). A field rather than a parameter so
	// that tests and tools building a Publisher without metrics need not change.
	Metrics *delivery.Metrics
	// CheckEvent, when set, is asked about every event but internal ones before anything is stored, with
	// the payload compacted; an error refuses the publish (the event catalogue: schemas, registered types).
	// It must not touch the database: it runs on every publish.
	CheckEvent func(eventType string, payload []byte) error
	// Tracer, when set, makes a span of every publish and stores its context with the deliveries, whose
	// attempts then join the publish's trace; nil is tracing off.
	Tracer trace.Tracer
	// filters keeps the tenants' payload filters (filters.go).
	filters filterCache
	// Local, when set, is this process's own worker: woken at once after a publish commits, and named in
	// the NOTIFY that wakes every other process's, so that its listener skips it (delivery.Worker.Origin).
	Local LocalWorker
}

// LocalWorker is what a Publisher needs of its own process's worker (a *delivery.Worker).
type LocalWorker interface {
	Wake()
	Origin() string
}

// NewPublisher returns a Publisher. now is the clock (time.Now in production).
func NewPublisher(pool *pgxpool.Pool, policy delivery.RetryPolicy, now func() time.Time) *Publisher {
	return &Publisher{pool: pool, policy: policy, now: now, notifyTimeout: notifyTimeout}
}

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 255

// Publish validates and stores an event and one pending delivery per matching subscription in one
// transaction (shared with the publishes that arrived meanwhile: see store), then wakes the workers. With an Idempotency-Key
// already used for the same request it returns the first answer and creates nothing.
func (p *Publisher) Publish(ctx context.Context, in PublishInput) (out Published, err error) {
	var span trace.Span
	if p.Tracer != nil {
		ctx, span = p.startPublishSpan(ctx, in)
		defer func() { endPublishSpan(span, out, err) }()
	}
	ev, err := p.prepare(in)
	if err != nil {
		return Published{}, err
	}
	if span != nil {
		ev.traceparent = tracing.Traceparent(ctx)
	}
	var st stored
	for try := 1; ; try++ {
		if err := p.applyFilters(ctx, db.New(p.pool), &ev, ev.payload, try > 1); err != nil {
			return Published{}, fmt.Errorf("publish: %w", err)
		}
		if st, err = p.store(ctx, ev); err != nil {
			return Published{}, fmt.Errorf("publish: store event: %w", err)
		}
		if !isStale(st.rows) {
			break
		}
		if try == staleTries {
			return Published{}, fmt.Errorf("publish: the tenant's filters kept changing (%d tries)", staleTries)
		}
	}
	rows := st.rows
	if len(rows) == 0 && ev.idempotencyKey != "" {
		// The key was used before (or by a concurrent publish that committed first): answer as the first time.
		return p.firstAnswer(ctx, db.New(p.pool), in, ev.requestHash)
	}
	out = Published{ID: ev.id.String(), EventType: in.EventType, CreatedAt: ev.createdAt, Deliveries: make([]PublishedDelivery, 0, len(rows))}
	waiting := false // a delivery that can be sent now and that no worker has claimed yet
	for _, r := range rows {
		if r.DeliveryID != uuid.Nil {
			state := delivery.Pending
			if st.inFlight[r.DeliveryID] { // claimed in the publish's transaction: in flight as it committed
				state = delivery.InFlight
			}
			out.Deliveries = append(out.Deliveries, PublishedDelivery{ID: r.DeliveryID.String(), SubscriptionID: r.SubscriptionID.String(), State: string(state)})
			waiting = waiting || (r.Sendable && state == delivery.Pending)
		}
	}
	// Deliveries of paused subscriptions wait for the resume, which wakes the workers itself: a claim now
	// would find nothing (with every subscription paused, ingest spent a twentieth of the server's CPU
	// and a claim per publish on it). A resume that commits while this publish is being stored may find
	// its deliveries not yet visible; the workers' poll then picks them up within about a second. Nor is
	// anyone woken for deliveries the local worker claimed with the publish, unless that claim filled every
	// slot it had (more may be due).
	switch {
	case waiting:
		p.wake(ctx, !st.localDone)
	case st.inFlight != nil && !st.localDone:
		p.Local.Wake()
	}
	// Counted after the commit: a rolled-back publish accepted nothing.
	if p.Metrics != nil {
		p.Metrics.EventsPublished.Inc()
	}
	return out, nil
}

// PublishTx stores an event and its deliveries in the caller's transaction, so that they exist exactly
// when the rest of it commits (an outbox: incident steps and their operator notifications). It takes no
// Idempotency-Key: the transaction is the guard. The workers are woken at commit (NOTIFY in the
// transaction), never before the rows are visible.
func (p *Publisher) PublishTx(ctx context.Context, tx pgx.Tx, in PublishInput) (out Published, err error) {
	if in.IdempotencyKey != "" {
		return Published{}, fault.Invalid("PublishTx takes no Idempotency-Key")
	}
	var span trace.Span
	if p.Tracer != nil {
		ctx, span = p.startPublishSpan(ctx, in)
		defer func() { endPublishSpan(span, out, err) }()
	}
	ev, err := p.prepare(in)
	if err != nil {
		return Published{}, err
	}
	if span != nil {
		ev.traceparent = tracing.Traceparent(ctx)
	}
	q := db.New(tx)
	var rows []db.PublishEventsRow
	for try := 1; ; try++ {
		if err := p.applyFilters(ctx, q, &ev, ev.payload, try > 1); err != nil {
			return Published{}, fmt.Errorf("publish: %w", err)
		}
		if rows, err = q.PublishEvents(ctx, publishParams([]storedEvent{ev})); err != nil {
			return Published{}, fmt.Errorf("publish: store event: %w", err)
		}
		if !isStale(rows) {
			break
		}
		if try == staleTries {
			return Published{}, fmt.Errorf("publish: the tenant's filters kept changing (%d tries)", staleTries)
		}
	}
	out = Published{ID: ev.id.String(), EventType: in.EventType, CreatedAt: ev.createdAt, Deliveries: make([]PublishedDelivery, 0, len(rows))}
	for _, r := range rows {
		if r.DeliveryID != uuid.Nil {
			out.Deliveries = append(out.Deliveries, PublishedDelivery{ID: r.DeliveryID.String(), SubscriptionID: r.SubscriptionID.String(), State: string(delivery.Pending)})
		}
	}
	if len(out.Deliveries) > 0 {
		if err := q.NotifyDeliveriesReady(ctx, ""); err != nil {
			return Published{}, fmt.Errorf("publish: notify: %w", err)
		}
	}
	return out, nil
}

// SendTo publishes one event to one subscription only, whatever its event types (the dashboard's test and
// example events), and records action in the activity log, in one transaction. It makes no delivery (and
// records nothing) when the subscription takes none: disabled, or gone.
func (p *Publisher) SendTo(ctx context.Context, tenantID, subscriptionID uuid.UUID, eventType string, payload json.RawMessage, action string) (Published, error) {
	var out Published
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var err error
		out, err = p.PublishTx(ctx, tx, PublishInput{TenantID: tenantID, EventType: eventType, Payload: payload, OnlySubscription: &subscriptionID})
		if err != nil || len(out.Deliveries) == 0 {
			return err
		}
		return activity.Record(ctx, tx, tenantID, out.CreatedAt, action,
			activity.Object{Type: "delivery", ID: out.Deliveries[0].ID}, map[string]any{"event_type": eventType})
	})
	if err != nil {
		return Published{}, err
	}
	if p.Metrics != nil {
		p.Metrics.EventsPublished.Inc()
	}
	return out, nil
}

// startPublishSpan starts a publish's span, the child of ctx's (the request's, itself the child of the
// publisher's traceparent header).
func (p *Publisher) startPublishSpan(ctx context.Context, in PublishInput) (context.Context, trace.Span) {
	return p.Tracer.Start(ctx, "publish", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		delivery.AttrTenantID.String(in.TenantID.String()), delivery.AttrEventType.String(in.EventType)))
}

// endPublishSpan ends a publish's span with what it stored, or why it stored nothing.
func endPublishSpan(span trace.Span, out Published, err error) {
	if err != nil {
		delivery.SpanFailed(span, err)
	} else {
		span.SetAttributes(delivery.AttrEventID.String(out.ID), attribute.Int("hookline.deliveries", len(out.Deliveries)))
	}
	span.End()
}

// prepare validates a publish and makes the event to store: its id, body and request hash.
func (p *Publisher) prepare(in PublishInput) (storedEvent, error) {
	if !eventtype.Valid(in.EventType) {
		return storedEvent{}, fault.Invalid("event_type must be 1 to 128 letters, digits or . _ - : /, starting with a letter or digit")
	}
	payload := bytes.TrimSpace(in.Payload)
	// Compact validates as it goes: one pass over the payload instead of a check and then a copy.
	var compact bytes.Buffer
	if len(payload) == 0 || payload[0] != '{' || json.Compact(&compact, payload) != nil {
		return storedEvent{}, fault.Invalid("payload must be a JSON object")
	}
	// json.Valid accepts invalid UTF-8 inside strings; receivers would get (and the API serve back) JSON
	// that is not valid, so it is refused now rather than failing later.
	if !utf8.Valid(payload) {
		return storedEvent{}, fault.Invalid("payload must be valid UTF-8")
	}
	if p.CheckEvent != nil && !in.Internal {
		// Before the event joins a batch (store): a refused event fails alone and stores nothing.
		if err := p.CheckEvent(in.EventType, compact.Bytes()); err != nil {
			return storedEvent{}, err
		}
	}
	if len(in.IdempotencyKey) > maxIdempotencyKey {
		return storedEvent{}, fault.Invalid("Idempotency-Key is longer than %d characters", maxIdempotencyKey)
	}
	if !utf8.ValidString(in.IdempotencyKey) || strings.ContainsFunc(in.IdempotencyKey, unicode.IsControl) {
		return storedEvent{}, fault.Invalid("Idempotency-Key must be printable UTF-8 text without control characters")
	}
	if err := delivery.ValidateOrderingKey(in.OrderingKey); err != nil {
		return storedEvent{}, err
	}
	// The request hash tells a retried publish from another request that reuses the key; it is taken over
	// the compacted payload so that whitespace alone does not make a retry look like a different request.
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", in.EventType)
	h.Write(compact.Bytes())
	if in.OnlySubscription != nil {
		h.Write(in.OnlySubscription[:])
	}
	if in.OrderingKey != "" {
		// a NUL cannot be in a key: "k" + payload never hashes like another split
		fmt.Fprintf(h, "\x00ordering_key\x00%s", in.OrderingKey)
	}
	reqHash := h.Sum(nil)

	now := p.now().UTC().Truncate(time.Microsecond) // PostgreSQL keeps microseconds
	id, err := uuid.NewV7()
	if err != nil {
		return storedEvent{}, err
	}
	body := eventBody(in.EventType, now, compact.Bytes())
	ev := storedEvent{id: id, tenantID: in.TenantID, eventType: in.EventType, body: body, idempotencyKey: in.IdempotencyKey,
		requestHash: reqHash, createdAt: now, giveUpAt: p.policy.GiveUpAt(now), payload: compact.Bytes(),
		orderingKey: in.OrderingKey}
	if in.OnlySubscription != nil {
		ev.onlySubscription = *in.OnlySubscription
	}
	return ev, nil
}

// firstAnswer answers a publish that reuses an Idempotency-Key as the first publish was answered: the
// answer kept with the event when there is one (a publish whose deliveries were claimed in its own
// transaction keeps it, "in_flight" for those: KeepPublishAnswer; so did events stored before answers
// were rebuilt), else the same event and deliveries rebuilt from the rows, each "pending" as it was then.
func (p *Publisher) firstAnswer(ctx context.Context, q *db.Queries, in PublishInput, reqHash []byte) (Published, error) {
	prev, err := q.GetEventByIdempotencyKey(ctx, db.GetEventByIdempotencyKeyParams{TenantID: in.TenantID, IdempotencyKey: in.IdempotencyKey})
	if err != nil {
		return Published{}, fmt.Errorf("publish: read idempotent event: %w", err)
	}
	if !bytes.Equal(prev.RequestHash, reqHash) {
		return Published{}, fault.Invalid("Idempotency-Key %q was already used for a different request", in.IdempotencyKey)
	}
	var first Published
	if len(prev.Response) > 0 {
		if err := json.Unmarshal(prev.Response, &first); err != nil {
			return Published{}, fmt.Errorf("publish: idempotent event %s has no readable stored answer", prev.ID)
		}
		first.CreatedAt = first.CreatedAt.UTC() // kept by PostgreSQL with an offset; answered in UTC
		return first, nil
	}
	rows, err := q.PublishedDeliveries(ctx, db.PublishedDeliveriesParams{EventID: prev.ID, TenantID: in.TenantID})
	if err != nil {
		return Published{}, fmt.Errorf("publish: read idempotent event's deliveries: %w", err)
	}
	first = Published{ID: prev.ID.String(), EventType: prev.EventType, CreatedAt: prev.CreatedAt.UTC(), Deliveries: make([]PublishedDelivery, 0, len(rows))}
	for _, r := range rows {
		first.Deliveries = append(first.Deliveries, PublishedDelivery{ID: r.ID.String(), SubscriptionID: r.SubscriptionID.String(), State: string(delivery.Pending)})
	}
	return first, nil
}

// wakeEvery is the shortest gap between two NOTIFYs of one process: a burst of publishes is announced
// once per gap rather than once per publish (each NOTIFY is a statement here and a claim in every idle
// worker). The first publish after a quiet spell is announced at once, so idle pickup does not wait.
const wakeEvery = 5 * time.Millisecond

// notifyTimeout bounds the NOTIFY a publish sends in the background (a statement of milliseconds).
const notifyTimeout = 5 * time.Second

// wake tells the workers of every process that deliveries are ready, after the publish committed. The
// NOTIFY is its own statement, not part of the publish: PostgreSQL serialises the commits of transactions
// that notify, which made every publisher wait on every other. It is sent in the background, at once or,
// within wakeEvery of the last one, when the gap is over; a publish that finds one already scheduled
// relies on it: that NOTIFY is sent after this publish committed, so no publish's rows go unannounced.
//
// The local worker is woken at once unless wakeLocal is false: it claimed with the publish and took all
// that it could.
func (p *Publisher) wake(ctx context.Context, wakeLocal bool) {
	origin := ""
	if p.Local != nil {
		if wakeLocal {
			p.Local.Wake() // a channel send that never blocks: not throttled
		}
		origin = p.Local.Origin()
	}
	p.wakeMu.Lock()
	defer p.wakeMu.Unlock()
	if p.wakeScheduled {
		return
	}
	p.wakeScheduled = true
	ctx = context.WithoutCancel(ctx)
	time.AfterFunc(time.Until(p.wokeAt.Add(wakeEvery)), func() {
		p.wakeMu.Lock()
		p.wakeScheduled, p.wokeAt = false, time.Now()
		p.wakeMu.Unlock()
		// Bounded: on a database that stopped answering, an unbounded NOTIFY held its connection until TCP
		// gave up (minutes), and every later publish's NOTIFY another, until the publisher's pool was full.
		ctx, cancel := context.WithTimeout(ctx, p.notifyTimeout)
		defer cancel()
		// A failed NOTIFY only delays pickup until the workers' poll; the event is stored.
		err := db.New(p.pool).NotifyDeliveriesReady(ctx, origin)
		if p.notified != nil {
			p.notified(err)
		}
	})
}

// eventBody is what receivers get: {"type", "timestamp", "data"}, data being the payload compacted (as
// encoding/json would write it, without escaping HTML: strings byte for byte as published). Built by hand
// because encoding/json would parse the payload once more; the type's syntax and the timestamp's format
// need no escaping.
func eventBody(eventType string, created time.Time, compacted []byte) []byte {
	b := make([]byte, 0, len(compacted)+len(eventType)+64)
	b = append(b, `{"type":"`...)
	b = append(b, eventType...)
	b = append(b, `","timestamp":"`...)
	b = created.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":`...)
	b = append(b, compacted...)
	return append(b, '}')
}
