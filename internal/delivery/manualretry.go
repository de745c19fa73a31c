package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
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
	return s.manualRetry(ctx, tenantID, id, actor, "retry delivery", activity.DeliveryResent, s.retryAllowed,
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
		func(d Delivery, actor Actor) error {
			if err := CanRetryNow(d, actor.Admin, s.maxManual); err != nil {
				return err
			}
			c, err := s.q.SubscriptionCircuit(ctx, d.SubscriptionID)
			if err != nil {
				return fmt.Errorf("subscription circuit: %w", err)
			}
			if hold := CircuitHold(c.CircuitState, c.CircuitProbeAt); hold != "" {
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
	case CircuitOpen:
		msg := "the subscription's circuit is open after failures in a row: nothing is sent to it until its probe"
		if probeAt != nil {
			msg += ", due at " + probeAt.UTC().Format(time.RFC3339)
		}
		return msg + "; retry now cannot skip that wait"
	case CircuitHalfOpen:
		return "the subscription's circuit is half open: its probe attempt is being made, and nothing else is sent until it answers"
	}
	return ""
}

// manualRetry is what Retry and RetryNow share: the rule (allowed), the subscription's resend bucket, then
// the statement (move, guarded by the state and the version read) and a NOTIFY in one transaction. When the
// statement finds no row the delivery changed since it was read (a concurrent call, a claim): the rule
// says why from its state now.
func (s *Service) manualRetry(ctx context.Context, tenantID, id uuid.UUID, actor Actor, what, action string,
	allowed func(Delivery, Actor) error, move func(q *db.Queries, seen db.WebhookDelivery, now time.Time, maxManual int32) (db.WebhookDelivery, error)) (Delivery, error) {
	cur, err := s.get(ctx, tenantID, id)
	if err != nil {
		return Delivery{}, err
	}
	if err := allowed(fromRow(cur), actor); err != nil {
		return Delivery{}, err
	}
	if s.afterRead != nil {
		s.afterRead()
	}
	wait, err := s.reserveResend(ctx, cur.SubscriptionID)
	if err != nil {
		return Delivery{}, err
	}
	if wait > 0 {
		secs := int(wait.Seconds() + 0.999)
		return Delivery{}, fault.Limited(wait, "too many resends for this subscription: at most %d a minute; try again in %d s", s.perMinute, secs)
	}
	maxManual := int32(s.maxManual)
	if actor.Admin {
		maxManual = -1
	}
	var out db.WebhookDelivery
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		row, err := move(q, cur, s.now(), maxManual)
		if err != nil {
			return err
		}
		out = row
		if err := activity.Record(ctx, q, tenantID, row.UpdatedAt, action, deliveryObject(id), nil); err != nil {
			return err
		}
		return q.NotifyDeliveriesReady(ctx, "")
	})
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := s.get(ctx, tenantID, id)
		if err != nil {
			return Delivery{}, err
		}
		if err := allowed(fromRow(cur), actor); err != nil {
			return Delivery{}, err
		}
		return Delivery{}, fault.New(fault.InvalidState, "the delivery changed while it was being retried; try again")
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("%s: %w", what, err)
	}
	return fromRow(out), nil
}

// CheckRetryNow is the rule for Retry now: only a retrying delivery (pending after a failed attempt), not
// discarded, and for a tenant within the same manual cap as a resend.
func CheckRetryNow(d Delivery, admin bool, maxManual int) RetryBlock {
	switch {
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
func CanRetryNow(d Delivery, admin bool, maxManual int) error {
	switch CheckRetryNow(d, admin, maxManual) {
	case RetryDiscarded:
		return fault.New(fault.InvalidState, "the delivery was discarded")
	case RetryNotWaiting:
		if d.State == Pending {
			return fault.New(fault.InvalidState, "the delivery has not been tried yet: it is sent as soon as it is due")
		}
		return fault.New(fault.InvalidState, "the delivery is %s: only a delivery waiting for a retry can be retried now", d.State)
	case RetryCapped:
		return fault.New(fault.MaxRetries, "the delivery was retried by hand %d times, the most allowed", d.ManualRetries)
	}
	return nil
}

func (s *Service) retryAllowed(d Delivery, actor Actor) error {
	return CanRetry(d, actor.Admin, s.maxManual)
}

// RetryBlock says why a manual retry (resend) of a delivery is not allowed; RetryAllowed when it is.
type RetryBlock int

const (
	RetryAllowed    RetryBlock = iota
	RetryDiscarded             // discarded deliveries stay for audit only
	RetryQueued                // pending or in flight: already in the queue
	RetryCapped                // a tenant retried it by hand maxManual times already
	RetryNotWaiting            // Retry now: not a delivery waiting for a retry
)

// CheckRetry is the one rule for manual retries, shared by the API, the dashboard's Resend and its note:
// delivered, failed and expired deliveries may go back to the queue, unless discarded, and a tenant (not
// an admin) at most maxManual times. RetryDelivery in db/query/deliveries.sql guards the same in SQL.
func CheckRetry(d Delivery, admin bool, maxManual int) RetryBlock {
	switch {
	case d.Discarded:
		return RetryDiscarded
	case !Retryable(d.State):
		return RetryQueued
	case !admin && d.ManualRetries >= maxManual:
		return RetryCapped
	}
	return RetryAllowed
}

// CanRetry is CheckRetry as the API's error: INVALID_STATE or MAX_RETRIES_EXCEEDED, nil when allowed.
func CanRetry(d Delivery, admin bool, maxManual int) error {
	switch CheckRetry(d, admin, maxManual) {
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
// across processes, and returns how long to wait when there is none.
func (s *Service) reserveResend(ctx context.Context, subID uuid.UUID) (time.Duration, error) {
	r, err := s.q.TakeResendToken(ctx, db.TakeResendTokenParams{ID: subID, PerMinute: float64(max(s.perMinute, 1)), Now: s.now()})
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
