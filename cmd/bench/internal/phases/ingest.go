package phases

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ingest: events/s through POST /events with -publishers keep-alive publishers, fan-out 1 and 10, with
// and without Idempotency-Key. The subscriptions are paused, so the workers stay idle and only the
// publish path is measured; the rows are then checked in SQL (every accepted event has its deliveries).
// The same run also times the floor of a publish: one committed INSERT of an event and its deliveries per
// call, 16 clients, straight from the harness.
func (b *Bench) ingest(ctx context.Context) error {
	db, s, c, done, err := b.serverPhase(ctx, "ingest")
	if err != nil {
		return err
	}
	defer done()
	for _, fan := range []int{1, 10} {
		ts, err := b.setupTenant(ctx, c, fan, 0)
		if err != nil {
			return err
		}
		if err := ts.setState(ctx, c, "pause"); err != nil {
			return err
		}
		for _, keyed := range []bool{false, true} {
			name := fmt.Sprintf("fan-out %d", fan)
			if keyed {
				name += ", Idempotency-Key"
			}
			_ = s.ResetPeak()
			cpuBefore := testbed.ReadCPU(ctx, db, s)
			r, err := b.publishLoad(ctx, c, ts, keyed, b.o.IngestN, b.o.IngestDur, 0)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if sv, d, h, ok := cpuBefore.PerDelivery(testbed.ReadCPU(ctx, db, s), len(r.events)); ok {
				b.res.Add("ingest", name+" CPU per event: server", sv, "µs", "")
				b.res.Add("ingest", name+" CPU per event: database", d, "µs", "PostgreSQL backends of the phase's database")
				b.res.Add("ingest", name+" CPU per event: harness", h, "µs", "the publishers")
				fmt.Printf("ingest %s: CPU per event: server %.0f µs, database %.0f µs, harness %.0f µs\n", name, sv, d, h)
			}
			b.recordPeak("ingest", name, s)
			rate := float64(len(r.events)) / r.elapsed.Seconds()
			fmt.Printf("ingest %s: %d events in %s: %.0f events/s, p50 %.1f ms, p99 %.1f ms, %d errors\n", name,
				len(r.events), r.elapsed.Round(time.Millisecond), rate, r.lat.Millis(50), r.lat.Millis(99), r.errors)
			b.res.Add("ingest", name, rate, "events/s", fmt.Sprintf("%d publishers, %d B payloads", b.o.Publishers, b.o.Payload))
			b.res.Add("ingest", name+" p50", r.lat.Millis(50), "ms", "")
			b.res.Add("ingest", name+" p99", r.lat.Millis(99), "ms", "")
			if r.errors > 0 {
				b.res.Add("ingest", name+" errors", float64(r.errors), "errors", r.firstErr)
			}
			t, err := checkStored(ctx, db, r.events, fan)
			if err != nil {
				return err
			}
			fmt.Printf("ingest %s: deliveries: %s (in SQL)\n", name, t)
			b.record("ingest", name, t)
		}
	}
	rate, err := insertFloor(ctx, db, b.o.Publishers, b.o.IngestDur/2, b.o.Payload)
	if err != nil {
		return err
	}
	fmt.Printf("ingest floor: %.0f committed INSERTs/s (event + 1 delivery each, %d clients, no HTTP)\n", rate, b.o.Publishers)
	b.res.Add("ingest", "reference: one committed INSERT per call", rate, "events/s",
		fmt.Sprintf("%d clients, event + 1 delivery, no HTTP", b.o.Publishers))
	// Whether a commit waits for the disk: the project-managed cluster's does not (fsync off), so the
	// comparison that group commit is for needs DATABASE_URL pointed at one whose does.
	var flushes bool
	if err := db.Pool.QueryRow(ctx, "SELECT current_setting('fsync') = 'on' AND current_setting('synchronous_commit') <> 'off'").
		Scan(&flushes); err != nil {
		return err
	}
	flushValue, what := 0.0, "fsync or synchronous_commit off: commits do not wait for the disk"
	if flushes {
		flushValue, what = 1, "fsync and synchronous_commit on: every commit waits for the disk"
	}
	b.res.Add("ingest", "database flushes commits", flushValue, "yes/no", what)
	if in, ok := b.res.Get("ingest", "fan-out 1"); ok && rate > 0 {
		b.res.Add("ingest", report.RatioIngestFloor, in/rate, "×", what)
	}
	return nil
}

type loadResult struct {
	events   map[string]time.Time // event id -> when its 202 arrived
	sent     map[string]time.Time // event id -> when its publish request started
	lat      report.Latencies
	elapsed  time.Duration
	errors   int
	firstErr string
}

