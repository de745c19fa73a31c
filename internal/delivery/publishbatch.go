package delivery

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
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
	// publishTimeout bounds a batch's statement: the publishes waiting on it are answered either way.
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
}

// publishRequest is a publish waiting for its batch.
type publishRequest struct {
	ctx   context.Context
	event storedEvent
	done  chan struct{}
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
		// The batch may still store it, as a statement cut off by a vanished client may have committed;
		// a retry with the same Idempotency-Key gets the first answer either way.
		return stored{}, ctx.Err()
	}
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
			batch = append(batch, r)
		}
		p.waiting = append(p.waiting[:0], p.waiting[n:]...)
		p.batchMu.Unlock()
		if len(batch) > 0 {
			p.writeBatch(batch, quiet)
		}
	}
}

// writeBatch stores a batch in one statement. When that fails and the batch holds several publishes, each
// is tried alone, so one that cannot be stored (its tenant deleted meanwhile, say) fails by itself. A
// publish stored alone at a quiet moment claims for the local worker if it is idle (publishAndClaim).
func (p *Publisher) writeBatch(batch []*publishRequest, quiet bool) {
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	events := make([]storedEvent, len(batch))
	for i, r := range batch {
		events[i] = r.event
	}
	if quiet && len(batch) == 1 {
		if w, ok := p.Local.(*Worker); ok {
			if c, ok := w.reserveForPublish(); ok {
				r := batch[0]
				var full bool
				r.rows, r.inFlight, full, r.err = p.publishAndClaim(ctx, w, c, publishParams(events))
				r.localDone = r.inFlight != nil && !full
				close(r.done)
				return
			}
		}
	}
	rows, err := db.New(p.pool).PublishEvents(ctx, publishParams(events))
	if err != nil && len(batch) > 1 {
		for _, r := range batch {
			p.writeBatch([]*publishRequest{r}, false)
		}
		return
	}
	byEvent := make(map[uuid.UUID][]db.PublishEventsRow, len(batch))
	for _, row := range rows {
		byEvent[row.EventID] = append(byEvent[row.EventID], row)
	}
	for _, r := range batch {
		r.rows, r.err = byEvent[r.event.id], err
		close(r.done)
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
	}
	return params
}
