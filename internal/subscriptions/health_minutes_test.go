package subscriptions_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/retention"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type storedAttempt struct {
	at       time.Time
	ok       bool
	duration int32
}

// Health is added up from per-minute counts (attempt_minutes, kept by a trigger on webhook_attempts) plus
// the minutes a window cuts through; it must say exactly what the attempts themselves say. Attempts are
// stored by several statements (INSERT and COPY) at random times over 26 hours, and each answer is compared
// with one worked out here from the attempts: counts, last success and failure, the run of failures after
// the last success (which may fall in a cut minute, a whole one, or nowhere), the latency percentiles of
// the newest LatencySample, and the chart buckets of every range.
func TestHealthMatchesItsAttempts(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	// A database of its own: retention sweeps, and the minutes are counted, over every tenant.
	pool, err := server.Connect(ctx, ownDatabase(t, "subs_minutes"), 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	now := time.Date(2026, 11, 23, 15, 30, 20, 500000000, time.UTC)
	clock := func() time.Time { return now }
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "health-minutes")
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, clock, true)
	url := "https://example.com/hook"
	var subs []subscriptions.Subscription
	for range 3 {
		s, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	pub := publish.NewPublisher(pool, delivery.RetryPolicy{Base: time.Hour, MaxDelay: time.Hour, MaxAttempts: 1, Window: time.Hour}, clock)
	ev, err := pub.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "x", Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	deliveryOf := map[uuid.UUID]uuid.UUID{}
	for _, d := range ev.Deliveries {
		deliveryOf[uuid.MustParse(d.SubscriptionID)] = uuid.MustParse(d.ID)
	}

	stored := storeAttempts(t, pool, tn.ID, subs, deliveryOf, now)
	checkHealthSince(t, svc, tn.ID, subs, stored, now)
	ids := []uuid.UUID{subs[0].ID, subs[1].ID, subs[2].ID}
	checkSeries(t, svc, tn.ID, ids, stored, now)

	// Another tenant asking for these subscriptions learns nothing.
	other, err := tenants.NewService(pool, "").CreateTenant(ctx, "health-minutes-other")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := svc.HealthSince(ctx, other.ID, subs, now.Add(-24*time.Hour)); err != nil || h[subs[0].ID].Attempts != 0 {
		t.Errorf("another tenant sees %+v, %v", h[subs[0].ID], err)
	}
	if s, err := svc.SeriesOf(ctx, other.ID, ids, subscriptions.Range24h); err != nil || slices.ContainsFunc(s[ids[0]], func(b subscriptions.HourBucket) bool { return b.Successes+b.Failures > 0 }) {
		t.Errorf("another tenant sees a chart: %v", err)
	}

	checkMinutesSwept(t, pool, now)
}

