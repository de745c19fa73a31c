package phases

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// seedHistory inserts n deliveries for one tenant, spread over ts's subscriptions and the last 30 days,
// directly in SQL (generate_series, chunks of 200,000 rows, one statement each): an event per delivery
// (300-byte bodies, to keep the seed short), the delivery, and its attempts. States: 90 % delivered (a
// tenth after a retry), 5 % failed after 3 attempts, 2 % expired after 5, 3 % pending (half of them
// retrying after one attempt).
func seedHistory(ctx context.Context, db *testbed.Database, ts *tenantSetup, n int) error {
	const chunk = 200000
	body := eventBody("order.created", 200)
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		_, err := db.Pool.Exec(ctx, `
WITH ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, request_hash, created_at)
    SELECT uuid_v7(), $1, 'order.' || (ARRAY['created', 'paid', 'shipped', 'refunded'])[1 + g % 4], $2, '\x00',
           now() - interval '30 days' * (1 - g::float8 / $5)
    FROM generate_series($3::int, $4::int - 1) g
    RETURNING id, created_at, event_type
), picked AS (
    SELECT ev.*, ($6::uuid[])[1 + floor(random() * cardinality($6::uuid[]))::int] AS subscription_id,
           random() AS r, random() AS r2
    FROM ev
), shaped AS (
    SELECT p.*, s.state,
           CASE s.state WHEN 'delivered' THEN 1 + (p.r2 < 0.1)::int WHEN 'failed' THEN 3 WHEN 'expired' THEN 5
                        ELSE (p.r2 < 0.5)::int END AS attempts
    FROM picked p
    CROSS JOIN LATERAL (SELECT CASE WHEN p.r < 0.90 THEN 'delivered' WHEN p.r < 0.95 THEN 'failed'
                                    WHEN p.r < 0.97 THEN 'expired' ELSE 'pending' END AS state) s
), d AS (
    INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state, attempt_count,
                                    total_attempts, next_attempt_at, give_up_at, last_attempt_at, last_status,
                                    last_response, dead_reason, dead_at, created_at, updated_at)
    SELECT uuid_v7(), $1, s.id, s.subscription_id, s.event_type, s.state, s.attempts, s.attempts,
           s.created_at + s.attempts * interval '1 minute', s.created_at + interval '72 hours',
           CASE WHEN s.attempts > 0 THEN s.created_at + (s.attempts - 1) * interval '1 minute' END,
           CASE WHEN s.attempts = 0 THEN NULL WHEN s.state = 'delivered' THEN 200 ELSE 500 END,
           CASE WHEN s.attempts > 0 THEN 'ok' END,
           CASE s.state WHEN 'failed' THEN 'max_attempts' WHEN 'expired' THEN 'deadline' END,
           CASE WHEN s.state IN ('failed', 'expired') THEN s.created_at + s.attempts * interval '1 minute' END,
           s.created_at, s.created_at + s.attempts * interval '1 minute'
    FROM shaped s
    RETURNING id, tenant_id, subscription_id, state, total_attempts, created_at
)
INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status,
                              response_snippet, error, outcome, request_url, request_headers)
SELECT d.id, d.tenant_id, d.subscription_id, a, d.created_at + (a - 1) * interval '1 minute', 40 + a,
       CASE WHEN d.state = 'delivered' AND a = d.total_attempts THEN 200 ELSE 500 END, 'ok', '',
       CASE WHEN d.state = 'delivered' AND a = d.total_attempts THEN 'delivered'
            WHEN d.state = 'failed' AND a = d.total_attempts THEN 'failed' ELSE 'retry' END,
       'https://receiver.example/hook', '{"content-type": "application/json"}'
FROM d CROSS JOIN LATERAL generate_series(1, d.total_attempts) a`,
			ts.tenant, body, lo, hi, n, ts.subs)
		if err != nil {
			return fmt.Errorf("seed history: %w", err)
		}
		if hi%1000000 == 0 || hi == n {
			fmt.Printf("  … %d deliveries seeded\n", hi)
		}
	}
	for _, t := range []string{"events", "webhook_deliveries", "webhook_attempts"} {
		if _, err := db.Pool.Exec(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return err
		}
	}
	return nil
}

