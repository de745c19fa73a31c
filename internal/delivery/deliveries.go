package delivery

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Delivery is one event to one subscription, as the API and the dashboard show it.
type Delivery struct {
	ID             uuid.UUID  `json:"id"`
	EventID        uuid.UUID  `json:"event_id"`
	SubscriptionID uuid.UUID  `json:"subscription_id"`
	EventType      string     `json:"event_type"`
	State          State      `json:"state"`
	AttemptCount   int        `json:"attempt_count"`
	TotalAttempts  int        `json:"total_attempts"`
	ManualRetries  int        `json:"manual_retries"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	GiveUpAt       time.Time  `json:"give_up_at"`
	LastAttemptAt  *time.Time `json:"last_attempt_at"`
	LastStatus     *int       `json:"last_status"`
	LastError      *string    `json:"last_error"`
	LastResponse   *string    `json:"last_response,omitempty"`
	DeadReason     *string    `json:"dead_reason"`
	// DeadAt is when the delivery was dead-lettered (null unless failed or expired).
	DeadAt    *time.Time `json:"dead_at"`
	Discarded bool       `json:"discarded"`
	// ReplayID names the latest bulk replay or recover that put the delivery back in the queue.
	ReplayID  *uuid.UUID `json:"replay_id"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Retrying reports whether the delivery waits for a retry (pending, tried before).
func (d Delivery) Retrying() bool { return d.State == Pending && d.TotalAttempts > 0 }

// Detail is a delivery with the request it sends and every attempt.
type Detail struct {
	Delivery
	Request  SentRequest `json:"request"`
	Attempts []Attempt   `json:"attempts"`
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
	Outcome         Outcome           `json:"outcome"`
	RequestURL      string            `json:"request_url"`
	RequestHeaders  map[string]string `json:"request_headers,omitempty"`
}

func fromRow(r db.WebhookDelivery) Delivery {
	d := Delivery{
		ID: r.ID, EventID: r.EventID, SubscriptionID: r.SubscriptionID, EventType: r.EventType, State: State(r.State),
		AttemptCount: int(r.AttemptCount), TotalAttempts: int(r.TotalAttempts), ManualRetries: int(r.ManualRetries),
		GiveUpAt: r.GiveUpAt, LastAttemptAt: r.LastAttemptAt, LastError: r.LastError, LastResponse: r.LastResponse,
		DeadReason: r.DeadReason, DeadAt: r.DeadAt, Discarded: r.DiscardedAt != nil, ReplayID: r.ReplayID,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if d.State == Pending {
		t := r.NextAttemptAt
		d.NextAttemptAt = &t
	}
	if r.LastStatus != nil {
		s := int(*r.LastStatus)
		d.LastStatus = &s
	}
	return d
}

// Filter selects deliveries for a list.
type Filter struct {
	SubscriptionID *uuid.UUID
	// States are states to include; "retrying" is pending with earlier attempts, "dead" failed + expired.
	States []string
	// EventID selects one event's deliveries (one per subscription it went to).
	EventID   *uuid.UUID
	EventType string
	// EventTypePrefix selects event types starting with it ("invoice." matches "invoice.paid").
	EventTypePrefix string
	// Status selects by last HTTP status: an exact code ("404") or a class ("4xx", "5xx"); see ParseStatus.
	Status string
	Since  *time.Time
	Until  *time.Time
	Limit  int
	Cursor string
	// WithTotal asks for the count of all matches.
	WithTotal bool
	// CountUpTo, when positive, stops counting there: Total is then at most CountUpTo and TotalAtLeast says
	// there may be more. Pages use it so that a count never costs a scan of millions of rows.
	CountUpTo int
}

// Page is one page of a list.
type Page struct {
	Items      []Delivery `json:"items"`
	NextCursor string     `json:"next_cursor"`
	Total      *int64     `json:"total,omitempty"`
	// TotalAtLeast is set when counting stopped at Filter.CountUpTo.
	TotalAtLeast bool `json:"-"`
}

// Service reads deliveries and carries out customers' and operators' actions on them.
type Service struct {
	pool      *pgxpool.Pool
	q         *db.Queries
	policy    RetryPolicy
	now       func() time.Time
	maxManual int
	perMinute int
	// afterRead, set by tests, runs between a manual retry's read and its statement.
	afterRead func()
}

// NewService returns a Service. maxManual caps a tenant's manual retries of one delivery;
// resendPerMinute limits manual resends per subscription.
func NewService(pool *pgxpool.Pool, policy RetryPolicy, now func() time.Time, maxManual, resendPerMinute int) *Service {
	return &Service{pool: pool, q: db.New(pool), policy: policy, now: now, maxManual: maxManual,
		perMinute: resendPerMinute}
}

// ParseStates turns the API's comma list (with "dead" and "retrying") into states and a retrying flag.
func ParseStates(list string) (states []string, retrying *bool, err error) {
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			states = append(states, s)
		}
	}
	onlyRetrying := false
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
		case s == "dead":
			add(string(Failed))
			add(string(Expired))
		case s == "retrying":
			onlyRetrying = true
		case State(s).Valid():
			add(s)
		default:
			return nil, nil, fault.Invalid("state %q is not one of pending, retrying, in_flight, delivered, failed, expired, dead", s)
		}
	}
	if onlyRetrying {
		if len(states) == 0 {
			t := true
			return []string{string(Pending)}, &t, nil
		}
		add(string(Pending)) // retrying among other states: all pending ones are a superset
	}
	return states, nil, nil
}

