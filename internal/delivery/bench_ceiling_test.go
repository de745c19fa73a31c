package delivery_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// BenchmarkDrainVsCeiling drains one backlog twice in the same run, against the same receiver and table:
// once through a started Worker (signing, the fair-share claim, batched recording, health upkeep) and once
// through the tightest loop the row work allows (8 goroutines: claim 50 with SKIP LOCKED, POST them,
// insert their attempt rows and mark them delivered in one statement). The ratio is what the engine's
// extra work costs. HOOKLINE_BENCH_ROWS sets the backlog (default 20,000).
func BenchmarkDrainVsCeiling(b *testing.B) {
	rows, rounds := 10000, 3
	if v, err := strconv.Atoi(os.Getenv("HOOKLINE_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	if os.Getenv("HOOKLINE_BENCH_EXPLAIN") != "" {
		enableAutoExplain(b)
	}
	for b.Loop() {
		e := setup(b)
		sub, _ := e.subscribe(srv.URL+"/hook", subscriptions.Input{})
		event := e.publish("order.created", fmt.Sprintf(`{"pad":%q}`, bytes.Repeat([]byte("x"), 1000))).ID
		waitFor := func(want int64) {
			deadline := time.Now().Add(5 * time.Minute)
			poll := time.NewTicker(2 * time.Millisecond)
			defer poll.Stop()
			for received.Load() < want {
				if time.Now().After(deadline) {
					b.Fatalf("received %d of %d", received.Load(), want)
				}
				<-poll.C
			}
		}
		fresh := func() {
			if _, err := e.pool.Exec(e.ctx, "TRUNCATE webhook_attempts; DELETE FROM webhook_deliveries"); err != nil {
				b.Fatal(err)
			}
			insertDeliveries(b, e, sub.ID, event, "pending", rows, time.Now())
			if _, err := e.pool.Exec(e.ctx, "VACUUM ANALYZE webhook_deliveries, subscriptions, subscription_finished"); err != nil {
				b.Fatal(err)
			}
			received.Store(0)
		}
		// Rounds alternate drain and ceiling so that a burst of other load on a shared machine lands on
		// both; the median round's ratio is reported.
		var drains, ceilings, ratios, cpuRatios []float64
		for range rounds {
			w := e.worker(delivery.WorkerOptions{Concurrency: benchConcurrency(), EndpointConcurrency: 1000, Now: time.Now, PollInterval: time.Minute}, nil)
			fresh()
			if err := w.Start(e.ctx); err != nil {
				b.Fatal(err)
			}
			start, cpu0 := time.Now(), cpuNow(b)
			self0, pg0 := selfCPU.Load(), pgCPU.Load()
			waitFor(int64(rows))
			drain, drainCPU := time.Since(start), cpuNow(b)-cpu0
			b.Logf("drain CPU per delivery: Go %d µs, PostgreSQL %d µs", (selfCPU.Load()-self0)/1000/int64(rows), (pgCPU.Load()-pg0)/1000/int64(rows))
			w.Stop(context.Background())
			if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'"); n != 0 {
				b.Fatalf("%d deliveries not delivered", n)
			}
			fresh()
			start, cpu0 = time.Now(), cpuNow(b)
			self0, pg0 = selfCPU.Load(), pgCPU.Load()
			ceilingLoop(b, e.ctx, e, sub.ID, srv.URL+"/hook", 8, 50)
			ceiling, ceilingCPU := time.Since(start), cpuNow(b)-cpu0
			b.Logf("ceiling CPU per delivery: Go %d µs, PostgreSQL %d µs", (selfCPU.Load()-self0)/1000/int64(rows), (pgCPU.Load()-pg0)/1000/int64(rows))
			waitFor(int64(rows))
			drains = append(drains, float64(rows)/drain.Seconds())
			ceilings = append(ceilings, float64(rows)/ceiling.Seconds())
			ratios = append(ratios, ceiling.Seconds()/drain.Seconds())
			cpuRatios = append(cpuRatios, ceilingCPU.Seconds()/drainCPU.Seconds())
			b.Logf("round: drain %.0f/s, ceiling %.0f/s, ratio %.2f; CPU per delivery: drain %.0f µs, ceiling %.0f µs, ratio %.2f",
				drains[len(drains)-1], ceilings[len(ceilings)-1], ratios[len(ratios)-1],
				float64(drainCPU.Microseconds())/float64(rows), float64(ceilingCPU.Microseconds())/float64(rows), cpuRatios[len(cpuRatios)-1])
		}
		b.ReportMetric(median(drains), "drain/s")
		b.ReportMetric(median(ceilings), "ceiling/s")
		b.ReportMetric(median(ratios), "ratio")
		b.ReportMetric(median(cpuRatios), "cpu-ratio")
	}
}

