package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/hookline/hookline/internal/sleep"
	"github.com/hookline/hookline/internal/tracing"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// batchGather is how long the fetcher may wait for more free slots before claiming a small batch.
const batchGather = 5 * time.Millisecond

func (w *Worker) fetch(ctx context.Context) {
	waited := false
	for ctx.Err() == nil {
		free := cap(w.slots) - len(w.slots)
		if free == 0 {
			select {
			case <-w.slotFreed:
			case <-ctx.Done():
			}
			continue
		}
		// Claim in batches: while attempts are running and few slots are free, give others a moment to
		// finish rather than claiming one or two rows per statement as each attempt ends. The wait is
		// short, so slots held by slow receivers never keep the free ones idle for long.
		if free < max(cap(w.slots)/4, 1) && len(w.slots) > 0 && !waited {
			waited = true
			t := time.NewTimer(batchGather)
			select {
			case <-w.slotFreed:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		waited = false
		n := min(free, w.o.BatchSize)
		rows, leaseID, err := w.claim(ctx, n)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Error("claim deliveries", "err", err)
				sleep.For(ctx, time.Second)
			}
			continue
		}
		subs := w.prepare(rows)
		for i, row := range rows {
			w.slots <- struct{}{}
			w.attempts.Add(1)
			w.goAttempt(row, leaseID, subs[i])
		}
		if len(rows) == n {
			continue // there may be more due right now
		}
		w.idle(ctx)
	}
}

