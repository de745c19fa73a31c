// Package polling serves polling subscriptions' consumers: a poll answers a consumer the deliveries after
// its committed cursor, and a commit makes every pending delivery up to a cursor delivered and moves the
// consumer's cursor there. Deliveries pulled but not committed are pulled again (at least once).
//
// A cursor is a position (poll_xid, id) in the subscription's deliveries, poll_xid being the id of the
// transaction that made the delivery pending. A poll answers only rows whose transaction id is below its
// snapshot's xmin: every such transaction has ended, and every transaction still running or yet to start
// has an id at or above it, so no delivery can later appear at a position before a cursor a poll gave out
// (db/schema/00031_polling_subscriptions.sql says more). A resend, a replay or a recover of a polling
// delivery gives it a new position, after every cursor, so consumers get it again.
package polling

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Limits of a poll.
const (
	DefaultLimit = 100
	MaxLimit     = 500
	// MaxPageBytes bounds the payloads of one poll's answer (its first delivery is always in it, up to the
	// API's 256 KiB): a page of the most deliveries at the most size would be 128 MiB.
	MaxPageBytes = 4 << 20
	// LagUpTo is where a consumer's lag stops counting.
	LagUpTo = 10000
)

// Service polls and commits. now is the clock of commits and polls (injected in tests).
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	now  func() time.Time
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool, now func() time.Time) *Service {
	return &Service{pool: pool, q: db.New(pool), now: now}
}

// Position is a place in a subscription's deliveries: after every delivery whose (poll_xid, id) is at
// or before it.
type Position struct {
	Xid int64
	ID  uuid.UUID
}

// Less orders positions.
func (p Position) Less(o Position) bool {
	if p.Xid != o.Xid {
		return p.Xid < o.Xid
	}
	return bytesLess(p.ID[:], o.ID[:])
}

func bytesLess(a, b []byte) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// justBefore is the position right before the delivery at p: every delivery with a smaller position is
// at or before it, the one at p is after it.
func justBefore(p Position) Position {
	id := p.ID
	for i := len(id) - 1; i >= 0; i-- {
		id[i]--
		if id[i] != 0xff {
			return Position{Xid: p.Xid, ID: id}
		}
	}
	// p's id was all zeros (never a delivery's): the end of the previous transaction's rows
	return Position{Xid: p.Xid - 1, ID: maxID}
}

var maxID = uuid.UUID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// A cursor is base64url of: version (1 byte), the subscription's id (16), the position's xid (8, big
// endian) and id (16). It names its subscription so that a cursor of another one is refused.
const cursorVersion = 1

