package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/hookline/hookline/internal/tracing"
	"github.com/jackc/pgx/v5"
)

// Manual retries: Resend (Retry) and Retry now, their rules, the cap and the per-subscription resend bucket.

// Actor says who asks for a manual action: admins are not capped.
type Actor struct {
	Admin bool
}

// Retry puts a delivered, failed or expired delivery back in the queue with a fresh schedule and deadline.
// With tracing on, its next attempt is traced under the retry's request (Retry and RetryNow store ctx's
// trace context with the delivery).
// Of several concurrent calls on one delivery (an admin's too) exactly one succeeds; the rest get
// INVALID_STATE.
func (s *Service) Retry(ctx context.Context, tenantID, id uuid.UUID, actor Actor) (Delivery, error) {
	return s.manualRetry(ctx, tenantID, id, actor, "retry delivery", activity.DeliveryResent,
		func(d Delivery, ep Endpoint, actor Actor) error { return CanRetry(d, ep, actor.Admin, s.maxManual) },
		func(q *db.Queries, seen db.WebhookDelivery, now time.Time, maxManual int32) (db.WebhookDelivery, error) {
			return q.RetryDelivery(ctx, db.RetryDeliveryParams{
				ID: id, TenantID: tenantID, CountManual: !actor.Admin, Now: now, GiveUpAt: s.policy.GiveUpAt(now), MaxManual: maxManual,
				SeenTotalAttempts: seen.TotalAttempts, SeenUpdatedAt: seen.UpdatedAt, Traceparent: tracing.Traceparent(ctx),
			})
		})
}

// RetryNow moves a retrying delivery's next attempt to now: the customer fixed the endpoint and should not
// wait out the backoff. The same rules and limits as Retry (the manual cap and the subscription's resend
// bucket) apply; anything but a retrying delivery is INVALID_STATE, so the API's retry keeps its meaning.
// While the subscription's circuit is open nothing but its probe is sent, so Retry now is refused
// (INVALID_STATE, saying when the probe is due) before anything is counted or taken from the bucket.
func (s *Service) RetryNow(ctx context.Context, tenantID, id uuid.UUID, actor Actor) (Delivery, error) {
	return s.manualRetry(ctx, tenantID, id, actor, "retry delivery now", activity.DeliveryRetriedNow,
		func(d Delivery, ep Endpoint, actor Actor) error {
			if err := CanRetryNow(d, ep, actor.Admin, s.maxManual); err != nil {
				return err
			}
			if ep.Polling {
				return fault.New(fault.InvalidState, "this delivery is of a polling subscription: nothing is sent, it waits for a consumer to pull and commit it")
			}
			if hold := CircuitHold(ep.CircuitState, ep.CircuitProbeAt); hold != "" {
				return fault.New(fault.InvalidState, "%s", hold)
			}
			return nil
		},
		func(q *db.Queries, seen db.WebhookDelivery, now time.Time, maxManual int32) (db.WebhookDelivery, error) {
			return q.RetryNowDelivery(ctx, db.RetryNowDeliveryParams{
				ID: id, TenantID: tenantID, CountManual: !actor.Admin, Now: now, MaxManual: maxManual,
				SeenTotalAttempts: seen.TotalAttempts, SeenUpdatedAt: seen.UpdatedAt, Traceparent: tracing.Traceparent(ctx),
			})
		})
}

// CircuitHold says why Retry now cannot help a delivery of a subscription whose circuit is in state (with
// its probe due at probeAt), "" when the circuit is closed: the one rule of the API, the delivery page's
// disabled button and its note.
func CircuitHold(state string, probeAt *time.Time) string {
	switch state {
	case delivery.CircuitOpen:
		msg := "the subscription's circuit is open after failures in a row: nothing is sent to it until its probe"
		if probeAt != nil {
			msg += ", due at " + probeAt.UTC().Format(time.RFC3339)
		}
		return msg + "; retry now cannot skip that wait"
	case delivery.CircuitHalfOpen:
		return "the subscription's circuit is half open: its probe attempt is being made, and nothing else is sent until it answers"
	}
	return ""
}

// manualRetry is what Retry and RetryNow share: the rule (allowed), then in one transaction the statement
// (move, guarded by the state and the version read), a token from the subscription's resend bucket, the
// activity entry and a NOTIFY. The token is taken after the move and in its transaction, so a call that
// loses a race (the statement finds no row: a concurrent call or a claim changed the delivery since it was
// read) or is over the rate changes nothing and spends nothing; the rule then says why from the state now.
// The order is the claim's (the delivery's row, then its subscription's), so the two never wait for each
// other in a cycle; and the subscription's row, locked by the token, keeps a delete from committing under
// a retry it did not see.
// A call whose row another call moved meanwhile between the queue's partition and the history's
// (pgfail.Moved) is made again from the start: it then reads the delivery as it now is.
func (s *Service) manualRetry(ctx context.Context, tenantID, id uuid.UUID, actor Actor, what, action string,
	allowed func(Delivery, Endpoint, Actor) error, move func(q *db.Queries, seen db.WebhookDelivery, now time.Time, maxManual int32) (db.WebhookDelivery, error)) (Delivery, error) {
	for try := 1; ; try++ {
		d, err := s.manualRetryOnce(ctx, tenantID, id, actor, what, action, allowed, move)
		if !pgfail.Moved(err) {
			return d, err
		}
		if try == pgfail.MovedTries {
			return Delivery{}, errChangedMeanwhile
		}
	}
}