// publishLoad publishes up to n events to ts's tenant for at most d with -publishers goroutines; with
// rate > 0 the events are spread at that many per second instead of as fast as they go.
func (b *Bench) publishLoad(ctx context.Context, c *testbed.Client, ts *tenantSetup, keyed bool, n int, d time.Duration, rate float64) (*loadResult, error) {
	res := &loadResult{events: map[string]time.Time{}, sent: map[string]time.Time{}}
	var mu sync.Mutex
	var seq atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range b.o.Publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(seq.Add(1))
				if i > n || time.Now().After(deadline) || ctx.Err() != nil {
					return
				}
				if rate > 0 {
					if wait := time.Until(start.Add(time.Duration(float64(i-1) / rate * float64(time.Second)))); wait > 0 {
						time.Sleep(wait)
					}
				}
				typ := ts.eventType
				if typ == "" {
					typ = "bench.ingest"
				}
				// The request written out directly: encoding a map through encoding/json was the publishers'
				// largest cost, and they share the cores with the server measured.
				body := publishBody(typ, payload(b.o.Payload, i))
				// Publishers use a tenant token with events:write, as they would in production.
				hdr := map[string]string{"Authorization": "Bearer " + ts.token}
				if keyed {
					hdr["Idempotency-Key"] = fmt.Sprintf("bench-%s-%d", ts.tenant, i)
				}
				var p published
				t0 := time.Now()
				_, err := c.Call(ctx, "POST", "/tenants/"+ts.tenant+"/events", body, hdr, &p)
				t1 := time.Now()
				mu.Lock()
				if err != nil {
					res.errors++
					if res.firstErr == "" {
						res.firstErr = err.Error()
					}
				} else {
					res.events[p.ID] = t1
					res.sent[p.ID] = t0
					res.lat = append(res.lat, t1.Sub(t0))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if len(res.events) == 0 {
		return nil, fmt.Errorf("no event accepted: %s", res.firstErr)
	}
	return res, nil
}

// rawJSON keeps a payload's bytes as they are when the request is encoded.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// checkStored counts, in SQL, the events and deliveries stored for the accepted event ids: lost is a
// delivery an accepted event should have and has not, duplicates one too many.
func checkStored(ctx context.Context, db *testbed.Database, events map[string]time.Time, fan int) (testbed.Tally, error) {
	ids := make([]string, 0, len(events))
	for id := range events {
		ids = append(ids, id)
	}
	var stored, deliveries int
	err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE id = ANY ($1::uuid[])),
	(SELECT count(*) FROM webhook_deliveries WHERE event_id = ANY ($1::uuid[]))`, ids).Scan(&stored, &deliveries)
	if err != nil {
		return testbed.Tally{}, err
	}
	want := len(ids) * fan
	t := testbed.Tally{Expected: want, Unique: min(deliveries, want), Total: deliveries, Stored: true}
	if stored != len(ids) {
		return t, fmt.Errorf("%d of %d accepted events stored", stored, len(ids))
	}
	return t, nil
}

// insertFloor runs clients goroutines, each committing one INSERT of an event and its delivery per call
// for d: what one publish costs PostgreSQL at least (the reference).
func insertFloor(ctx context.Context, db *testbed.Database, clients int, d time.Duration, size int) (float64, error) {
	var tenant, sub string
	if err := db.Pool.QueryRow(ctx, `WITH t AS (INSERT INTO tenants (name) VALUES ('floor') RETURNING id)
	INSERT INTO subscriptions (tenant_id, url, state) SELECT id, 'http://127.0.0.1:1/', 'paused' FROM t RETURNING tenant_id::text, id::text`).
		Scan(&tenant, &sub); err != nil {
		return 0, err
	}
	cfg := db.Pool.Config()
	cfg.MaxConns = int32(clients)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	body := eventBody("bench.floor", size)
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d && ctx.Err() == nil {
				_, err := pool.Exec(ctx, `WITH ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, request_hash) VALUES (uuid_v7(), $1, 'bench.floor', $2, '\x00')
    RETURNING id, created_at)
INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at)
SELECT uuid_v7(), $1, ev.id, $3, 'bench.floor', ev.created_at, ev.created_at + interval '72 hours' FROM ev`, tenant, body, sub)
				if err != nil {
					errs <- err
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

// publishBody is POST /events' body for a type of plain characters and a payload that is JSON already.
func publishBody(eventType string, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+len(eventType)+32)
	b = append(b, `{"event_type":"`...)
	b = append(b, eventType...)
	b = append(b, `","payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}