// EncodeCursor is the opaque form of a subscription's position.
func EncodeCursor(subscriptionID uuid.UUID, p Position) string {
	b := make([]byte, 0, 41)
	b = append(b, cursorVersion)
	b = append(b, subscriptionID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Xid))
	b = append(b, p.ID[:]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor of the subscription's; anything else is 400.
func DecodeCursor(subscriptionID uuid.UUID, s string) (Position, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 41 || b[0] != cursorVersion || int64(binary.BigEndian.Uint64(b[17:25])) < 0 {
		return Position{}, fault.Invalid("cursor is not a cursor this server gave out")
	}
	if uuid.UUID(b[1:17]) != subscriptionID {
		return Position{}, fault.Invalid("cursor belongs to another subscription")
	}
	return Position{Xid: int64(binary.BigEndian.Uint64(b[17:25])), ID: uuid.UUID(b[25:41])}, nil
}

var consumerName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidName checks a consumer's name: 1 to 64 letters, digits, '.', '_' or '-'.
func ValidName(name string) error {
	if !consumerName.MatchString(name) {
		return fault.Invalid("consumer must be 1 to 64 letters, digits, '.', '_' or '-'")
	}
	return nil
}

// Item is one pulled delivery.
type Item struct {
	DeliveryID uuid.UUID       `json:"delivery_id"`
	EventID    uuid.UUID       `json:"event_id"`
	EventType  string          `json:"event_type"`
	Timestamp  time.Time       `json:"timestamp"`
	Payload    json.RawMessage `json:"payload"`
}

// Page is a poll's answer: Cursor is the position after its last item (the consumer's committed cursor
// when it has none); Done says fewer than the limit were ready.
type Page struct {
	Data   []Item `json:"data"`
	Cursor string `json:"cursor"`
	Done   bool   `json:"done"`
}

// pollingSubscription reads a live subscription of the tenant's and checks it is a polling one.
func pollingSubscription(ctx context.Context, q *db.Queries, tenantID, id uuid.UUID) (db.Subscription, error) {
	sub, err := q.GetSubscription(ctx, db.GetSubscriptionParams{ID: id, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return sub, fault.Missing("subscription")
	}
	if err != nil {
		return sub, fmt.Errorf("get subscription: %w", err)
	}
	if sub.Type != "polling" {
		return sub, fault.Invalid("this is a webhook subscription: Hookline sends its deliveries to its URL; only a polling subscription can be polled")
	}
	return sub, nil
}

// Poll answers up to limit of the subscription's deliveries after the consumer's committed cursor. A new
// consumer starts just before the subscription's oldest delivery not yet delivered (or after every
// delivery when none waits). A paused or disabled subscription is 409: its deliveries wait until it is
// resumed, as a paused endpoint's do.
// The subscription is checked before the arguments: another tenant's id is 404 whatever else is wrong.
func (s *Service) Poll(ctx context.Context, tenantID, subscriptionID uuid.UUID, consumer string, limit int) (Page, error) {
	sub, err := pollingSubscription(ctx, s.q, tenantID, subscriptionID)
	if err != nil {
		return Page{}, err
	}
	if err := ValidName(consumer); err != nil {
		return Page{}, err
	}
	if limit < 1 || limit > MaxLimit {
		return Page{}, fault.Invalid("limit must be a whole number from 1 to %d", MaxLimit)
	}
	if sub.State != "active" {
		return Page{}, fault.New(fault.InvalidState, "the subscription is %s: its deliveries wait until it is resumed (POST .../resume)", sub.State)
	}
	now := s.now()
	c, err := s.q.GetConsumer(ctx, db.GetConsumerParams{TenantID: tenantID, SubscriptionID: subscriptionID, Name: consumer})
	if errors.Is(err, pgx.ErrNoRows) {
		start, err := s.start(ctx, tenantID, subscriptionID)
		if err != nil {
			return Page{}, err
		}
		c, err = s.q.CreateConsumer(ctx, db.CreateConsumerParams{SubscriptionID: subscriptionID, TenantID: tenantID,
			Name: consumer, PositionXid: start.Xid, PositionID: start.ID, Now: now})
		if err != nil {
			return Page{}, fmt.Errorf("create consumer: %w", err)
		}
	} else if err != nil {
		return Page{}, fmt.Errorf("get consumer: %w", err)
	}
	rows, err := s.q.PollDeliveries(ctx, db.PollDeliveriesParams{TenantID: tenantID, SubscriptionID: subscriptionID,
		AfterXid: c.PositionXid, AfterID: c.PositionID, MaxRows: int32(limit), MaxBytes: MaxPageBytes})
	if err != nil {
		return Page{}, fmt.Errorf("poll: %w", err)
	}
	last := Position{Xid: c.PositionXid, ID: c.PositionID}
	// Done: fewer than limit were ready, and none was left out for the page's size.
	page := Page{Data: make([]Item, 0, len(rows)), Done: len(rows) < limit}
	if len(rows) > 0 && int(rows[0].InPage) > len(rows) {
		page.Done = false
	}
	for _, r := range rows {
		payload, err := eventData(r.Body)
		if err != nil {
			return Page{}, err
		}
		page.Data = append(page.Data, Item{DeliveryID: r.ID, EventID: r.EventID, EventType: r.EventType,
			Timestamp: r.EventCreatedAt.UTC(), Payload: payload})
		last = Position{Xid: r.PollXid, ID: r.ID}
	}
	page.Cursor = EncodeCursor(subscriptionID, last)
	if err := s.q.MarkConsumerPolled(ctx, db.MarkConsumerPolledParams{TenantID: tenantID, SubscriptionID: subscriptionID,
		Name: consumer, Now: now, GivenXid: last.Xid, GivenID: last.ID}); err != nil {
		return Page{}, fmt.Errorf("mark consumer polled: %w", err)
	}
	return page, nil
}

// start is where a new consumer begins: just before the oldest pending delivery, and never after the
// poll horizon's (every delivery of a transaction still running will come after it).
func (s *Service) start(ctx context.Context, tenantID, subscriptionID uuid.UUID) (Position, error) {
	h, err := s.q.PollHorizon(ctx, db.PollHorizonParams{TenantID: tenantID, SubscriptionID: subscriptionID})
	if err != nil {
		return Position{}, fmt.Errorf("poll horizon: %w", err)
	}
	start := Position{Xid: h.Xmin - 1, ID: maxID}
	if h.OldestPendingID != uuid.Nil {
		if p := justBefore(Position{Xid: h.OldestPendingXid, ID: h.OldestPendingID}); p.Less(start) {
			start = p
		}
	}
	return start, nil
}

// eventData is the payload of a stored event body, {"type", "timestamp", "data"}: data's bytes as they
// are stored (as published, compacted).
func eventData(body []byte) (json.RawMessage, error) {
	var e struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("stored event body: %w", err)
	}
	return e.Data, nil
}

// Commit makes every pending delivery of the subscription up to the cursor delivered, each with an
// attempt naming the consumer, and moves the consumer's committed cursor there (forward only). A cursor
// that does not decode, belongs to another subscription, or is beyond what polls could have given (this
// consumer's furthest, or any poll's for a consumer that never polled) is 400.
func (s *Service) Commit(ctx context.Context, tenantID, subscriptionID uuid.UUID, consumer, cursor string) error {
	var err error
	// Commits of one subscription are made one at a time (its row is locked first), but a delivery can
	// still move between the queue and the history under one (an expiry, a resend): the commit is then
	// made again, as other statements that meet a moved row are (pgfail.Moved).
	for try := 1; ; try++ {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			return s.commit(ctx, s.q.WithTx(tx), tenantID, subscriptionID, consumer, cursor)
		})
		if !pgfail.Moved(err) || try == pgfail.MovedTries {
			break
		}
	}
	if err != nil && fault.As(err) == nil {
		return fmt.Errorf("commit: %w", err)
	}
	return err
}

