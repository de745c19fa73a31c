// Package replays puts dead deliveries back in the queue in bulk: the dead-letter list across tenants and
// its overview (deadletters.go, deadoverview.go), previews, bulk replays and a tenant's recover of one
// subscription, recorded as an audit log, and the runner that works running replays a paced chunk at a time
// in every process (replayrunner.go).
package replays

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/keyset"
	"github.com/hookline/hookline/internal/tracing"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// ReplayGroup is one tenant's subscription's share of the deliveries a replay matches.
type ReplayGroup struct {
	TenantID        uuid.UUID `json:"tenant_id"`
	TenantName      string    `json:"tenant_name"`
	SubscriptionID  uuid.UUID `json:"subscription_id"`
	SubscriptionURL string    `json:"subscription_url"`
	Deliveries      int64     `json:"deliveries"`
}

// Preview is what a replay would do, before anything changes.
type Preview struct {
	Matched int64 `json:"matched"`
	// Groups is the split by tenant and subscription, largest first (at most MaxPreviewGroups).
	Groups []ReplayGroup `json:"groups"`
	// Sample is the newest few matching deliveries.
	Sample []DeadLetter `json:"sample"`
	// OfDeletedSubscriptions counts the dead deliveries that fit the criteria but are not matched: their
	// subscription was deleted, and nothing is sent to a deleted subscription again.
	OfDeletedSubscriptions int64 `json:"of_deleted_subscriptions"`
}

// Replay kinds and states.
const (
	ReplayBulk    = "bulk"
	ReplayRecover = "recover"

	ReplayRunning  = "running"
	ReplayFinished = "finished"
	ReplayFailed   = "failed"
)