// pages: with -pages-n (and with -pages-10m also 10,000,000) deliveries seeded, p50/p95 of the API's
// delivery list (filtered by state; its second page by cursor), a delivery's detail, a subscription's
// health, and the operator console's overview (GET /admin, signed in).
func (b *Bench) pages(ctx context.Context) error {
	sizes := []int{b.o.PagesN}
	if b.o.Pages10m {
		sizes = append(sizes, b.o.PagesBigN)
	}
	for _, n := range sizes {
		if err := b.pagesAt(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bench) pagesAt(ctx context.Context, n int) error {
	db, err := b.o.Server.FreshDB(ctx, "pages")
	if err != nil {
		return err
	}
	defer db.Close()
	const email, password = "bench-admin@example.com", "bench-admin-password-1"
	s, err := b.o.Server.Start(ctx, db.URL, "HOOKLINE_ADMIN_EMAIL="+email, "HOOKLINE_ADMIN_PASSWORD="+password)
	if err != nil {
		return err
	}
	defer func() { s.Stop() }()
	c := testbed.NewClient(s.Base)
	ts, err := b.setupTenant(ctx, c, 10, 0)
	if err != nil {
		return err
	}
	if err := ts.setState(ctx, c, "pause"); err != nil { // the seeded pending rows stay put
		return err
	}
	size := fmt.Sprintf("%dk", n/1000)
	if n >= 1000000 {
		size = fmt.Sprintf("%dM", n/1000000)
	}
	t0 := time.Now()
	if err := seedHistory(ctx, db, ts, n); err != nil {
		return err
	}
	seed := time.Since(t0)
	fmt.Printf("pages %s: seeded in %s (with VACUUM ANALYZE)\n", size, seed.Round(time.Second))
	b.res.Add("pages", size+" seed", seed.Seconds(), "s", "events + deliveries + attempts, generate_series, VACUUM ANALYZE")
	// A restart, so no plan or cache of the server predates the seed (and its sessions log slow plans).
	s.Stop()
	plans := testbed.EnableSlowPlans(ctx, db, b.o.SlowPlan)
	if s, err = b.o.Server.Start(ctx, db.URL, "HOOKLINE_ADMIN_EMAIL="+email, "HOOKLINE_ADMIN_PASSWORD="+password); err != nil {
		return err
	}
	c = testbed.NewClient(s.Base)
	_ = s.ResetPeak()
	base := "/tenants/" + ts.tenant
	var ids []string
	rows, err := db.Pool.Query(ctx, "SELECT id::text FROM webhook_deliveries TABLESAMPLE SYSTEM (1) LIMIT $1", b.o.PageCalls)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) == 0 {
		return fmt.Errorf("no delivery sampled")
	}
	type page struct {
		Items      []struct{ ID string } `json:"items"`
		NextCursor string                `json:"next_cursor"`
	}
	cursorOf := func(q string) (string, error) {
		var p page
		if _, err := c.Call(ctx, "GET", base+"/deliveries?"+q, nil, nil, &p); err != nil {
			return "", err
		}
		if p.NextCursor == "" {
			return "", fmt.Errorf("no second page for %s", q)
		}
		return url.QueryEscape(p.NextCursor), nil
	}
	deadCursor, err := cursorOf("state=dead&limit=50")
	if err != nil {
		return err
	}
	deliveredCursor, err := cursorOf("state=delivered&limit=50")
	if err != nil {
		return err
	}
	admin, err := testbed.SignIn(ctx, s.Base, email, password)
	if err != nil {
		return err
	}
	calls := []struct {
		name string
		path func(i int) string
		web  bool
	}{
		{"list, all states", func(int) string { return base + "/deliveries?limit=50" }, false},
		{"list state=dead", func(int) string { return base + "/deliveries?state=dead&limit=50" }, false},
		{"list state=dead, page 2", func(int) string { return base + "/deliveries?state=dead&limit=50&cursor=" + deadCursor }, false},
		{"list state=delivered, page 2", func(int) string { return base + "/deliveries?state=delivered&limit=50&cursor=" + deliveredCursor }, false},
		{"list subscription + state=failed", func(i int) string {
			return base + "/deliveries?state=failed&limit=50&subscription_id=" + ts.subs[i%len(ts.subs)]
		}, false},
		{"detail", func(i int) string { return base + "/deliveries/" + ids[i%len(ids)] }, false},
		{"subscription health", func(i int) string { return base + "/subscriptions/" + ts.subs[i%len(ts.subs)] + "/health" }, false},
		{"operator overview (GET /admin)", func(int) string { return "/admin" }, true},
	}
	for _, call := range calls {
		var lat report.Latencies
		began := time.Now()
		for i := range b.o.PageCalls {
			if i >= 5 && time.Since(began) > 20*time.Second {
				break // a slow page: enough calls to tell
			}
			t := time.Now()
			if call.web {
				err = admin.Get(ctx, call.path(i))
			} else {
				_, err = c.Call(ctx, "GET", call.path(i), nil, nil, nil)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", call.name, err)
			}
			lat = append(lat, time.Since(t))
		}
		fmt.Printf("pages %s: %s: p50 %.1f ms, p95 %.1f ms\n", size, call.name, lat.Millis(50), lat.Millis(95))
		b.res.Add("pages", size+" "+call.name+" p50", lat.Millis(50), "ms", "")
		b.res.Add("pages", size+" "+call.name+" p95", lat.Millis(95), "ms", fmt.Sprintf("%d calls; target < 50 ms", len(lat)))
	}
	b.recordPeak("pages", size, s)
	plans.Report(filepath.Join(".data", "bench-slow-plans-"+size+".txt"))
	return nil
}
