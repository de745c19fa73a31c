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

// Health is a subscription's endpoint health over the last HealthWindow.
type Health struct {
	State string `json:"state"`
	// SuccessRate is delivered attempts over all attempts, from 0 to 1; null without attempts.
	SuccessRate         *float64   `json:"success_rate"`
	Attempts            int        `json:"attempts"`
	Successes           int        `json:"successes"`
	LatencyMsP50        float64    `json:"latency_ms_p50"`
	LatencyMsP95        float64    `json:"latency_ms_p95"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
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
	since := s.now().Add(-HealthWindow)
	st, err := s.q.SubscriptionAttemptStats(ctx, db.SubscriptionAttemptStatsParams{SubscriptionID: id, TenantID: tenantID, Since: since})
	if err != nil {
		return Health{}, fmt.Errorf("health stats: %w", err)
	}
	cf, err := s.q.SubscriptionConsecutiveFailures(ctx, db.SubscriptionConsecutiveFailuresParams{SubscriptionID: id, TenantID: tenantID, Since: since})
	if err != nil {
		return Health{}, fmt.Errorf("health failures: %w", err)
	}
	h := Health{
		State: sub.State, Attempts: int(st.Attempts), Successes: int(st.Successes),
		LatencyMsP50: st.LatencyP50, LatencyMsP95: st.LatencyP95, ConsecutiveFailures: int(cf),
		LastSuccessAt: asTime(st.LastSuccessAt), LastFailureAt: asTime(st.LastFailureAt),
	}
	if h.Attempts > 0 {
		r := float64(h.Successes) / float64(h.Attempts)
		h.SuccessRate = &r
	}
	return h, nil
}

// Hourly returns successes and failures per hour over the last 24 hours, one bucket per hour, oldest first,
// empty hours included.
func (s *Service) Hourly(ctx context.Context, tenantID, id uuid.UUID) ([]HourBucket, error) {
	now := s.now()
	start := now.Add(-HealthWindow).Truncate(time.Hour).Add(time.Hour)
	rows, err := s.q.SubscriptionHourlyOutcomes(ctx, db.SubscriptionHourlyOutcomesParams{SubscriptionID: id, TenantID: tenantID, Since: start})
	if err != nil {
		return nil, fmt.Errorf("hourly outcomes: %w", err)
	}
	byHour := map[int64]db.SubscriptionHourlyOutcomesRow{}
	for _, r := range rows {
		byHour[r.Hour.Unix()] = r
	}
	out := make([]HourBucket, 0, 24)
	for h := start; !h.After(now); h = h.Add(time.Hour) {
		r := byHour[h.Unix()]
		out = append(out, HourBucket{Hour: h, Successes: int(r.Successes), Failures: int(r.Failures)})
	}
	return out, nil
}

// DeadCounts returns the number of dead deliveries per subscription of a tenant.
func (s *Service) DeadCounts(ctx context.Context, tenantID uuid.UUID) (map[uuid.UUID]int, error) {
	rows, err := s.q.CountDeadDeliveriesBySubscription(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("dead counts: %w", err)
	}
	out := make(map[uuid.UUID]int, len(rows))
	for _, r := range rows {
		out[r.SubscriptionID] = int(r.Dead)
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