// Replay is one bulk replay or recover, as the audit log keeps it.
type Replay struct {
	ID    uuid.UUID `json:"id"`
	Kind  string    `json:"kind"`
	Actor string    `json:"actor"`
	// ActorName is how a customer's page names who started it: the name a portal link gave, else the
	// email, as the activity log's actor says it ("" when no person started it). Actor is the audit's.
	ActorName      string     `json:"-"`
	Criteria       DeadFilter `json:"criteria"`
	DryRun         bool       `json:"dry_run"`
	State          string     `json:"state"`
	Matched        int64      `json:"matched"`
	Scheduled      int64      `json:"scheduled"`
	Skipped        int64      `json:"skipped"`
	SpreadSeconds  int        `json:"spread_seconds"`
	TenantID       *uuid.UUID `json:"tenant_id"`
	SubscriptionID *uuid.UUID `json:"subscription_id"`
	Error          string     `json:"error,omitempty"`
	StartedAt      time.Time  `json:"started_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	// The outcome of what it scheduled, counted from the deliveries that name it (replay_id): Delivered
	// were sent, Failed are dead again (failed or expired, discarded included), Pending are not final yet
	// (waiting or in flight). A delivery a later replay took over names that replay and counts there only;
	// TakenOver is how many this one scheduled that no longer name it (taken over by a later replay, or
	// deleted by retention). A manual retry or resend does not take a delivery over: it keeps counting
	// here with its newest outcome. Scheduled = Delivered + Failed + Pending + TakenOver.
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
	Pending   int64 `json:"pending"`
	TakenOver int64 `json:"taken_over"`
	// Sample holds a few matching delivery ids; only a dry run's answer has it.
	Sample []uuid.UUID `json:"sample,omitempty"`
}

// Progress is the share of matched deliveries scheduled so far, from 0 to 1.
func (r Replay) Progress() float64 {
	if r.State != ReplayRunning {
		return 1
	}
	if r.Matched == 0 {
		return 0
	}
	return math.Min(float64(r.Scheduled)/float64(r.Matched), 1)
}

// Settled reports whether nothing about the replay will change by itself any more: it is not running
// and none of the deliveries it scheduled is pending. Pages follow a replay until it is settled.
func (r Replay) Settled() bool { return r.State != ReplayRunning && r.Pending == 0 }

// withOutcome adds the outcome counts of GetReplay and ListReplays, read in the replay row's snapshot.
func withOutcome(r db.Replay, delivered, dead, pending, counted int64) Replay {
	out := replayFromRow(r)
	out.Delivered, out.Failed, out.Pending = delivered, dead, pending
	out.TakenOver = max(out.Scheduled-counted, 0)
	return out
}

func replayFromRow(r db.Replay) Replay {
	out := Replay{
		ID: r.ID, Kind: r.Kind, Actor: r.Actor, ActorName: r.ActorName, DryRun: r.DryRun, State: r.State, Matched: int64(r.Matched),
		Scheduled: int64(r.Scheduled), Skipped: int64(r.Skipped), SpreadSeconds: int(r.SpreadSeconds),
		TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, Error: r.Error, StartedAt: r.StartedAt,
		UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt,
	}
	_ = json.Unmarshal(r.Criteria, &out.Criteria)
	return out
}

// ReplayPage is one page of the audit log.
type ReplayPage struct {
	Items      []Replay `json:"items"`
	NextCursor string   `json:"next_cursor"`
}

// Limits of replays and recovers.
const (
	// DefaultSpread is how long a bulk replay spreads its deliveries over by default.
	DefaultSpread = 5 * time.Minute
	// MaxSpread caps a replay's spread.
	MaxSpread = 24 * time.Hour
	// ReplayChunk is how many deliveries one replay statement moves.
	ReplayChunkSize = 1000
	// MaxPreviewGroups and PreviewSampleSize bound a preview.
	MaxPreviewGroups  = 50
	PreviewSampleSize = 20
	// RecoverMaxAge is how far back a customer's recover may reach.
	RecoverMaxAge = 14 * 24 * time.Hour
	// RecoverMaxDeliveries is the most deliveries one recover replays.
	RecoverMaxDeliveries = 10000
	// RecoverMaxSpread is the longest a recover spreads its deliveries; it sends about 20 a second below that.
	RecoverMaxSpread = 5 * time.Minute
	recoverRate      = 20
)

// Replays runs bulk replays and recovers and reads dead letters across tenants. Starting a replay records
// it and returns at once; ReplayRunner works through it in the background.
type Replays struct {
	pool   *pgxpool.Pool
	q      *db.Queries
	policy delivery.RetryPolicy
	now    func() time.Time
	// previews limits recover dry runs per subscription.
	previews previewLimiter
	// Started, when set, is told that a replay was created so a runner can start on it now.
	Started func()
	// Tracer, when set, makes a span of each replay's start and of each of its chunks; the chunks and the
	// attempts of what they move join the trace of the request that started it. nil is tracing off.
	Tracer trace.Tracer
}

// NewReplays returns the replay service.
func NewReplays(pool *pgxpool.Pool, policy delivery.RetryPolicy, now func() time.Time) *Replays {
	return &Replays{pool: pool, q: db.New(pool), policy: policy, now: now}
}

// ValidateReplay checks a replay's criteria: the filter's values, and both ends of the time range.
func ValidateReplay(f DeadFilter) error {
	if f.CreatedFrom == nil || f.CreatedTo == nil {
		return fault.Invalid("created_from and created_to are required: a replay covers a time range")
	}
	return f.Validate()
}

// Preview says how many dead deliveries a replay with these criteria would schedule now, how they split by
// tenant and subscription, and shows a sample. It changes nothing.
func (s *Replays) Preview(ctx context.Context, f DeadFilter) (Preview, error) {
	if err := ValidateReplay(f); err != nil {
		return Preview{}, err
	}
	now := s.now()
	var p Preview
	var err error
	if p.Matched, err = s.count(ctx, f, &now, math.MaxInt32); err != nil {
		return Preview{}, err
	}
	if p.Sample, err = s.list(ctx, f, &now, PreviewSampleSize, nil); err != nil {
		return Preview{}, err
	}
	// What the replay skips is said, so that a preview matching fewer than the dead-letter list shows (or
	// none) is not a puzzle: the count without skipping deleted subscriptions, less the matches.
	withDeleted := f.params(&now)
	withDeleted.Replayable = false
	all, err := s.countParams(ctx, withDeleted, math.MaxInt32)
	if err != nil {
		return Preview{}, err
	}
	p.OfDeletedSubscriptions = max(all-p.Matched, 0)
	dp := f.params(&now)
	groups, err := s.q.DeadLetterBreakdown(ctx, db.DeadLetterBreakdownParams{
		TenantID: dp.TenantID, SubscriptionID: dp.SubscriptionID, EventType: dp.EventType, States: dp.States,
		DeadReason: dp.DeadReason, CreatedFrom: dp.CreatedFrom, CreatedTo: dp.CreatedTo, DeadBefore: dp.DeadBefore,
		Replayable: dp.Replayable, MaxRows: MaxPreviewGroups,
	})
	if err != nil {
		return Preview{}, fmt.Errorf("dead letter breakdown: %w", err)
	}
	p.Groups = make([]ReplayGroup, 0, len(groups))
	for _, g := range groups {
		p.Groups = append(p.Groups, ReplayGroup{TenantID: g.TenantID, TenantName: g.TenantName,
			SubscriptionID: g.SubscriptionID, SubscriptionURL: g.SubscriptionURL, Deliveries: g.Deliveries})
	}
	return p, nil
}

// ReplayRequest asks for a bulk replay.
type ReplayRequest struct {
	Filter DeadFilter
	// Spread is how long the replayed deliveries' first attempts are spread over (0: DefaultSpread).
	Spread time.Duration
	DryRun bool
	// Actor says who asked, for the audit log.
	Actor string
}

// Start records a bulk replay and returns at once: it matches the dead deliveries that fit the criteria
// now, and a runner schedules them in chunks in the background. A dry run is recorded as such, changes
// nothing and returns a sample of the matching ids.
func (s *Replays) Start(ctx context.Context, req ReplayRequest) (Replay, error) {
	if err := ValidateReplay(req.Filter); err != nil {
		return Replay{}, err
	}
	if req.Spread == 0 {
		req.Spread = DefaultSpread
	}
	if req.Spread < 0 || req.Spread > MaxSpread {
		return Replay{}, fault.Invalid("spread_seconds must be between 0 and %d", int(MaxSpread.Seconds()))
	}
	return s.create(ctx, ReplayBulk, req)
}

// Recover replays one subscription's dead deliveries created since a time (at most RecoverMaxAge back and
// RecoverMaxDeliveries of them), spread so that they do not flood the customer's own endpoint. At most one
// recover per subscription runs at a time. The caller has checked that the subscription is the tenant's.
func (s *Replays) Recover(ctx context.Context, tenantID, subscriptionID uuid.UUID, since time.Time, dryRun bool, actor string) (Replay, error) {
	now := s.now()
	if since.Before(now.Add(-RecoverMaxAge)) {
		return Replay{}, fault.Invalid("since may be at most %d days ago", int(RecoverMaxAge.Hours()/24))
	}
	if !since.Before(now) {
		return Replay{}, fault.Invalid("since must be in the past")
	}
	if dryRun {
		if wait := s.previews.take(subscriptionID, now); wait > 0 {
			return Replay{}, fault.Limited(wait, "too many recover previews of this subscription: at most %d a minute; try again in %d s",
				int(time.Minute/RecoverPreviewEvery), int(math.Ceil(wait.Seconds())))
		}
	}
	until := now.Add(time.Second) // everything created up to now, whatever the clock's resolution
	f := DeadFilter{TenantID: &tenantID, SubscriptionID: &subscriptionID, CreatedFrom: &since, CreatedTo: &until}
	n, err := s.count(ctx, f, &now, RecoverMaxDeliveries+1)
	if err != nil {
		return Replay{}, err
	}
	if n > RecoverMaxDeliveries {
		return Replay{}, fault.Invalid("more than %d dead deliveries match; a recover replays at most %d: choose a later since",
			RecoverMaxDeliveries, RecoverMaxDeliveries)
	}
	// Rounded up to whole seconds (spread_seconds is stored in seconds): rounded down, fewer than 20 would
	// all be sent at the same moment and up to 39 within one second, against the "about 20 a second,
	// spread out" the recover promises.
	seconds := (n + recoverRate - 1) / recoverRate
	spread := min(time.Duration(seconds)*time.Second, RecoverMaxSpread)
	return s.create(ctx, ReplayRecover, ReplayRequest{Filter: f, Spread: spread, DryRun: dryRun, Actor: actor})
}

// actorName is how pages name the person ctx's request is from, as the activity log does ("" outside a
// request).
func actorName(ctx context.Context) string {
	if a, ok := activity.ActorOf(ctx); ok {
		return a.Label()
	}
	return ""
}

func (s *Replays) create(ctx context.Context, kind string, req ReplayRequest) (out Replay, err error) {
	if s.Tracer != nil {
		var span trace.Span
		ctx, span = s.Tracer.Start(ctx, spanReplayStart, trace.WithAttributes(attrReplayKind.String(kind),
			attribute.Bool("hookline.replay.dry_run", req.DryRun)))
		defer func() {
			if err != nil {
				delivery.SpanFailed(span, err)
			} else {
				span.SetAttributes(attrReplayID.String(out.ID.String()), attribute.Int64("hookline.replay.matched", out.Matched))
			}
			span.End()
		}()
	}
	now := s.now()
	matched, err := s.count(ctx, req.Filter, &now, math.MaxInt32)
	if err != nil {
		return Replay{}, err
	}
	criteria, err := json.Marshal(req.Filter)
	if err != nil {
		return Replay{}, err
	}
	state, finished := ReplayRunning, (*time.Time)(nil)
	if req.DryRun || matched == 0 {
		state, finished = ReplayFinished, &now
	}
	arg := db.CreateReplayParams{
		Kind: kind, Actor: req.Actor, ActorName: actorName(ctx), Criteria: criteria, DryRun: req.DryRun, Matched: int32(matched), State: state,
		SpreadSeconds: int32(req.Spread / time.Second), Now: now, FinishedAt: finished, Traceparent: tracing.Traceparent(ctx),
	}
	if kind == ReplayRecover {
		arg.TenantID, arg.SubscriptionID = req.Filter.TenantID, req.Filter.SubscriptionID
	}
	var row db.Replay
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		if row, err = q.CreateReplay(ctx, arg); err != nil {
			return err
		}
		// A recover is the tenant's own change; a dry run changes nothing, and bulk replays are the
		// operator's, across tenants (their own log is the replays list).
		if kind != ReplayRecover || req.DryRun {
			return nil
		}
		return activity.Record(ctx, tx, *req.Filter.TenantID, now, activity.RecoverStarted,
			activity.Object{Type: "recover", ID: row.ID.String()},
			map[string]any{"subscription_id": req.Filter.SubscriptionID.String(), "matched": matched})
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.ConstraintName == "replays_one_recover_idx" {
		return Replay{}, fault.New(fault.InvalidState, "a recover of this subscription is running already; wait for it to finish")
	}
	if err != nil {
		return Replay{}, fmt.Errorf("create replay: %w", err)
	}
	out = replayFromRow(row)
	if req.DryRun {
		sample, err := s.list(ctx, req.Filter, &now, PreviewSampleSize, nil)
		if err != nil {
			return Replay{}, err
		}
		out.Sample = make([]uuid.UUID, 0, len(sample))
		for _, d := range sample {
			out.Sample = append(out.Sample, d.ID)
		}
	}
	if out.State == ReplayRunning && s.Started != nil {
		s.Started()
	}
	return out, nil
}

// Get returns one replay. tenantID, when set, limits it to that tenant's recovers (anything else is
// NOT_FOUND).
func (s *Replays) Get(ctx context.Context, id uuid.UUID, tenantID *uuid.UUID) (Replay, error) {
	row, err := s.q.GetReplay(ctx, db.GetReplayParams{ID: id, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Replay{}, fault.Missing("replay")
	}
	if err != nil {
		return Replay{}, fmt.Errorf("get replay: %w", err)
	}
	return withOutcome(row.Replay, row.Delivered, row.Dead, row.Pending, row.Counted), nil
}

// ReplayListFilter selects replays for the audit log.
type ReplayListFilter struct {
	TenantID       *uuid.UUID
	SubscriptionID *uuid.UUID
	// DryRun, when set, keeps only dry runs (true) or only real replays (false).
	DryRun *bool
	Limit  int
	Cursor string
}

// List returns the audit log, newest first.
func (s *Replays) List(ctx context.Context, f ReplayListFilter) (ReplayPage, error) {
	var err error
	if f.Limit, err = keyset.Limit(f.Limit); err != nil {
		return ReplayPage{}, err
	}
	arg := db.ListReplaysParams{TenantID: f.TenantID, SubscriptionID: f.SubscriptionID, DryRun: f.DryRun, MaxRows: int32(f.Limit + 1)}
	after, err := keyset.Parse(f.Cursor)
	if err != nil {
		return ReplayPage{}, err
	}
	arg.AfterStartedAt, arg.AfterID = after.After()
	rows, err := s.q.ListReplays(ctx, arg)
	if err != nil {
		return ReplayPage{}, fmt.Errorf("list replays: %w", err)
	}
	var page ReplayPage
	page.Items, page.NextCursor = keyset.Page(rows, f.Limit,
		func(r db.ListReplaysRow) Replay {
			return withOutcome(r.Replay, r.Delivered, r.Dead, r.Pending, r.Counted)
		},
		func(r Replay) (time.Time, uuid.UUID) { return r.StartedAt, r.ID })
	return page, nil
}

// Deliveries lists the deliveries a replay scheduled (those whose latest replay it is), newest first.
func (s *Replays) Deliveries(ctx context.Context, replayID uuid.UUID, limit int, cursorText string) (deliveries.Page, error) {
	if limit <= 0 || limit > deliveries.MaxPageSize {
		limit = 50
	}
	arg := db.ListReplayDeliveriesParams{ReplayID: &replayID, MaxRows: int32(limit + 1)}
	after, err := keyset.Parse(cursorText)
	if err != nil {
		return deliveries.Page{}, err
	}
	arg.AfterCreatedAt, arg.AfterID = after.After()
	rows, err := s.q.ListReplayDeliveries(ctx, arg)
	if err != nil {
		return deliveries.Page{}, fmt.Errorf("list replay deliveries: %w", err)
	}
	var page deliveries.Page
	page.Items, page.NextCursor = keyset.Page(rows, limit, deliveries.FromRow, deliveries.PageKey)
	return page, nil
}

// Step works one chunk of a running replay in one transaction: it moves up to ReplayChunkSize rows and
// advances the replay's cursor and count together, so a crash between chunks loses nothing and double-counts
// nothing. It returns done = true when the replay has no rows left (and is then finished), and
// taken = false when the replay is not running or another runner holds it.
func (s *Replays) Step(ctx context.Context, id uuid.UUID) (taken, done bool, err error) {
	now := s.now()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		row, err := q.LockRunningReplay(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock replay: %w", err)
		}
		taken = true
		var span trace.Span
		if s.Tracer != nil {
			// The chunk continues the trace of the request that started the replay, whichever process runs it.
			cctx := ctx
			if row.Traceparent != nil {
				cctx = tracing.ContinueFrom(ctx, *row.Traceparent)
			}
			_, span = s.Tracer.Start(cctx, spanReplayChunk, trace.WithAttributes(attrReplayID.String(id.String()),
				attrReplayKind.String(row.Kind)))
			defer span.End()
		}
		r := replayFromRow(row)
		f := r.Criteria
		if f.CreatedFrom == nil || f.CreatedTo == nil {
			return fmt.Errorf("replay %s has no time range in its criteria", id)
		}
		dp := f.params(nil)
		arg := db.ReplayChunkParams{
			TenantID: dp.TenantID, SubscriptionID: dp.SubscriptionID, EventType: dp.EventType, States: dp.States,
			DeadReason: dp.DeadReason, CreatedFrom: *f.CreatedFrom, CreatedTo: *f.CreatedTo, DeadBefore: r.StartedAt,
			AfterCreatedAt: row.CursorCreatedAt, AfterID: row.CursorID, Chunk: ReplayChunkSize,
			Now: now, SpreadSeconds: row.SpreadSeconds, GiveUpAt: s.policy.GiveUpAt(now), ReplayID: id,
		}
		if span != nil {
			// What this chunk moves is next attempted under it.
			arg.Traceparent = delivery.TraceparentOf(span)
		}
		res, err := q.ReplayChunk(ctx, arg)
		if err != nil {
			if span != nil {
				delivery.SpanFailed(span, err)
			}
			return fmt.Errorf("replay chunk: %w", err)
		}
		if span != nil {
			span.SetAttributes(attribute.Int("hookline.replay.looked_at", int(res.LookedAt)), attribute.Int("hookline.replay.moved", int(res.Moved)))
		}
		if res.LookedAt == 0 {
			done = true
			_, err := q.FinishReplay(ctx, db.FinishReplayParams{ID: id, State: ReplayFinished, Now: now})
			return err
		}
		if err := q.AdvanceReplay(ctx, db.AdvanceReplayParams{ID: id, Moved: res.Moved, CursorCreatedAt: &res.LastCreatedAt,
			CursorID: &res.LastID, Now: now}); err != nil {
			return fmt.Errorf("advance replay: %w", err)
		}
		if res.Moved > 0 {
			return q.NotifyDeliveriesReady(ctx, "")
		}
		return nil
	})
	return taken, done, err
}

// Fail ends a running replay as failed with its true counts (what was scheduled stays scheduled).
func (s *Replays) Fail(ctx context.Context, id uuid.UUID, reason string) error {
	_, err := s.q.FinishReplay(ctx, db.FinishReplayParams{ID: id, State: ReplayFailed, Error: reason, Now: s.now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// Running lists the ids of unfinished replays, oldest first.
func (s *Replays) Running(ctx context.Context) ([]uuid.UUID, error) {
	return s.q.RunningReplays(ctx)
}