// storeAttempts stores each subscription's attempts of its delivery, at random times (a fixed seed) before
// now, by several statements (INSERT and COPY), and returns them by subscription.
func storeAttempts(t *testing.T, pool *pgxpool.Pool, tenant uuid.UUID, subs []subscriptions.Subscription,
	deliveryOf map[uuid.UUID]uuid.UUID, now time.Time) map[uuid.UUID][]storedAttempt {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	stored := map[uuid.UUID][]storedAttempt{}
	// shape: 0 a busy endpoint (more attempts than LatencySample) that mostly succeeds and ends failing;
	// 1 one that never succeeds, over 8 days; 2 one whose last success is in the window's first (cut) minute.
	counts := []int{subscriptions.LatencySample + 2500, 400, 300}
	for i, sub := range subs {
		var rows []storedAttempt
		for j := range counts[i] {
			span := 26 * time.Hour
			if i == 1 {
				span = 8 * 24 * time.Hour
			}
			at := now.Add(-5*time.Minute - time.Duration(rng.Int64N(int64(span)))).Truncate(time.Microsecond)
			ok := rng.IntN(10) < 8
			switch i {
			case 1:
				ok = false
			case 2:
				ok = false
				if j == 0 {
					at, ok = now.Add(-24*time.Hour+10*time.Second).Truncate(time.Microsecond), true
				}
			}
			rows = append(rows, storedAttempt{at: at, ok: ok, duration: int32(rng.IntN(2000))})
		}
		if i == 0 { // a run of failures at the end, its first one in the minute of the last success
			last := now.Add(-3 * time.Minute).Truncate(time.Minute).Add(20 * time.Second)
			rows = append(rows, storedAttempt{at: last, ok: true, duration: 5})
			for k := range 7 {
				rows = append(rows, storedAttempt{at: last.Add(time.Duration(k*15+5) * time.Second), ok: false, duration: 9})
			}
		}
		// several statements of random sizes, INSERT or COPY (both fire the trigger)
		next := 0
		for len(rows) > 0 {
			n := min(len(rows), 1+rng.IntN(3000))
			batch := rows[:n]
			rows = rows[n:]
			insertAttempts(t, pool, tenant, sub.ID, deliveryOf[sub.ID], &next, batch, rng.IntN(2) == 0)
			stored[sub.ID] = append(stored[sub.ID], batch...)
		}
		// The delivery is done: no worker of another test claims it and numbers an attempt again.
		if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'delivered', attempt_count = $2, total_attempts = $2,
			last_attempt_at = $3 WHERE id = $1`, deliveryOf[sub.ID], next, now); err != nil {
			t.Fatal(err)
		}
	}
	return stored
}

// checkHealthSince compares each subscription's health since several times (cutting a minute or not)
// with the health worked out from its attempts.
func checkHealthSince(t *testing.T, svc *subscriptions.Service, tenant uuid.UUID, subs []subscriptions.Subscription,
	stored map[uuid.UUID][]storedAttempt, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, since := range []time.Time{
		now.Add(-24 * time.Hour),                       // cuts a minute
		now.Add(-24 * time.Hour).Truncate(time.Minute), // on a minute's start
		now.Add(-time.Hour), now.Add(-2 * time.Minute), now.Add(-7 * 24 * time.Hour),
	} {
		got, err := svc.HealthSince(ctx, tenant, subs, since)
		if err != nil {
			t.Fatal(err)
		}
		for i, sub := range subs {
			want := healthOf(stored[sub.ID], since)
			h := got[sub.ID]
			if h.Attempts != want.Attempts || h.Successes != want.Successes || h.ConsecutiveFailures != want.ConsecutiveFailures ||
				!sameTime(h.LastSuccessAt, want.LastSuccessAt) || !sameTime(h.LastFailureAt, want.LastFailureAt) ||
				math.Abs(h.LatencyMsP50-want.LatencyMsP50) > 1e-6 || math.Abs(h.LatencyMsP95-want.LatencyMsP95) > 1e-6 {
				t.Errorf("subscription %d since %s:\n got %+v\nwant %+v", i, since.Format(time.RFC3339Nano), h, want)
			}
		}
	}
	if h, _ := svc.HealthSince(ctx, tenant, subs[:1], now.Add(-24*time.Hour)); h[subs[0].ID].ConsecutiveFailures != 7 {
		t.Errorf("the run after the last success: %d, want 7", h[subs[0].ID].ConsecutiveFailures)
	}
}

// checkSeries compares each subscription's chart buckets of every range with those worked out from its
// attempts.
func checkSeries(t *testing.T, svc *subscriptions.Service, tenant uuid.UUID, ids []uuid.UUID,
	stored map[uuid.UUID][]storedAttempt, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, rg := range subscriptions.Ranges {
		series, err := svc.SeriesOf(ctx, tenant, ids, rg)
		if err != nil {
			t.Fatal(err)
		}
		start := rg.Start(now)
		for i, id := range ids {
			want := make([]subscriptions.HourBucket, int(rg.Span/rg.Step))
			for k := range want {
				want[k].Hour = start.Add(time.Duration(k) * rg.Step)
			}
			for _, a := range stored[id] {
				if a.at.Before(start) {
					continue
				}
				k := int(a.at.Sub(start) / rg.Step)
				if a.ok {
					want[k].Successes++
				} else {
					want[k].Failures++
				}
			}
			if !slices.Equal(series[id], want) {
				t.Errorf("range %s, subscription %d: buckets differ\n got %v\nwant %v", rg.Name, i, series[id], want)
			}
		}
	}
}

// checkMinutesSwept: retention, run two days after now, drops the minutes past the longest range, and only
// those.
func checkMinutesSwept(t *testing.T, pool *pgxpool.Pool, now time.Time) {
	t.Helper()
	ctx := context.Background()
	var before, old int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE minute < $1) FROM attempt_minutes`,
		now.Add(2*24*time.Hour-retention.AttemptMinutesKept)).Scan(&before, &old); err != nil {
		t.Fatal(err)
	}
	if old == 0 {
		t.Fatal("no minute old enough to be swept two days from now")
	}
	later := now.Add(2 * 24 * time.Hour)
	res, err := retention.New(pool, retention.Options{Now: func() time.Time { return later }, BatchSize: 100, Pause: time.Millisecond}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM attempt_minutes`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if res.Minutes != int64(old) || after != before-old {
		t.Errorf("sweep deleted %d minutes (%d left of %d), want the %d old ones", res.Minutes, after, before, old)
	}
}

// insertAttempts stores attempts of one delivery, numbered on from next, by one INSERT or one COPY.
func insertAttempts(t *testing.T, pool *pgxpool.Pool, tenant, sub, dlv uuid.UUID, next *int, rows []storedAttempt, byCopy bool) {
	t.Helper()
	ctx := context.Background()
	outcome := func(ok bool) (int32, string) {
		if ok {
			return 200, "delivered"
		}
		return 500, "retry"
	}
	if byCopy {
		src := make([][]any, len(rows))
		for i, a := range rows {
			*next++
			status, out := outcome(a.ok)
			src[i] = []any{dlv, tenant, sub, int32(*next), a.at, a.duration, status, out, "https://example.com/hook", map[string]string{}}
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"webhook_attempts"}, []string{"delivery_id", "tenant_id", "subscription_id",
			"attempt", "started_at", "duration_ms", "status", "outcome", "request_url", "request_headers"}, pgx.CopyFromRows(src)); err != nil {
			t.Fatal(err)
		}
		return
	}
	var nums, durations, statuses []int32
	var ats []time.Time
	var outcomes []string
	for _, a := range rows {
		*next++
		status, out := outcome(a.ok)
		nums, ats, durations, statuses, outcomes = append(nums, int32(*next)), append(ats, a.at), append(durations, a.duration),
			append(statuses, status), append(outcomes, out)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome,
		                              request_url, request_headers)
		SELECT $1, $2, $3, x.n, x.at, x.d, x.s, x.o, 'https://example.com/hook', '{}'
		FROM unnest($4::int[], $5::timestamptz[], $6::int[], $7::int[], $8::text[]) AS x (n, at, d, s, o)`,
		dlv, tenant, sub, nums, ats, durations, statuses, outcomes); err != nil {
		t.Fatal(err)
	}
}