// idle waits for a notification, the soonest retry this worker scheduled, or the jittered poll interval.
// A retry scheduled while it waits (by the completer) shortens the wait. While this worker's own attempts
// run (its claims' or a publish's: see publishclaim.go), a finished one ends the wait too: a claim that
// came back short may have been held back by an endpoint's concurrency cap, and a finished attempt frees
// a slot under that cap.
func (w *Worker) idle(ctx context.Context) {
	pollAt := time.Now().Add(time.Duration(float64(w.o.PollInterval) * (0.8 + 0.4*rand.Float64())))
	for {
		var freed <-chan struct{}
		if len(w.slots) > 0 {
			freed = w.slotFreed
		}
		wait := time.Until(pollAt)
		w.soonestMu.Lock()
		if !w.soonest.IsZero() {
			if d := w.soonest.Sub(w.o.Now()); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		w.soonestMu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-w.wake:
			t.Stop()
			return
		case <-freed:
			t.Stop()
			return
		case <-w.rescheduled:
			t.Stop()
			continue
		case <-t.C:
			w.soonestMu.Lock()
			if !w.soonest.IsZero() && !w.soonest.After(w.o.Now()) {
				w.soonest = time.Time{}
			}
			w.soonestMu.Unlock()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// claim takes up to n due deliveries under one new lease, within ClaimTimeout.
func (w *Worker) claim(ctx context.Context, n int) ([]db.ClaimDeliveriesRow, uuid.UUID, error) {
	ctx, cancel := context.WithTimeout(ctx, w.o.ClaimTimeout)
	defer cancel()
	leaseID := uuid.New()
	// A row the claim found pending may have been claimed, sent and recorded by another worker meanwhile:
	// its record moved it to its time partition, which SKIP LOCKED does not skip (pgfail.Moved). Claimed
	// again at once, with a new snapshot, the claim no longer sees it.
	for try := 1; ; try++ {
		now := w.o.Now()
		rows, err := w.q.ClaimDeliveries(ctx, db.ClaimDeliveriesParams{
			Now: now, Max: int32(n), LeaseExpiresAt: now.Add(w.o.Lease), LeaseID: leaseID, Cap: int32(w.o.EndpointConcurrency),
		})
		if err == nil {
			return rows, leaseID, nil
		}
		if !pgfail.Moved(err) || try == pgfail.MovedTries {
			return nil, leaseID, fmt.Errorf("claim deliveries: %w", err)
		}
	}
}

// goAttempt sends a claimed row in a goroutine of its own and hands the result to the completer. The
// caller holds a slot for it and has counted it in w.attempts.
func (w *Worker) goAttempt(row db.ClaimDeliveriesRow, leaseID uuid.UUID, sub *subscriptionSend) {
	go func() {
		defer w.attempts.Done()
		w.results <- w.attempt(w.sendCtx, row, leaseID, sub)
	}()
}

// subscriptionSend is what every attempt of one subscription in a claimed batch sends with: its custom
// headers parsed, and its signing secrets and header values opened.
type subscriptionSend struct {
	headersErr error // unreadable headers: sent without them
	secrets    []string
	headers    map[string]string
	auth       *Auth
	cert       *ClientCertificate
	policy     RetryPolicy // the worker's, or with the subscription's own schedule
	openErr    error       // a value that does not open: the attempts wait
}

// prepare works out each subscription of a claimed batch once: the claim returns the same headers and
// secrets with every row of a subscription (read once, from its reserved row), and parsing the headers per
// row was a twentieth of the worker's CPU in a drain (decrypting them per row, with HOOKLINE_SECRET_KEY,
// more). It returns one entry per row.
func (w *Worker) prepare(rows []db.ClaimDeliveriesRow) []*subscriptionSend {
	out := make([]*subscriptionSend, len(rows))
	bySub := make(map[uuid.UUID]*subscriptionSend)
	for i, row := range rows {
		s := bySub[row.SubscriptionID]
		if s == nil {
			s = w.openSubscription(row)
			bySub[row.SubscriptionID] = s
		}
		out[i] = s
	}
	return out
}

func (w *Worker) openSubscription(row db.ClaimDeliveriesRow) *subscriptionSend {
	s := &subscriptionSend{policy: w.policy.WithSchedule(row.RetrySchedule)}
	var headers map[string]string
	if len(row.Headers) > 0 {
		if err := json.Unmarshal(row.Headers, &headers); err != nil {
			s.headersErr = err
		}
	}
	s.secrets, s.headers, s.openErr = openStored(w.o.Open, row.Secrets, headers)
	if s.openErr == nil {
		s.auth, s.cert, s.openErr = openReceiver(w.opener(), row.Auth, row.Credentials, row.TlsCertificate)
	}
	return s
}

// attempt sends one claimed delivery with its subscription's prepared headers and secrets (shared with the
// batch's other attempts, read only) and decides what comes next. It does no database work. With tracing
// on, the attempt is a span of its own (tracedAttempt); off, nothing about tracing is touched.
func (w *Worker) attempt(ctx context.Context, row db.ClaimDeliveriesRow, leaseID uuid.UUID, sub *subscriptionSend) attemptResult {
	if w.o.Tracer != nil {
		return w.tracedAttempt(ctx, row, leaseID, sub)
	}
	return w.sendAttempt(ctx, row, leaseID, sub)
}

// tracedAttempt is attempt in a span whose parent is the context stored with the delivery (its publish,
// or the replay or retry that queued it again), so the attempt lands in the same trace however much
// later, and in whichever process, it is sent. The span's context goes no further than this process: the
// sender puts no trace header on the webhook, as receivers are not part of the platform's traces.
func (w *Worker) tracedAttempt(ctx context.Context, row db.ClaimDeliveriesRow, leaseID uuid.UUID, sub *subscriptionSend) attemptResult {
	if row.Traceparent != nil {
		ctx = tracing.ContinueFrom(ctx, *row.Traceparent)
	}
	ctx, span := w.o.Tracer.Start(ctx, spanAttempt, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		AttrTenantID.String(row.TenantID.String()), attrSubscriptionID.String(row.SubscriptionID.String()),
		attrDeliveryID.String(row.ID.String()), AttrEventID.String(row.EventID.String()), AttrEventType.String(row.EventType),
		attrAttempt.Int(int(row.TotalAttempts)+1)))
	defer span.End()
	res := w.sendAttempt(ctx, row, leaseID, sub)
	if res.release {
		// Not an attempt after all (shutdown, or secrets this process cannot open): nothing is recorded.
		span.SetAttributes(attrOutcome.String("released"))
		return res
	}
	span.SetAttributes(attrOutcome.String(string(res.decision.Outcome)), attrDurationMS.Int64(res.resp.Duration.Milliseconds()))
	if res.resp.Status != 0 {
		span.SetAttributes(attrStatusCode.Int(res.resp.Status))
	}
	if res.decision.Outcome != OutcomeDelivered {
		desc := res.resp.Err
		if desc == "" {
			desc = "HTTP " + strconv.Itoa(res.resp.Status)
		}
		span.SetStatus(codes.Error, desc)
	}
	return res
}

// sendAttempt is attempt's work: send, and decide.
func (w *Worker) sendAttempt(ctx context.Context, row db.ClaimDeliveriesRow, leaseID uuid.UUID, sub *subscriptionSend) attemptResult {
	// The outgoing rate limit was applied where the row was claimed (a token bucket on the subscription).
	res := attemptResult{row: row, leaseID: leaseID}
	if sub.headersErr != nil {
		w.log.Error("subscription headers unreadable; sending without them", "subscription_id", row.SubscriptionID, "err", sub.headersErr)
	}
	if sub.openErr != nil {
		// A key missing from HOOKLINE_SECRET_KEY is the operator's to fix, not the receiver's failure: no
		// attempt is recorded, and the row waits a minute and comes back.
		w.log.Error("cannot decrypt the subscription's secrets; delivery postponed", "subscription_id", row.SubscriptionID, "err", sub.openErr)
		res.release, res.releaseAt = true, w.o.Now().Add(time.Minute)
		return res
	}
	res.resp = w.sender.Send(ctx, Request{
		URL: row.URL, MsgID: row.EventID.String(), Body: row.Body, Secrets: sub.secrets, CustomHeaders: sub.headers,
		SubscriptionID: row.SubscriptionID, Auth: sub.auth, ClientCertificate: sub.cert,
	}, w.o.Now)
	if res.resp.Canceled {
		// Cut off by shutdown: not the receiver's fault, so no attempt is recorded and the row goes back.
		res.release, res.releaseAt = true, w.o.Now()
		return res
	}
	res.decision = sub.policy.Decide(Result{Status: res.resp.Status, RetryAfter: res.resp.RetryAfter, TokenRefused: res.resp.TokenRefused},
		int(row.AttemptCount)+1, row.GiveUpAt, w.o.Now(), w.o.Jitter())
	return res
}