// errChangedMeanwhile answers a change whose delivery kept being moved by others while it was tried.
var errChangedMeanwhile = fault.New(fault.InvalidState,
	"the delivery kept changing while this request was handled (other resends or a replay moved it): look at it again")

func (s *Service) manualRetryOnce(ctx context.Context, tenantID, id uuid.UUID, actor Actor, what, action string,
	allowed func(Delivery, Endpoint, Actor) error, move func(q *db.Queries, seen db.WebhookDelivery, now time.Time, maxManual int32) (db.WebhookDelivery, error)) (Delivery, error) {
	cur, ep, err := s.getToRetry(ctx, tenantID, id)
	if err != nil {
		return Delivery{}, err
	}
	if err := allowed(FromRow(cur), ep, actor); err != nil {
		return Delivery{}, err
	}
	if s.afterRead != nil {
		s.afterRead()
	}
	maxManual := int32(s.maxManual)
	if actor.Admin {
		maxManual = -1
	}
	now := s.now()
	var out db.WebhookDelivery
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		row, err := move(q, cur, now, maxManual)
		if err != nil {
			return err
		}
		wait, err := s.reserveResend(ctx, q, cur.SubscriptionID, now)
		if err != nil {
			return err
		}
		if wait > 0 {
			// Returned as the transaction's error, so the move is rolled back with it.
			secs := int(wait.Seconds() + 0.999)
			return fault.Limited(wait, "too many resends for this subscription: at most %d a minute; try again in %d s", s.perMinute, secs)
		}
		out = row
		if err := activity.Record(ctx, tx, tenantID, row.UpdatedAt, action, deliveryObject(id), nil); err != nil {
			return err
		}
		return q.NotifyDeliveriesReady(ctx, "")
	})
	if errors.Is(err, pgx.ErrNoRows) {
		cur, ep, err := s.getToRetry(ctx, tenantID, id)
		if err != nil {
			return Delivery{}, err
		}
		if err := allowed(FromRow(cur), ep, actor); err != nil {
			return Delivery{}, err
		}
		return Delivery{}, fault.New(fault.InvalidState, "the delivery changed while it was being retried; try again")
	}
	if fault.As(err) != nil {
		return Delivery{}, err
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("%s: %w", what, err)
	}
	return FromRow(out), nil
}

// Endpoint is what the manual-retry rules need of a delivery's subscription.
type Endpoint struct {
	URL string
	// DeletedAt is when the subscription was deleted, nil while it exists: nothing is sent to a deleted
	// subscription, so none of its deliveries may be queued again.
	DeletedAt *time.Time
	// CircuitState and CircuitProbeAt are its circuit breaker (Retry now waits for the probe).
	CircuitState   string
	CircuitProbeAt *time.Time
	// Polling says the delivery is a polling subscription's: pulled by consumers, never sent (no Retry now).
	Polling bool
}

// Deleted reports whether the subscription was deleted.
func (ep Endpoint) Deleted() bool { return ep.DeletedAt != nil }

// DeletedText names a deleted subscription and says when it was deleted, for messages.
func (ep Endpoint) DeletedText(subscriptionID uuid.UUID) string {
	s := "the subscription " + subscriptionID.String()
	if ep.URL != "" {
		s += " (" + httpx.RedactURL(ep.URL) + ")"
	}
	if ep.DeletedAt != nil {
		s += " was deleted at " + ep.DeletedAt.UTC().Format(time.RFC3339)
	}
	return s
}

