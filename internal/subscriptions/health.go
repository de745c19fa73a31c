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
	ids := make([]uuid.UUID, len(subs))
	out := make(map[uuid.UUID]Health, len(subs))
	for i, sub := range subs {
		ids[i] = sub.ID
		out[sub.ID] = Health{State: sub.State, CircuitState: sub.Circuit.State, CircuitOpened: sub.Circuit.OpenedAt,
			FailingSince: sub.FailingSince}
	}
	rows, err := s.q.AttemptStatsBySubscription(ctx, db.AttemptStatsBySubscriptionParams{
		SubscriptionIds: ids, TenantID: tenantID, Since: s.now().Add(-HealthWindow),
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
	now := s.now()
	start := now.Add(-HealthWindow).Truncate(time.Hour).Add(time.Hour)
	rows, err := s.q.HourlyOutcomesBySubscription(ctx, db.HourlyOutcomesBySubscriptionParams{
		SubscriptionIds: ids, TenantID: tenantID, Since: start,
	})
	if err != nil {
		return nil, fmt.Errorf("hourly outcomes: %w", err)
	}
	type key struct {
		sub  uuid.UUID
		hour int64
	}
	counts := map[key]db.HourlyOutcomesBySubscriptionRow{}
	for _, r := range rows {
		counts[key{r.SubscriptionID, r.Hour.Unix()}] = r
	}
	out := make(map[uuid.UUID][]HourBucket, len(ids))
	for _, id := range ids {
		buckets := make([]HourBucket, 0, 24)
		for h := start; !h.After(now); h = h.Add(time.Hour) {
			r := counts[key{id, h.Unix()}]
			buckets = append(buckets, HourBucket{Hour: h, Successes: int(r.Successes), Failures: int(r.Failures)})
		}
		out[id] = buckets
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