// enableAutoExplain has the package database log the plans of statements slower than 12 ms
// (HOOKLINE_BENCH_EXPLAIN), analyzed, with their buffers.
func enableAutoExplain(b *testing.B) {
	c := connect(b, 1)
	if _, err := c.Exec(b.Context(), `DO $$ BEGIN
		EXECUTE format('ALTER DATABASE %I SET session_preload_libraries = auto_explain', current_database());
		EXECUTE format('ALTER DATABASE %I SET auto_explain.log_min_duration = %L', current_database(), '12ms');
		EXECUTE format('ALTER DATABASE %I SET auto_explain.log_analyze = on', current_database());
		EXECUTE format('ALTER DATABASE %I SET auto_explain.log_buffers = on', current_database());
		END $$`); err != nil {
		b.Fatal(err)
	}
	c.Close()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func ceilingLoop(b *testing.B, ctx context.Context, e *env, sub uuid.UUID, url string, workers, batch int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				rs, err := e.pool.Query(ctx, `
					UPDATE webhook_deliveries d SET state = 'in_flight', lease_id = $2, lease_expires_at = now() + interval '1 minute'
					FROM (SELECT id FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'pending' AND next_attempt_at <= now()
					      ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) c, events e
					WHERE d.id = c.id AND e.id = d.event_id
					RETURNING d.id, e.body`, sub, uuid.New(), batch)
				if err != nil {
					b.Error(err)
					return
				}
				var ids []uuid.UUID
				var bodies [][]byte
				for rs.Next() {
					var id uuid.UUID
					var body []byte
					if err := rs.Scan(&id, &body); err != nil {
						b.Error(err)
						return
					}
					ids, bodies = append(ids, id), append(bodies, body)
				}
				if rs.Err() != nil {
					b.Error(rs.Err())
					return
				}
				if len(ids) == 0 {
					return
				}
				var posts sync.WaitGroup
				for i := range ids {
					posts.Go(func() {
						resp, err := client.Post(url, "application/json", bytes.NewReader(bodies[i]))
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					})
				}
				posts.Wait()
				if _, err := e.pool.Exec(ctx, `
					WITH d AS (
						UPDATE webhook_deliveries SET state = 'delivered', attempt_count = attempt_count + 1, total_attempts = total_attempts + 1,
						       last_attempt_at = now(), last_status = 200, lease_id = NULL, lease_expires_at = NULL, updated_at = now()
						WHERE id = ANY($1) RETURNING id, tenant_id, subscription_id, total_attempts)
					INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status, outcome, request_url, request_headers)
					SELECT id, tenant_id, subscription_id, total_attempts, now(), 1, 200, 'delivered', $2, '{}' FROM d`, ids, url); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func benchConcurrency() int {
	if v, err := strconv.Atoi(os.Getenv("HOOKLINE_BENCH_WORKERS")); err == nil && v > 0 {
		return v
	}
	return 0
}

// cpuNow is the CPU time used so far by this process (engine, receiver and ceiling loop alike) and by the
// server processes of the PostgreSQL cluster under test: on a machine shared with other work, CPU per
// delivery says more than wall time.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	total := time.Duration(0)
	var port int
	if err := connect(b, 1).QueryRow(b.Context(), "SELECT current_setting('port')::int").Scan(&port); err != nil {
		b.Fatal(err)
	}
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !bytes.Contains(cmd, []byte("postgres")) || !isCluster(pid, port) {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100
	}
	selfCPU.Store(int64(self))
	pgCPU.Store(int64(total))
	return self + total
}

var selfCPU, pgCPU atomic.Int64

// isCluster reports whether pid belongs to the cluster listening on port: the postmaster or its children.
func isCluster(pid, port int) bool {
	for range 2 {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmd, []byte("-D")) || bytes.HasSuffix(bytes.TrimRight(cmd, "\x00"), []byte("postgres")) {
			data, err := os.ReadFile(filepath.Join(dataDirOf(pid), "postmaster.pid"))
			if err == nil {
				lines := strings.Split(string(data), "\n")
				if len(lines) > 3 && strings.TrimSpace(lines[3]) == strconv.Itoa(port) && strings.TrimSpace(lines[0]) == strconv.Itoa(pid) {
					return true
				}
			}
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		pid, _ = strconv.Atoi(f[1]) // the parent
	}
	return false
}

func dataDirOf(pid int) string {
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(string(cmd), "\x00")
	for i, a := range args {
		if a == "-D" && i+1 < len(args) {
			return args[i+1]
		}
	}
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return cwd
}
