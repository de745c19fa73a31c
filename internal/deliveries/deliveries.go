// Package deliveries is the read model of deliveries and the actions customers and operators take on one:
// lists with their filters, keyset pages and capped counts (list.go, find.go), several numbers of one
// snapshot (view.go), a delivery's detail with its attempts, and manual retries, resends and discards with
// their rules and limits (manualretry.go). The state machine it reads and moves is internal/delivery's.
package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Delivery is one event to one subscription, as the API and the dashboard show it.
type Delivery struct {
	ID             uuid.UUID      `json:"id"`
	EventID        uuid.UUID      `json:"event_id"`
	SubscriptionID uuid.UUID      `json:"subscription_id"`
	EventType      string         `json:"event_type"`
	State          delivery.State `json:"state"`
	AttemptCount   int            `json:"attempt_count"`
	TotalAttempts  int            `json:"total_attempts"`
	ManualRetries  int            `json:"manual_retries"`
	NextAttemptAt  *time.Time     `json:"next_attempt_at"`
	GiveUpAt       time.Time      `json:"give_up_at"`
	LastAttemptAt  *time.Time     `json:"last_attempt_at"`
	LastStatus     *int           `json:"last_status"`
	LastError      *string        `json:"last_error"`
	LastResponse   *string        `json:"last_response,omitempty"`
	DeadReason     *string        `json:"dead_reason"`
	// DeadAt is when the delivery was dead-lettered (null unless failed or expired).
	DeadAt    *time.Time `json:"dead_at"`
	Discarded bool       `json:"discarded"`
	// ReplayID names the latest bulk replay or recover that put the delivery back in the queue.
	ReplayID  *uuid.UUID `json:"replay_id"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Retrying reports whether the delivery waits for a retry (pending, tried before).
func (d Delivery) Retrying() bool { return d.State == delivery.Pending && d.TotalAttempts > 0 }

// Detail is a delivery with the request it sends and every attempt.
type Detail struct {
	Delivery
	Request  SentRequest `json:"request"`
	Attempts []Attempt   `json:"attempts"`
	// Endpoint is its subscription as the manual-retry rules see it (its URL and whether it was deleted;
	// the circuit is not read here).
	Endpoint Endpoint `json:"-"`
}

// SentRequest is the request as sent, without secrets: custom headers are never shown.
type SentRequest struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// Attempt is one HTTP request of a delivery.
type Attempt struct {
	Attempt         int               `json:"attempt"`
	StartedAt       time.Time         `json:"started_at"`
	DurationMs      int               `json:"duration_ms"`
	Status          *int              `json:"status"`
	ResponseSnippet string            `json:"response_snippet"`
	Error           string            `json:"error"`
	Outcome         delivery.Outcome  `json:"outcome"`
	RequestURL      string            `json:"request_url"`
	RequestHeaders  map[string]string `json:"request_headers,omitempty"`
	// Consumer names the polling consumer whose commit delivered the delivery (no HTTP request was made);
	// absent for an attempt Hookline sent.
	Consumer string `json:"consumer,omitempty"`
}

// FromRow is a stored delivery as the API and the dashboard show it (the replays' lists read the same rows).
func FromRow(r db.WebhookDelivery) Delivery {
	d := Delivery{
		ID: r.ID, EventID: r.EventID, SubscriptionID: r.SubscriptionID, EventType: r.EventType, State: delivery.State(r.State),
		AttemptCount: int(r.AttemptCount), TotalAttempts: int(r.TotalAttempts), ManualRetries: int(r.ManualRetries),
		GiveUpAt: r.GiveUpAt, LastAttemptAt: r.LastAttemptAt, LastError: r.LastError, LastResponse: r.LastResponse,
		DeadReason: r.DeadReason, DeadAt: r.DeadAt, Discarded: r.DiscardedAt != nil, ReplayID: r.ReplayID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if d.State == delivery.Pending {
		t := r.NextAttemptAt
		d.NextAttemptAt = &t
	}
	if r.LastStatus != nil {
		s := int(*r.LastStatus)
		d.LastStatus = &s
	}
	return d
}

// Service reads deliveries and carries out customers' and operators' actions on them.
type Service struct {
	pool      *pgxpool.Pool
	q         *db.Queries
	policy    delivery.RetryPolicy
	now       func() time.Time
	maxManual int
	perMinute int
	// afterRead, set by tests, runs between a manual retry's read and its statement.
	afterRead func()
}

// NewService returns a Service. maxManual caps a tenant's manual retries of one delivery;
// resendPerMinute limits manual resends per subscription.
func NewService(pool *pgxpool.Pool, policy delivery.RetryPolicy, now func() time.Time, maxManual, resendPerMinute int) *Service {
	return &Service{pool: pool, q: db.New(pool), policy: policy, now: now, maxManual: maxManual,
		perMinute: resendPerMinute}
}

// Get returns one delivery with its request and attempts.
func (s *Service) Get(ctx context.Context, tenantID, id uuid.UUID) (Detail, error) {
	r, err := s.q.GetDeliveryDetail(ctx, db.GetDeliveryDetailParams{ID: id, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Detail{}, fault.Missing("delivery")
	}
	if err != nil {
		return Detail{}, fmt.Errorf("get delivery: %w", err)
	}
	d := Detail{Delivery: FromRow(r.WebhookDelivery), Endpoint: Endpoint{URL: r.SubscriptionURL, DeletedAt: r.SubscriptionDeletedAt}}
	rows, err := s.q.ListAttempts(ctx, db.ListAttemptsParams{DeliveryID: id, TenantID: tenantID})
	if err != nil {
		return Detail{}, fmt.Errorf("list attempts: %w", err)
	}
	d.Attempts = make([]Attempt, 0, len(rows))
	for _, a := range rows {
		at := Attempt{Attempt: int(a.Attempt), StartedAt: a.StartedAt, DurationMs: int(a.DurationMs),
			ResponseSnippet: a.ResponseSnippet, Error: a.Error, Outcome: delivery.Outcome(a.Outcome), RequestURL: a.RequestURL}
		if a.Status != nil {
			st := int(*a.Status)
			at.Status = &st
		}
		if a.Consumer != nil {
			at.Consumer = *a.Consumer
		}
		_ = json.Unmarshal(a.RequestHeaders, &at.RequestHeaders)
		d.Attempts = append(d.Attempts, at)
	}
	// The request as it is sent: the last attempt's headers when there was one, else the ones the next
	// attempt will carry (timestamp and signature are made per attempt).
	d.Request = SentRequest{URL: r.SubscriptionURL, Body: json.RawMessage(r.Body)}
	if n := len(d.Attempts); n > 0 {
		d.Request.URL = d.Attempts[n-1].RequestURL
		d.Request.Headers = d.Attempts[n-1].RequestHeaders
	} else {
		d.Request.Headers = map[string]string{
			"content-type": "application/json", "user-agent": delivery.UserAgent, "webhook-id": r.WebhookDelivery.EventID.String(),
		}
		for _, k := range r.SubscriptionHeaderNames {
			if lk := strings.ToLower(k); d.Request.Headers[lk] == "" {
				d.Request.Headers[lk] = delivery.Masked
			}
		}
	}
	return d, nil
}

// get reads one delivery row: NOT_FOUND only when there is no such row of the tenant, any other error as is.
func (s *Service) get(ctx context.Context, tenantID, id uuid.UUID) (db.WebhookDelivery, error) {
	row, err := s.q.GetDelivery(ctx, db.GetDeliveryParams{ID: id, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return row, fault.Missing("delivery")
	}
	if err != nil {
		return row, fmt.Errorf("get delivery: %w", err)
	}
	return row, nil
}

// Discard removes a dead delivery from lists; it stays stored for audit.
func (s *Service) Discard(ctx context.Context, tenantID, id uuid.UUID) error {
	now := s.now()
	var err error
	// A delivery retried meanwhile has moved to the queue's partition (pgfail.Moved): looked for again,
	// it is found pending, and the discard is refused below.
	for try := 1; try == 1 || (pgfail.Moved(err) && try <= pgfail.MovedTries); try++ {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			q := s.q.WithTx(tx)
			if _, err := q.DiscardDelivery(ctx, db.DiscardDeliveryParams{ID: id, TenantID: tenantID, Now: now}); err != nil {
				return err
			}
			return activity.Record(ctx, tx, tenantID, now, activity.DeliveryDiscarded, deliveryObject(id), nil)
		})
	}
	if err == nil {
		return nil
	}
	if pgfail.Moved(err) {
		return errChangedMeanwhile
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("discard delivery: %w", err)
	}
	cur, err := s.get(ctx, tenantID, id)
	if err != nil {
		return err
	}
	if cur.DiscardedAt != nil {
		return fault.New(fault.InvalidState, "the delivery was already discarded")
	}
	return fault.New(fault.InvalidState, "only dead (failed or expired) deliveries can be discarded; this one is %s", cur.State)
}

// TenantOf says which tenant a delivery belongs to, for operators who open any delivery by its id.
func (s *Service) TenantOf(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	t, err := s.q.DeliveryTenant(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, fault.Missing("delivery")
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("delivery tenant: %w", err)
	}
	return t, nil
}