func joinStates(states []string) string { return strings.Join(states, ",") }

// A cursor names the last item of a page by its keyset: (created_at, id), or (started_at, id) for replays.
type cursor struct {
	CreatedAt time.Time `json:"t"`
	ID        uuid.UUID `json:"i"`
}

func encodeCursor(t time.Time, id uuid.UUID) string {
	b, _ := json.Marshal(cursor{t, id})
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseCursor reads a cursor this API returned: nil for none (the first page).
func parseCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == uuid.Nil {
		return nil, fault.Invalid("cursor is not one this API returned")
	}
	return &c, nil
}

// keyset is the cursor as a keyset query's "after" parameters: both nil for the first page.
func (c *cursor) keyset() (*time.Time, *uuid.UUID) {
	if c == nil {
		return nil, nil
	}
	return &c.CreatedAt, &c.ID
}

// pageLimit checks a list's page size: 0 means the default of 50, more than MaxPageSize is refused.
func pageLimit(n int) (int, error) {
	if n <= 0 {
		return 50, nil
	}
	if n > MaxPageSize {
		return 0, fault.Invalid("limit must be between 1 and %d", MaxPageSize)
	}
	return n, nil
}

// keysetPage turns the up to limit+1 rows a keyset query returned into at most limit items and, when there
// was one more row, the cursor of the last item kept. key gives an item's keyset.
func keysetPage[R, T any](rows []R, limit int, conv func(R) T, key func(T) (time.Time, uuid.UUID)) ([]T, string) {
	items := make([]T, 0, min(len(rows), limit))
	for _, r := range rows[:min(len(rows), limit)] {
		items = append(items, conv(r))
	}
	if len(rows) <= limit || len(items) == 0 {
		return items, ""
	}
	return items, encodeCursor(key(items[len(items)-1]))
}

func deliveryKey(d Delivery) (time.Time, uuid.UUID) { return d.CreatedAt, d.ID }

// MaxPageSize is the largest page a list returns.
const MaxPageSize = 100

