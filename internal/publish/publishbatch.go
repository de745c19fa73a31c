package publish

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Publishes are stored in batches: the publishes that arrive while earlier ones are being written go
// together into one statement and one commit (PublishEvents). PostgreSQL's cost of a publish is mostly its
// transaction (commit, WAL record, statement start), not its rows: with 16 concurrent publishers, batches of
// three to four took the database's side of ingest from about 3,000 to 5,700 events/s. Nothing waits to
// fill a batch: a publish that arrives when a writer is free is written at once, alone, so a quiet
// system's latency is unchanged; under load the batches grow by themselves.
const (
	// publishWriters bounds the statements storing publishes at once (and the connections they hold); more
	// than one, so one slow batch (say, one waiting on another transaction's Idempotency-Key) does not hold
	// up the rest. Few, because the statement's fixed cost dominates: starting its executor was a quarter of
	// PostgreSQL's CPU in ingest. With 4 writers and 16 publishers batches averaged 2.5 events; 2 writers
	// took ingest up about a tenth and PostgreSQL's CPU per event down a sixth, in alternating runs of
	// make bench -only ingest (one writer another 5 %, but nothing then runs beside a batch that waits).
	publishWriters = 2
	// PublishConns is the most connections a Publisher holds at once: its writers and a NOTIFY.
	PublishConns = publishWriters + 1
	// maxPublishBatch bounds the events of one statement.
	maxPublishBatch = 100
	// publishTimeout bounds a batch's statement and the tries of its publishes alone after it failed: the
	// publishes waiting on it are answered either way.
	publishTimeout = 30 * time.Second
)

// storedEvent is one event to store with its fan-out.
type storedEvent struct {
	id, tenantID     uuid.UUID
	eventType        string
	body             []byte
	idempotencyKey   string    // "" for none
	onlySubscription uuid.UUID // uuid.Nil for every matching subscription
	requestHash      []byte
	createdAt        time.Time
	giveUpAt         time.Time
	traceparent      string // the publish span's context, kept with the deliveries; "" when not tracing
	orderingKey      string // "" for none
	payload          []byte // the payload compacted, which filters are matched against
	// filtersVersion is the tenant's filters_version the filters were matched at, passed the filtered
	// subscriptions the event matched (see filters.go).
	filtersVersion int64
	passed         []uuid.UUID
}

// publishRequest is a publish waiting for its batch.
type publishRequest struct {
	ctx   context.Context
	event storedEvent
	done  chan struct{}
	// taken says a batch took it (set under batchMu): from then on a statement decides its fate.
	taken bool
	stored
	err error
}

// stored is what storing a publish did: PublishEvents' rows for it, and the deliveries the local worker
// claimed with it (see publishAndClaim), with whether that claim left the worker anything to look for.
type stored struct {
	rows []db.PublishEventsRow
	// inFlight are the deliveries claimed in the publish's own transaction.
	inFlight map[uuid.UUID]bool
	// localDone says the local worker claimed with the publish and had slots left over: everything it
	// could take was taken, so it need not be woken to look again.
	localDone bool
}

// store writes the event and its deliveries, in a batch with whatever other publishes are waiting, and
// returns its rows of PublishEvents' answer: none when its Idempotency-Key was used before. Writers are
// goroutines started here while fewer than publishWriters run; each stores batches until none is waiting,
// then ends, so nothing runs while nobody publishes.
//
// A caller whose ctx ends while its publish still waits for a batch gets ctx's error, and the publish is
// never stored. Once a statement storing it runs, the caller waits for that statement's outcome, so the
// answer says what was stored: a publish stored alone is cancelled in PostgreSQL when its caller goes
// (writeAlone), one in a batch with others is stored or not with them (publishTimeout bounds the wait).
func (p *Publisher) store(ctx context.Context, ev storedEvent) (stored, error) {
	r := &publishRequest{ctx: ctx, event: ev, done: make(chan struct{})}
	p.batchMu.Lock()
	p.waiting = append(p.waiting, r)
	if p.executors < publishWriters {
		p.executors++
		go p.writeBatches()
	}
	p.batchMu.Unlock()
	select {
	case <-r.done:
		return r.stored, r.err
	case <-ctx.Done():
	}
	p.batchMu.Lock()
	taken := r.taken
	p.batchMu.Unlock()
	if !taken {
		// Still waiting: writeBatches drops it (its ctx has ended) rather than store it behind our back.
		return stored{}, ctx.Err()
	}
	<-r.done
	return r.stored, r.err
}

func (p *Publisher) writeBatches() {
	for {
		p.batchMu.Lock()
		if len(p.waiting) == 0 {
			p.executors--
			p.batchMu.Unlock()
			return
		}
		n := min(len(p.waiting), maxPublishBatch)
		// A quiet moment: this publish is the only one waiting and no other writer is storing any. Only
		// then may it claim for the local worker (publishAndClaim); under load, when publishes queue up,
		// that claim would find nothing new most of the time (say, ingest to paused subscriptions).
		quiet := len(p.waiting) == 1 && p.executors == 1
		batch := make([]*publishRequest, 0, n)
		for _, r := range p.waiting[:n] {
			if r.ctx.Err() != nil { // its caller is gone and was told so: store nothing for it
				r.err = r.ctx.Err()
				close(r.done)
				continue
			}
			r.taken = true
			batch = append(batch, r)
		}
		p.waiting = append(p.waiting[:0], p.waiting[n:]...)
		p.batchMu.Unlock()
		if len(batch) > 0 {
			p.writeBatch(batch, quiet)
		}
	}
}

