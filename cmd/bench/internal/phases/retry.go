package phases

import (
	"context"
	"fmt"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// retry: while drain (a) runs, POST .../deliveries/{id}/retry on dead deliveries of a second subscription
// (seeded failed in SQL) at -retry-rate per second: p50/p95 of the answer. The retried deliveries go
// out too and are counted with the backlog.
func (b *Bench) retry(ctx context.Context) error {
	db, err := b.o.Server.FreshDB(ctx, "retry")
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := b.o.Server.Start(ctx, db.URL, fmt.Sprintf("HOOKLINE_ENDPOINT_CONCURRENCY=%d", b.o.DrainCap),
		"HOOKLINE_RESEND_PER_MINUTE=1000000")
	if err != nil {
		return err
	}
	defer s.Stop()
	c := testbed.NewClient(s.Base)
	ts, err := b.setupTenant(ctx, c, 2, 0)
	if err != nil {
		return err
	}
	if err := ts.setState(ctx, c, "pause"); err != nil {
		return err
	}
	backlog := &tenantSetup{tenant: ts.tenant, subs: ts.subs[:1], labels: ts.labels[:1]}
	n := b.o.DrainN
	if err := seedBacklog(ctx, db, backlog, n, b.o.Payload); err != nil {
		return err
	}
	dead, err := seedDead(ctx, db, ts.tenant, ts.subs[1], b.o.RetryDead, b.o.Payload)
	if err != nil {
		return err
	}
	if _, err := c.Call(ctx, "POST", "/tenants/"+ts.tenant+"/subscriptions/"+ts.subs[1]+"/resume", nil, nil, nil); err != nil {
		return err
	}
	b.rc.Reset(0, false)
	_ = s.ResetPeak()
	start := time.Now()
	if _, err := c.Call(ctx, "POST", "/tenants/"+ts.tenant+"/subscriptions/"+ts.subs[0]+"/resume", nil, nil, nil); err != nil {
		return err
	}
	var lat report.Latencies
	retried, failures := 0, 0
	firstErr := ""
	every := time.Duration(float64(time.Second) / b.o.RetryRate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	timeout := time.After(b.o.Timeout)
	for {
		done, err := db.Count(ctx, "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'delivered'", ts.subs[0])
		if err != nil {
			return err
		}
		if done == n || retried == len(dead) {
			break
		}
		select {
		case <-tick.C:
		case <-timeout:
			return fmt.Errorf("drain not finished within %s (%d of %d)", b.o.Timeout, done, n)
		case <-ctx.Done():
			return ctx.Err()
		}
		t0 := time.Now()
		_, err = c.Call(ctx, "POST", "/tenants/"+ts.tenant+"/deliveries/"+dead[retried]+"/retry", nil, nil, nil)
		lat = append(lat, time.Since(t0))
		retried++
		if err != nil {
			failures++
			if firstErr == "" {
				firstErr = err.Error()
			}
		}
	}
	elapsed := time.Since(start)
	b.recordPeak("retry", "", s)
	fmt.Printf("retry under load: %d retries over %s of drain (a): p50 %.1f ms, p95 %.1f ms, %d failed %s\n",
		retried, elapsed.Round(time.Second), lat.Millis(50), lat.Millis(95), failures, firstErr)
	b.res.Add("retry", "POST retry p50", lat.Millis(50), "ms", fmt.Sprintf("%d calls at %.0f/s during drain (a)", retried, b.o.RetryRate))
	b.res.Add("retry", "POST retry p95", lat.Millis(95), "ms", "target < 150 ms")
	if failures > 0 {
		b.res.Add("retry", "POST retry errors", float64(failures), "errors", firstErr)
	}
	// Let the drain and the retried deliveries finish, then count.
	expected := n + retried - failures
	deadline := time.Now().Add(b.o.Timeout)
	for {
		u, _, _ := b.rc.Counts()
		if u >= expected || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	t := b.rc.Tally(expected)
	fmt.Printf("retry under load: %s\n", t)
	b.record("retry", "drain+retried", t)
	return nil
}

// seedDead inserts n failed deliveries (one event each, one earlier attempt that got a 500) for sub and
// returns their ids.
func seedDead(ctx context.Context, db *testbed.Database, tenant, sub string, n, size int) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `
WITH ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, request_hash, created_at)
    SELECT uuid_v7(), $1, 'bench.dead', $2, '\x00', now() - interval '1 hour' FROM generate_series(1, $3)
    RETURNING id, created_at
)
INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, attempt_count, total_attempts,
                                next_attempt_at, give_up_at, last_attempt_at, last_status, dead_reason, dead_at,
                                created_at, updated_at)
SELECT uuid_v7(), $1, ev.id, $4, 'bench.dead', 'failed', 1, 1, ev.created_at, ev.created_at + interval '72 hours',
       ev.created_at, 500, 'max_attempts', ev.created_at, ev.created_at, ev.created_at
FROM ev
RETURNING id::text`, tenant, eventBody("bench.dead", size), n, sub)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