// getToRetry reads a delivery and what the rules need of its subscription: NOT_FOUND only when there is no
// such delivery of the tenant.
func (s *Service) getToRetry(ctx context.Context, tenantID, id uuid.UUID) (db.WebhookDelivery, Endpoint, error) {
	r, err := s.q.GetDeliveryToRetry(ctx, db.GetDeliveryToRetryParams{ID: id, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return r.WebhookDelivery, Endpoint{}, fault.Missing("delivery")
	}
	if err != nil {
		return r.WebhookDelivery, Endpoint{}, fmt.Errorf("get delivery: %w", err)
	}
	return r.WebhookDelivery, Endpoint{URL: r.SubscriptionURL, DeletedAt: r.SubscriptionDeletedAt,
		CircuitState: r.CircuitState, CircuitProbeAt: r.CircuitProbeAt, Polling: r.WebhookDelivery.PollXid != nil}, nil
}

// CheckRetryNow is the rule for Retry now: only a retrying delivery (pending after a failed attempt) of a
// subscription that was not deleted, not discarded, and for a tenant within the same manual cap as a resend.
func CheckRetryNow(d Delivery, ep Endpoint, admin bool, maxManual int) RetryBlock {
	switch {
	case ep.Deleted():
		return RetryEndpointDeleted
	case d.Discarded:
		return RetryDiscarded
	case !d.Retrying():
		return RetryNotWaiting
	case !admin && d.ManualRetries >= maxManual:
		return RetryCapped
	}
	return RetryAllowed
}

// CanRetryNow is CheckRetryNow as an error: INVALID_STATE or MAX_RETRIES_EXCEEDED, nil when allowed.
func CanRetryNow(d Delivery, ep Endpoint, admin bool, maxManual int) error {
	switch CheckRetryNow(d, ep, admin, maxManual) {
	case RetryEndpointDeleted:
		return fault.New(fault.InvalidState, "%s: nothing is sent to a deleted subscription, so its deliveries cannot be retried", ep.DeletedText(d.SubscriptionID))
	case RetryDiscarded:
		return fault.New(fault.InvalidState, "the delivery was discarded")
	case RetryNotWaiting:
		if d.State == delivery.Pending {
			return fault.New(fault.InvalidState, "the delivery has not been tried yet: it is sent as soon as it is due")
		}
		return fault.New(fault.InvalidState, "the delivery is %s: only a delivery waiting for a retry can be retried now", d.State)
	case RetryCapped:
		return fault.New(fault.MaxRetries, "the delivery was retried by hand %d times, the most allowed", d.ManualRetries)
	}
	return nil
}

// RetryBlock says why a manual retry (resend) of a delivery is not allowed; RetryAllowed when it is.
type RetryBlock int

const (
	RetryAllowed    RetryBlock = iota
	RetryDiscarded             // discarded deliveries stay for audit only
	RetryQueued                // pending or in flight: already in the queue
	RetryCapped                // a tenant retried it by hand maxManual times already
	RetryNotWaiting            // Retry now: not a delivery waiting for a retry
	// RetryEndpointDeleted: its subscription was deleted, so nothing would ever send it.
	RetryEndpointDeleted
)

// CheckRetry is the one rule for manual retries, shared by the API, the dashboard's Resend and its note:
// delivered, failed and expired deliveries may go back to the queue, unless discarded or their
// subscription was deleted, and a tenant (not an admin) at most maxManual times. RetryDelivery in
// db/query/deliveries.sql guards the same in SQL.
func CheckRetry(d Delivery, ep Endpoint, admin bool, maxManual int) RetryBlock {
	switch {
	case ep.Deleted():
		return RetryEndpointDeleted
	case d.Discarded:
		return RetryDiscarded
	case !delivery.Retryable(d.State):
		return RetryQueued
	case !admin && d.ManualRetries >= maxManual:
		return RetryCapped
	}
	return RetryAllowed
}

// CanRetry is CheckRetry as the API's error: INVALID_STATE or MAX_RETRIES_EXCEEDED, nil when allowed.
func CanRetry(d Delivery, ep Endpoint, admin bool, maxManual int) error {
	switch CheckRetry(d, ep, admin, maxManual) {
	case RetryEndpointDeleted:
		return fault.New(fault.InvalidState, "%s: nothing is sent to a deleted subscription, so its deliveries cannot be resent", ep.DeletedText(d.SubscriptionID))
	case RetryDiscarded:
		return fault.New(fault.InvalidState, "the delivery was discarded")
	case RetryQueued:
		return fault.New(fault.InvalidState, "the delivery is %s: it is already queued", d.State)
	case RetryCapped:
		return fault.New(fault.MaxRetries, "the delivery was retried by hand %d times, the most allowed", d.ManualRetries)
	}
	return nil
}

// ResendWait says how long until a subscription may be resent to again by hand (0 when it may now),
// without using up anything: pages disable Resend and Retry now meanwhile.
func (s *Service) ResendWait(ctx context.Context, subID uuid.UUID) (time.Duration, error) {
	secs, err := s.q.ResendWait(ctx, db.ResendWaitParams{ID: subID, PerMinute: float64(max(s.perMinute, 1)), Now: s.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("resend wait: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// reserveResend takes a token from the subscription's resend bucket, kept in PostgreSQL so the limit holds
// across processes, and returns how long to wait when there is none. It runs in the caller's transaction
// (q), so the token comes back when the transaction is rolled back.
func (s *Service) reserveResend(ctx context.Context, q *db.Queries, subID uuid.UUID, now time.Time) (time.Duration, error) {
	r, err := q.TakeResendToken(ctx, db.TakeResendTokenParams{ID: subID, PerMinute: float64(max(s.perMinute, 1)), Now: now})
	if err != nil {
		return 0, fmt.Errorf("resend limit: %w", err)
	}
	if r.Granted {
		return 0, nil
	}
	return max(time.Duration(r.WaitSeconds*float64(time.Second)), time.Millisecond), nil
}

// deliveryObject names a delivery in the activity log.
func deliveryObject(id uuid.UUID) activity.Object {
	return activity.Object{Type: "delivery", ID: id.String()}
}
