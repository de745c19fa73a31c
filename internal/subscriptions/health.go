package subscriptions

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// HealthWindow is the span endpoint health covers.
const HealthWindow = 24 * time.Hour

// LatencySample is how many of a window's newest attempts its latency percentiles are taken from: enough
// for a steady p95, and a bound on what one look at a busy endpoint reads.
const LatencySample = 10000

// Health is a subscription's endpoint health over the last HealthWindow.
type Health struct {
	State string `json:"state"`
	// SuccessRate is delivered attempts over all attempts, from 0 to 1; null without attempts.
	SuccessRate *float64 `json:"success_rate"`
	Attempts    int      `json:"attempts"`
	Successes   int      `json:"successes"`
	// The latency percentiles are those of the window's newest LatencySample attempts.
	LatencyMsP50        float64    `json:"latency_ms_p50"`
	LatencyMsP95        float64    `json:"latency_ms_p95"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	// CircuitState is closed, open or half_open; FailingSince starts the current run of only failures
	// (null while healthy).
	CircuitState  string     `json:"circuit_state"`
	CircuitOpened *time.Time `json:"circuit_opened_at"`
	FailingSince  *time.Time `json:"failing_since"`
}

// HourBucket is one hour of the health chart.
type HourBucket struct {
	Hour      time.Time `json:"hour"`
	Successes int       `json:"successes"`
	Failures  int       `json:"failures"`
}

// Health computes a subscription's endpoint health from its attempts of the last 24 hours.
func (s *Service) Health(ctx context.Context, tenantID, id uuid.UUID) (Health, error) {
	sub, err := s.Get(ctx, tenantID, id)
	if err != nil {
		return Health{}, err
	}
	all, err := s.HealthOf(ctx, tenantID, []Subscription{sub})
	if err != nil {
		return Health{}, err
	}
	return all[id], nil
}

// HealthOf computes the health of several of a tenant's subscriptions in one query (the dashboard's home).
func (s *Service) HealthOf(ctx context.Context, tenantID uuid.UUID, subs []Subscription) (map[uuid.UUID]Health, error) {
	return s.HealthSince(ctx, tenantID, subs, s.now().Add(-HealthWindow))
}

// HealthSince is HealthOf over the attempts since a moment (the dashboard's range choice).
func (s *Service) HealthSince(ctx context.Context, tenantID uuid.UUID, subs []Subscription, since time.Time) (map[uuid.UUID]Health, error) {
	ids := make([]uuid.UUID, len(subs))
	out := make(map[uuid.UUID]Health, len(subs))
	for i, sub := range subs {
		ids[i] = sub.ID
		out[sub.ID] = Health{State: sub.State, CircuitState: sub.Circuit.State, CircuitOpened: sub.Circuit.OpenedAt,
			FailingSince: sub.FailingSince}
	}
	rows, err := s.q.AttemptStatsBySubscription(ctx, db.AttemptStatsBySubscriptionParams{
		SubscriptionIds: ids, TenantID: tenantID, Since: since, LatencySample: LatencySample,
	})
	if err != nil {
		return nil, fmt.Errorf("health stats: %w", err)
	}
	for _, st := range rows {
		h := out[st.SubscriptionID]
		h.Attempts, h.Successes = int(st.Attempts), int(st.Successes)
		h.LatencyMsP50, h.LatencyMsP95 = st.LatencyP50, st.LatencyP95
		h.ConsecutiveFailures = int(st.ConsecutiveFailures)
		h.LastSuccessAt, h.LastFailureAt = asTime(st.LastSuccessAt), asTime(st.LastFailureAt)
		if h.Attempts > 0 {
			r := float64(h.Successes) / float64(h.Attempts)
			h.SuccessRate = &r
		}
		out[st.SubscriptionID] = h
	}
	return out, nil
}

// Hourly returns successes and failures per hour over the last 24 hours, one bucket per hour, oldest first,
// empty hours included.
func (s *Service) Hourly(ctx context.Context, tenantID, id uuid.UUID) ([]HourBucket, error) {
	all, err := s.HourlyOf(ctx, tenantID, []uuid.UUID{id})
	if err != nil {
		return nil, err
	}
	return all[id], nil
}

// HourlyOf is Hourly for several of a tenant's subscriptions in one query.
func (s *Service) HourlyOf(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID][]HourBucket, error) {
	return s.SeriesOf(ctx, tenantID, ids, Range24h)
}

// Range is a span of the health charts and the step of their bars.
type Range struct {
	Name  string // 1h, 24h, 7d: the dashboard's ?range=
	Label string // "last hour"
	Span  time.Duration
	Step  time.Duration
}

// The health charts' ranges: an hour in minutes, a day in hours, a week in (UTC) days.
var (
	Range1h  = Range{Name: "1h", Label: "last hour", Span: time.Hour, Step: time.Minute}
	Range24h = Range{Name: "24h", Label: "last 24 hours", Span: 24 * time.Hour, Step: time.Hour}
	Range7d  = Range{Name: "7d", Label: "last 7 days", Span: 7 * 24 * time.Hour, Step: 24 * time.Hour}
	Ranges   = []Range{Range1h, Range24h, Range7d}
)

// RangeNamed is the range of a name; ok is false for an unknown one.
func RangeNamed(name string) (Range, bool) {
	for _, r := range Ranges {
		if r.Name == name {
			return r, true
		}
	}
	return Range{}, false
}

// Start is the first bucket's start: the buckets end with the one holding now.
func (r Range) Start(now time.Time) time.Time {
	n := int(r.Span / r.Step)
	return now.UTC().Truncate(r.Step).Add(-time.Duration(n-1) * r.Step)
}

// SeriesOf returns successful and failed attempts per step of the range, one bucket per step, oldest
// first, empty ones included, for several of a tenant's subscriptions in one query.
func (s *Service) SeriesOf(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, rg Range) (map[uuid.UUID][]HourBucket, error) {
	now := s.now()
	start := rg.Start(now)
	rows, err := s.q.AttemptSeriesBySubscription(ctx, db.AttemptSeriesBySubscriptionParams{
		SubscriptionIds: ids, TenantID: tenantID, Origin: start, StepSeconds: rg.Step.Seconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("attempt series: %w", err)
	}
	type key struct {
		sub    uuid.UUID
		bucket int32
	}
	counts := map[key]db.AttemptSeriesBySubscriptionRow{}
	for _, r := range rows {
		counts[key{r.SubscriptionID, r.Bucket}] = r
	}
	n := int32(rg.Span / rg.Step)
	out := make(map[uuid.UUID][]HourBucket, len(ids))
	for _, id := range ids {
		buckets := make([]HourBucket, 0, n)
		for i := range n {
			r := counts[key{id, i}]
			buckets = append(buckets, HourBucket{Hour: start.Add(time.Duration(i) * rg.Step), Successes: int(r.Successes), Failures: int(r.Failures)})
		}
		out[id] = buckets
	}
	return out, nil
}

// asTime reads an aggregate that is a timestamp or NULL (sqlc types max() FILTER as any).
func asTime(v any) *time.Time {
	if t, ok := v.(time.Time); ok {
		return &t
	}
	return nil
}

// FailingRuns counts, for those of subs that are failing (FailingSince set), the attempts made since
// FailingSince: every one of them failed. Pages say "all 7 attempts since …" only with this number.
func (s *Service) FailingRuns(ctx context.Context, tenantID uuid.UUID, subs []Subscription) (map[uuid.UUID]int, error) {
	ids := make([]uuid.UUID, 0, len(subs))
	for _, sub := range subs {
		if sub.FailingSince != nil {
			ids = append(ids, sub.ID)
		}
	}
	out := make(map[uuid.UUID]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.FailingRunAttempts(ctx, db.FailingRunAttemptsParams{SubscriptionIds: ids, TenantID: tenantID})
	if err != nil {
		return nil, fmt.Errorf("failing run attempts: %w", err)
	}
	for _, r := range rows {
		out[r.SubscriptionID] = int(r.Attempts)
	}
	return out, nil
}