// writeBatch stores a batch in one statement, within publishTimeout. When that fails and the batch holds
// several publishes, each is tried alone (writeAlone), so one that cannot be stored (its tenant deleted
// meanwhile, say) fails by itself; the tries share what is left of the batch's time.
func (p *Publisher) writeBatch(batch []*publishRequest, quiet bool) {
	deadline := time.Now().Add(publishTimeout)
	if len(batch) == 1 {
		p.writeAlone(batch[0], quiet, deadline)
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	events := make([]storedEvent, len(batch))
	for i, r := range batch {
		events[i] = r.event
	}
	rows, err := db.New(p.pool).PublishEvents(ctx, publishParams(events))
	if err != nil {
		for _, r := range batch {
			p.writeAlone(r, false, deadline)
		}
		return
	}
	byEvent := make(map[uuid.UUID][]db.PublishEventsRow, len(batch))
	for _, row := range rows {
		byEvent[row.EventID] = append(byEvent[row.EventID], row)
	}
	for _, r := range batch {
		r.rows = byEvent[r.event.id]
		close(r.done)
	}
}

// writeAlone stores one publish in a statement of its own, until deadline, and only for a caller that is
// still there: one that has gone (or got an error) before it starts gets nothing stored, and one that goes
// while it runs has it cancelled in PostgreSQL (not merely abandoned by the client, which would let it
// commit when, say, the lock it waits on is released). Its answer is what the statement did: stored if it
// committed before the cancel reached it. A publish stored alone at a quiet moment claims for the local
// worker if it is idle (publishAndClaim).
func (p *Publisher) writeAlone(r *publishRequest, quiet bool, deadline time.Time) {
	defer close(r.done)
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		r.err = err
		return
	}
	stopWatching := cancelWhenDone(r.ctx, ctx, conn)
	defer func() {
		if stopWatching() {
			// A cancel request was sent: it may reach the connection's next statement, so it has none.
			_ = conn.Hijack().Close(context.Background())
			return
		}
		conn.Release()
	}()
	if r.ctx.Err() != nil { // gone while we waited for the connection
		r.err = r.ctx.Err()
		return
	}
	params := publishParams([]storedEvent{r.event})
	if quiet {
		if w, ok := p.Local.(Claimer); ok {
			if c, ok := w.ReserveForPublish(); ok {
				var full bool
				r.rows, r.inFlight, full, r.err = p.publishAndClaim(ctx, r.ctx, conn, w, c, params)
				r.localDone = r.inFlight != nil && !full
				r.err = callerGone(r.ctx, r.err)
				return
			}
		}
	}
	r.rows, r.err = db.New(conn).PublishEvents(ctx, params)
	r.err = callerGone(r.ctx, r.err)
}

// callerGone says why a statement failed whose caller has gone: it was cancelled for that.
func callerGone(caller context.Context, err error) error {
	if err != nil && caller.Err() != nil {
		return fmt.Errorf("publish cancelled, its caller gone: %w", caller.Err())
	}
	return err
}

// cancelTimeout bounds a cancel request (a new connection to the server).
const cancelTimeout = 2 * time.Second

// cancelWhenDone asks PostgreSQL to cancel what conn runs once caller or stmt ends (the caller gone, or
// the statement's time up: the client cutting off the statement alone leaves it running in the server).
// The returned stop ends the watch, waits for a cancel request under way, and reports whether one was sent.
func cancelWhenDone(caller, stmt context.Context, conn *pgxpool.Conn) (stop func() bool) {
	watched, unwatch := context.WithCancel(stmt)
	stopCaller := context.AfterFunc(caller, unwatch)
	sent := make(chan struct{})
	stopCancel := context.AfterFunc(watched, func() {
		defer close(sent)
		ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		defer cancel()
		_ = conn.Conn().PgConn().CancelRequest(ctx)
	})
	return func() bool {
		stopCaller()
		if stopCancel() {
			unwatch()
			return false // the statement ended first: no cancel request
		}
		unwatch()
		<-sent
		return true
	}
}

// publishParams zips events into PublishEvents' arrays.
func publishParams(events []storedEvent) db.PublishEventsParams {
	var params db.PublishEventsParams
	for _, e := range events {
		params.Ids = append(params.Ids, e.id)
		params.TenantIds = append(params.TenantIds, e.tenantID)
		params.EventTypes = append(params.EventTypes, e.eventType)
		params.Bodies = append(params.Bodies, e.body)
		params.IdempotencyKeys = append(params.IdempotencyKeys, e.idempotencyKey)
		params.RequestHashes = append(params.RequestHashes, e.requestHash)
		params.OnlySubscriptionIds = append(params.OnlySubscriptionIds, e.onlySubscription)
		params.CreatedAt = append(params.CreatedAt, e.createdAt)
		params.GiveUpAt = append(params.GiveUpAt, e.giveUpAt)
		params.Traceparents = append(params.Traceparents, e.traceparent)
		params.FiltersVersions = append(params.FiltersVersions, e.filtersVersion)
		params.Passed = append(params.Passed, passedList(e.passed))
		params.OrderingKeys = append(params.OrderingKeys, e.orderingKey)
	}
	return params
}

// passedList writes the filtered subscriptions an event matched as PublishEvents takes them: their ids,
// comma-separated ("" for none).
func passedList(ids []uuid.UUID) string {
	if len(ids) == 0 {
		return ""
	}
	b := make([]byte, 0, len(ids)*37)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, id.String()...)
	}
	return string(b)
}
