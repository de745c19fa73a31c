package phases

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The ceiling: the drain's row work done by the harness itself, as tight as SQL allows, on the same
// schema: -ceiling-workers loops, each claiming -ceiling-batch due rows with FOR UPDATE SKIP LOCKED
// (state in_flight with a lease, the event body read with them), then one statement that inserts their
// attempt rows and marks them delivered. No fair share, health, signing or HTTP: what the database can do.
const ceilingClaim = `
WITH c AS (
    SELECT id FROM webhook_deliveries
    WHERE subscription_id = $1 AND state = 'pending' AND next_attempt_at <= now()
    ORDER BY next_attempt_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET state = 'in_flight', lease_id = $3, lease_expires_at = now() + interval '1 minute', updated_at = now()
FROM c, events e
WHERE d.id = c.id AND e.id = d.event_id
RETURNING d.id, d.event_id, e.body`

const ceilingRecord = `
WITH moved AS (
    UPDATE webhook_deliveries d
    SET state = 'delivered', attempt_count = d.attempt_count + 1, total_attempts = d.total_attempts + 1,
        lease_id = NULL, lease_expires_at = NULL, last_attempt_at = $3, last_status = 200, last_response = '',
        updated_at = now()
    WHERE d.id = ANY ($1::uuid[]) AND d.state = 'in_flight' AND d.lease_id = $2
    RETURNING d.id, d.event_id, d.tenant_id, d.subscription_id, d.total_attempts
)
INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status,
                              response_snippet, error, outcome, request_url, request_headers)
SELECT m.id, m.tenant_id, m.subscription_id, m.total_attempts, $3, 1, 200, '', '', 'delivered', $4,
       jsonb_build_object('content-type', 'application/json', 'webhook-id', m.event_id)
FROM moved m`

func (b *Bench) ceiling(ctx context.Context) error {
	rate, _, cpu, err := b.ceilingOnce(ctx, false)
	if err != nil {
		return err
	}
	b.addCPU("ceiling", "sql", cpu[0], cpu[1], b.o.DrainN)
	b.res.Add("ceiling", "claim+record, no HTTP", rate, "deliveries/s",
		fmt.Sprintf("%d workers × %d rows, %d deliveries", b.o.CeilWorkers, b.o.CeilBatch, b.o.DrainN))
	if !b.o.CeilHTTP {
		return nil
	}
	rate, t, cpu, err := b.ceilingOnce(ctx, true)
	if err != nil {
		return err
	}
	b.addCPU("ceiling", "http", cpu[0], cpu[1], b.o.DrainN)
	b.res.Add("ceiling", "claim+POST+record", rate, "deliveries/s", "each claimed row POSTed to the receiver, concurrently")
	b.record("ceiling", "http", t)
	return nil
}

// ceilingOnce runs the loop once on a fresh database and returns its rate, what the receiver counted (with
// HTTP) and the CPU readings around it.
func (b *Bench) ceilingOnce(ctx context.Context, withHTTP bool) (float64, testbed.Tally, [2]testbed.CPUUse, error) {
	var cpu [2]testbed.CPUUse
	db, err := b.o.Server.FreshDB(ctx, "ceiling")
	if err != nil {
		return 0, testbed.Tally{}, cpu, err
	}
	defer db.Close()
	ts := &tenantSetup{labels: []string{"s0"}}
	if err := db.Pool.QueryRow(ctx, "INSERT INTO tenants (name) VALUES ('bench') RETURNING id::text").Scan(&ts.tenant); err != nil {
		return 0, testbed.Tally{}, cpu, err
	}
	url := b.rc.URL(0, "s0")
	var sub string
	if err := db.Pool.QueryRow(ctx, "INSERT INTO subscriptions (tenant_id, url) VALUES ($1, $2) RETURNING id::text",
		ts.tenant, url).Scan(&sub); err != nil {
		return 0, testbed.Tally{}, cpu, err
	}
	ts.subs = []string{sub}
	n := b.o.DrainN
	if err := seedBacklog(ctx, db, ts, n, b.o.Payload); err != nil {
		return 0, testbed.Tally{}, cpu, err
	}
	cfg := db.Pool.Config()
	cfg.MaxConns = int32(b.o.CeilWorkers)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, testbed.Tally{}, cpu, err
	}
	defer pool.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 512}, Timeout: 30 * time.Second}
	reached := b.rc.Reset(n, false)
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, b.o.CeilWorkers)
	cpuBefore := testbed.ReadCPU(ctx, db)
	start := time.Now()
	for range b.o.CeilWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ceilingLoop(ctx, pool, sub, url, b.o.CeilBatch, withHTTP, hc, &done); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu = [2]testbed.CPUUse{cpuBefore, testbed.ReadCPU(ctx, db)}
	close(errs)
	if err := <-errs; err != nil {
		return 0, testbed.Tally{}, cpu, err
	}
	if int(done.Load()) != n {
		return 0, testbed.Tally{}, cpu, fmt.Errorf("recorded %d of %d", done.Load(), n)
	}
	rate := float64(n) / elapsed.Seconds()
	what := "no HTTP"
	if withHTTP {
		what = "with a POST per row"
		select {
		case <-reached:
		case <-time.After(10 * time.Second):
		}
	}
	fmt.Printf("ceiling (%s): %d deliveries in %s: %.0f deliveries/s\n", what, n, elapsed.Round(time.Millisecond), rate)
	var t testbed.Tally
	if withHTTP {
		if t, err = b.settle(ctx, db, ts, n); err != nil {
			return 0, t, cpu, err
		}
		fmt.Printf("ceiling (%s): %s\n", what, t)
	}
	return rate, t, cpu, nil
}

func ceilingLoop(ctx context.Context, pool *pgxpool.Pool, sub, url string, batch int, withHTTP bool, hc *http.Client, done *atomic.Int64) error {
	type row struct {
		id, event uuid.UUID
		body      []byte
	}
	for {
		lease := uuid.New()
		rows, err := pool.Query(ctx, ceilingClaim, sub, batch, lease)
		if err != nil {
			return err
		}
		var claimed []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.event, &r.body); err != nil {
				rows.Close()
				return err
			}
			claimed = append(claimed, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			if pgfail.Moved(err) {
				// A row another loop's record moved to its time partition as this claim locked it (SKIP
				// LOCKED does not skip those): nothing was claimed, so claim again.
				continue
			}
			return err
		}
		if len(claimed) == 0 {
			return nil
		}
		started := time.Now()
		if withHTTP {
			var wg sync.WaitGroup
			errs := make([]error, len(claimed))
			for i, r := range claimed {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = testbed.PostDelivery(ctx, hc, url, r.event.String(), r.body)
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
		}
		ids := make([]uuid.UUID, len(claimed))
		for i, r := range claimed {
			ids[i] = r.id
		}
		tag, err := pool.Exec(ctx, ceilingRecord, ids, lease, started, url)
		if err != nil {
			return err
		}
		done.Add(tag.RowsAffected())
	}
}