// List returns a tenant's deliveries newest first.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID, f Filter) (Page, error) {
	states, retrying, err := ParseStates(joinStates(f.States))
	if err != nil {
		return Page{}, err
	}
	if f.Limit, err = pageLimit(f.Limit); err != nil {
		return Page{}, err
	}
	statusMin, statusMax, err := ParseStatus(f.Status)
	if err != nil {
		return Page{}, err
	}
	p := db.ListDeliveriesParams{
		TenantID: tenantID, SubscriptionID: f.SubscriptionID, States: states, Retrying: retrying, EventID: f.EventID,
		EventType: optional(f.EventType), EventTypePrefix: optional(f.EventTypePrefix), StatusMin: statusMin, StatusMax: statusMax,
		Since: f.Since, Until: f.Until, MaxRows: int32(f.Limit + 1),
	}
	if states == nil {
		p.States = []string{}
	}
	after, err := parseCursor(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	p.AfterCreatedAt, p.AfterID = after.keyset()
	rows, err := s.q.ListDeliveries(ctx, p)
	if err != nil {
		return Page{}, fmt.Errorf("list deliveries: %w", err)
	}
	var page Page
	page.Items, page.NextCursor = keysetPage(rows, f.Limit, fromRow, deliveryKey)
	if f.WithTotal {
		n, atLeast, err := s.Count(ctx, tenantID, f, f.CountUpTo)
		if err != nil {
			return Page{}, err
		}
		page.Total, page.TotalAtLeast = &n, atLeast
	}
	return page, nil
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
	d := Detail{Delivery: fromRow(r.WebhookDelivery)}
	rows, err := s.q.ListAttempts(ctx, db.ListAttemptsParams{DeliveryID: id, TenantID: tenantID})
	if err != nil {
		return Detail{}, fmt.Errorf("list attempts: %w", err)
	}
	d.Attempts = make([]Attempt, 0, len(rows))
	for _, a := range rows {
		at := Attempt{Attempt: int(a.Attempt), StartedAt: a.StartedAt, DurationMs: int(a.DurationMs),
			ResponseSnippet: a.ResponseSnippet, Error: a.Error, Outcome: Outcome(a.Outcome), RequestURL: a.RequestURL}
		if a.Status != nil {
			st := int(*a.Status)
			at.Status = &st
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
			"content-type": "application/json", "user-agent": UserAgent, "webhook-id": r.WebhookDelivery.EventID.String(),
		}
	}
	return d, nil
}

// Actor says who asks for a manual action: admins are not capped.
type Actor struct {
	Admin bool
}

// Retry puts a delivered, failed or expired delivery back in the queue with a fresh schedule and deadline.
// Of several concurrent calls on one delivery (an admin's too) exactly one succeeds; the rest get
// INVALID_STATE.
func (s *Service) Retry(ctx context.Context, tenantID, id uuid.UUID, actor Actor) (Delivery, error) {
	return s.manualRetry(ctx, tenantID, id, actor, "retry delivery", s.retryAllowed,
		func(q *db.Queries, seen db.WebhookDelivery, now time.Time, maxManual int32) (db.WebhookDelivery, error) {
			return q.RetryDelivery(ctx, db.RetryDeliveryParams{
				ID: id, TenantID: tenantID, CountManual: !actor.Admin, Now: now, GiveUpAt: s.policy.GiveUpAt(now), MaxManual: maxManual,
				SeenTotalAttempts: seen.TotalAttempts, SeenUpdatedAt: seen.UpdatedAt,
			})
		})
}

// RetryNow moves a retrying delivery's next attempt to now: the customer fixed the endpoint and should not
// wait out the backoff. The same rules and limits as Retry (the manual cap and the subscription's resend
// bucket) apply; anything but a retrying delivery is INVALID_STATE, so the API's retry keeps its meaning.
// While the subscription's circuit is open nothing but its probe is sent, so Retry now is refused
// (INVALID_STATE, saying when the probe is due) before anything is counted or taken from the bucket.
func (s *Service) RetryNow(ctx context.Context, tenantID, id uuid.UUID, actor Actor) (Delivery, error) {
	return s.manualRetry(ctx, tenantID, id, actor, "retry delivery now",
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
				SeenTotalAttempts: seen.TotalAttempts, SeenUpdatedAt: seen.UpdatedAt,
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
func (s *Service) manualRetry(ctx context.Context, tenantID, id uuid.UUID, actor Actor, what string,
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
		return q.NotifyDeliveriesReady(ctx)
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
	_, err := s.q.DiscardDelivery(ctx, db.DiscardDeliveryParams{ID: id, TenantID: tenantID, Now: s.now()})
	if err == nil {
		return nil
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

// DeadLetterQueued dead-letters a deleted subscription's queued deliveries (reason subscription_deleted), in
// the caller's transaction, and says how many. In-flight ones finish their attempt; its outcome decides.
func DeadLetterQueued(ctx context.Context, tx pgx.Tx, tenantID, subscriptionID uuid.UUID, now time.Time) (int64, error) {
	n, err := db.New(tx).DeadLetterQueuedOfSubscription(ctx, db.DeadLetterQueuedOfSubscriptionParams{
		SubscriptionID: subscriptionID, TenantID: tenantID, Now: now,
	})
	if err != nil {
		return 0, fmt.Errorf("dead-letter queued deliveries: %w", err)
	}
	return n, nil
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