func (s *Service) commit(ctx context.Context, q *db.Queries, tenantID, subscriptionID uuid.UUID, consumer, cursor string) error {
	sub, err := q.LockPollingSubscription(ctx, db.LockPollingSubscriptionParams{ID: subscriptionID, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Missing("subscription")
	}
	if err != nil {
		return err
	}
	if sub.Type != "polling" {
		return fault.Invalid("this is a webhook subscription: Hookline sends its deliveries to its URL; only a polling subscription's consumers commit")
	}
	// The arguments after the subscription: another tenant's id is 404 whatever else is wrong.
	if err := ValidName(consumer); err != nil {
		return err
	}
	pos, err := DecodeCursor(subscriptionID, cursor)
	if err != nil {
		return err
	}
	h, err := q.PollHorizon(ctx, db.PollHorizonParams{TenantID: tenantID, SubscriptionID: subscriptionID})
	if err != nil {
		return err
	}
	// A position at or past the horizon was never given by a poll (polls answer only below it), and
	// committing it could pass deliveries of transactions still running.
	if pos.Xid >= h.Xmin {
		return fault.Invalid("cursor is beyond anything a poll has given out")
	}
	now := s.now()
	c, err := q.GetConsumerForUpdate(ctx, db.GetConsumerForUpdateParams{TenantID: tenantID, SubscriptionID: subscriptionID, Name: consumer})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// A consumer that never polled may commit a valid cursor (another consumer's, or one kept from
		// before): it starts there.
		if _, err := q.CreateConsumer(ctx, db.CreateConsumerParams{SubscriptionID: subscriptionID, TenantID: tenantID,
			Name: consumer, PositionXid: pos.Xid, PositionID: pos.ID, Now: now}); err != nil {
			return err
		}
	case err != nil:
		return err
	case (Position{Xid: c.GivenXid, ID: c.GivenID}).Less(pos):
		return fault.Invalid("cursor is beyond anything polled by consumer %s", consumer)
	}
	delivered, err := q.CommitDeliveries(ctx, db.CommitDeliveriesParams{TenantID: tenantID, SubscriptionID: subscriptionID,
		CursorXid: pos.Xid, CursorID: pos.ID, Now: now, Consumer: consumer})
	if err != nil {
		return err
	}
	if len(delivered) > 0 {
		if err := q.MarkPolledSubscriptionHealthy(ctx, db.MarkPolledSubscriptionHealthyParams{ID: subscriptionID, TenantID: tenantID, Now: now}); err != nil {
			return err
		}
	}
	return q.AdvanceConsumer(ctx, db.AdvanceConsumerParams{TenantID: tenantID, SubscriptionID: subscriptionID, Name: consumer,
		CursorXid: pos.Xid, CursorID: pos.ID, Now: now})
}

