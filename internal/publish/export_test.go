package publish

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
)

// Test hooks for the external test package (publish_test).

// BatchedPublish is what PublishTogether says of one publish.
type BatchedPublish struct {
	EventID    uuid.UUID
	Deliveries []uuid.UUID // of the subscriptions, in the answer's order
	Stored     bool        // false when its Idempotency-Key was used before (or earlier in the batch)
	Err        error
}

// PublishTogether stores the publishes as one batch, as the writers do with publishes that arrive together.
func (p *Publisher) PublishTogether(ins ...PublishInput) []BatchedPublish {
	ctxs := make([]context.Context, len(ins))
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return p.PublishTogetherFor(ctxs, ins...)
}

// PublishTogetherFor is PublishTogether with each publish's caller's context: ctxs[i] is the caller of
// ins[i], as store passes it to the batch.
func (p *Publisher) PublishTogetherFor(ctxs []context.Context, ins ...PublishInput) []BatchedPublish {
	out := make([]BatchedPublish, len(ins))
	var batch []*publishRequest
	var at []int
	for i, in := range ins {
		ev, err := p.prepare(in)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].EventID = ev.id
		batch = append(batch, &publishRequest{ctx: ctxs[i], event: ev, done: make(chan struct{}), taken: true})
		at = append(at, i)
	}
	p.writeBatch(batch, false)
	for k, r := range batch {
		o := &out[at[k]]
		o.Err, o.Stored = r.err, len(r.rows) > 0
		for _, row := range r.rows {
			if row.SubscriptionID != uuid.Nil {
				o.Deliveries = append(o.Deliveries, row.SubscriptionID)
			}
		}
	}
	return out
}

// PublishAndClaim stores one event of in with the claim reserved by ReserveForPublish and returns the
// ids of the deliveries the claim took.
func (p *Publisher) PublishAndClaim(ctx context.Context, w Claimer, reserved delivery.PublishClaim, in PublishInput) ([]uuid.UUID, error) {
	ev, err := p.prepare(in)
	if err != nil {
		return nil, err
	}
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	_, claimed, _, err := p.publishAndClaim(ctx, ctx, conn, w, reserved, publishParams([]storedEvent{ev}))
	ids := make([]uuid.UUID, 0, len(claimed))
	for id := range claimed {
		ids = append(ids, id)
	}
	return ids, err
}

// Waiting is how many publishes wait for a batch (none of their statements has started).
func (p *Publisher) Waiting() int {
	p.batchMu.Lock()
	defer p.batchMu.Unlock()
	return len(p.waiting)
}

// WakeWorkers sends the NOTIFY that wakes every process's workers, as a publish does after its commit,
// within timeout, and returns a channel that gets how it ended.
func (p *Publisher) WakeWorkers(timeout time.Duration) <-chan error {
	ended := make(chan error, 1)
	p.notifyTimeout, p.notified = timeout, func(err error) { ended <- err }
	p.wake(context.Background(), false)
	return ended
}