// healthOf is health worked out from the attempts themselves.
func healthOf(all []storedAttempt, since time.Time) subscriptions.Health {
	var h subscriptions.Health
	var in []storedAttempt
	for _, a := range all {
		if !a.at.Before(since) {
			in = append(in, a)
		}
	}
	if len(in) == 0 {
		return h
	}
	slices.SortStableFunc(in, func(a, b storedAttempt) int { return a.at.Compare(b.at) })
	var lastOK *time.Time
	for _, a := range in {
		h.Attempts++
		at := a.at
		if a.ok {
			h.Successes++
			h.LastSuccessAt, lastOK = &at, &at
		} else {
			h.LastFailureAt = &at
		}
	}
	for _, a := range in {
		if !a.ok && (lastOK == nil || a.at.After(*lastOK)) {
			h.ConsecutiveFailures++
		}
	}
	sample := in[max(0, len(in)-subscriptions.LatencySample):]
	d := make([]float64, len(sample))
	for i, a := range sample {
		d[i] = float64(a.duration)
	}
	slices.Sort(d)
	h.LatencyMsP50, h.LatencyMsP95 = percentileCont(d, 0.5), percentileCont(d, 0.95)
	return h
}

// percentileCont is PostgreSQL's percentile_cont over sorted values.
func percentileCont(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func sameTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}