// Consumer is one consumer of a polling subscription as the API and the dashboard show it.
type Consumer struct {
	Name         string     `json:"name"`
	Cursor       string     `json:"cursor"`
	CommittedAt  *time.Time `json:"committed_at"`
	LastPolledAt *time.Time `json:"last_polled_at"`
	// Lag counts the deliveries after its cursor (pending or delivered), up to LagUpTo.
	Lag int64 `json:"lag"`
	// AtEventType and AtCreatedAt name the delivery its cursor is right after ("" and nil: before the
	// first, or between deliveries), for pages.
	AtEventType string     `json:"-"`
	AtCreatedAt *time.Time `json:"-"`
	CreatedAt   time.Time  `json:"-"`
}

// Consumers lists a polling subscription's consumers by name.
func (s *Service) Consumers(ctx context.Context, tenantID, subscriptionID uuid.UUID) ([]Consumer, error) {
	if _, err := pollingSubscription(ctx, s.q, tenantID, subscriptionID); err != nil {
		return nil, err
	}
	rows, err := s.q.ListConsumers(ctx, db.ListConsumersParams{TenantID: tenantID, SubscriptionID: subscriptionID, UpTo: LagUpTo})
	if err != nil {
		return nil, fmt.Errorf("list consumers: %w", err)
	}
	out := make([]Consumer, 0, len(rows))
	for _, r := range rows {
		c := Consumer{Name: r.SubscriptionConsumer.Name, CommittedAt: r.SubscriptionConsumer.CommittedAt,
			LastPolledAt: r.SubscriptionConsumer.LastPolledAt, Lag: r.Lag, CreatedAt: r.SubscriptionConsumer.CreatedAt,
			Cursor: EncodeCursor(subscriptionID, Position{Xid: r.SubscriptionConsumer.PositionXid, ID: r.SubscriptionConsumer.PositionID})}
		if r.AtEventType != "" { // a delivery is at the cursor
			at := r.AtCreatedAt
			c.AtEventType, c.AtCreatedAt = r.AtEventType, &at
		}
		out = append(out, c)
	}
	return out, nil
}

// CommittedBy names the consumer whose commit delivered a delivery ("" when none did).
func (s *Service) CommittedBy(ctx context.Context, tenantID, deliveryID uuid.UUID) (string, error) {
	name, err := s.q.CommittedByConsumer(ctx, db.CommittedByConsumerParams{TenantID: tenantID, DeliveryID: deliveryID})
	if err != nil {
		return "", fmt.Errorf("committed by: %w", err)
	}
	return name, nil
}

// UpkeepInterval is how often Upkeep runs on the maintenance leader: as often as the incident checks.
const UpkeepInterval = 5 * time.Second

// expireBatch bounds one statement of Upkeep's expiry.
const expireBatch = 1000

// Upkeep is the maintenance leader's task for polling subscriptions:
//   - pending deliveries not committed by their give_up_at expire (dead_reason deadline), as a webhook
//     endpoint's do when their next attempt would come too late; paused subscriptions' wait;
//   - an active polling subscription with a delivery waiting and no commit since is marked failing
//     (failing_since: since the oldest waiting delivery, or the last commit when later), so that the
//     incident rules and auto-disable treat a subscription nobody pulls as a failing endpoint. A commit
//     that delivers clears it, which ends the incident.
//
// It returns how many deliveries expired.
func (s *Service) Upkeep(ctx context.Context) (int, error) {
	now, expired := s.now(), 0
	for {
		rows, err := s.q.ExpireUnpulledDeliveries(ctx, db.ExpireUnpulledDeliveriesParams{Now: now, MaxRows: expireBatch})
		if err != nil {
			return expired, fmt.Errorf("expire unpulled deliveries: %w", err)
		}
		expired += len(rows)
		if len(rows) < expireBatch {
			break
		}
	}
	if _, err := s.q.MarkUnpulledSubscriptions(ctx); err != nil {
		return expired, fmt.Errorf("mark unpulled subscriptions: %w", err)
	}
	return expired, nil
}
