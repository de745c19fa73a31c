package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errorLog keeps the errors a worker logs about claiming and recording, so a test can say there were none.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	if strings.HasPrefix(r.Message, "claim") || strings.HasPrefix(r.Message, "recording") {
		l.mu.Lock()
		l.msgs = append(l.msgs, b.String())
		l.mu.Unlock()
	}
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

func (e *env) deadlocks() int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestTwoWorkersDoNotDeadlock: two workers (two pools, as two processes) drain many subscriptions at
// once, some endpoints answering 2xx, some 5xx (their circuits open) and some 4xx, so claims take slots
// on many subscription rows while completions write the same rows' health; now and then a batch holds a
// release too (a secret that does not open), and the maintenance leader's auto-disable runs meanwhile
// (with every disabled subscription resumed at once). Every statement locks subscription rows (and their
// subscription_finished rows) in id order, so no deadlock is ever detected and no claim or completion
// fails.
func TestTwoWorkersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	const subs, perSub = 50, 40
	e := setup(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("answer") {
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
		case "mixed":
			w.WriteHeader([]int{http.StatusNoContent, http.StatusServiceUnavailable}[n%2])
		case "400":
			w.WriteHeader(http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	for i := range subs {
		answer := []string{"204", "500", "400", "mixed"}[i%4]
		e.subscribe(rc.URL()+"?answer="+answer, subscriptions.Input{})
	}
	total := 0
	for range perSub {
		total += len(e.publish("order.created", `{}`).Deliveries)
	}
	before := e.deadlocks()
	// Short backoffs, so failed deliveries come back while the test runs.
	policy := delivery.RetryPolicy{Base: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxAttempts: 6, Window: time.Hour}

	logs := &errorLog{}
	var opened atomic.Int64
	open := func(stored string) (string, error) {
		if opened.Add(1)%7 == 0 {
			return "", errors.New("no such key")
		}
		return stored, nil
	}
	var workers []*delivery.Worker
	var pools []*pgxpool.Pool
	for range 2 {
		pool := connect(t, 10)
		pools = append(pools, pool)
		w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 10 * time.Second}),
			policy, delivery.WorkerOptions{Concurrency: 64, BatchSize: 50, EndpointConcurrency: 4, PollInterval: 20 * time.Millisecond,
				Breaker: delivery.Breaker{Threshold: 5, ProbeInterval: 50 * time.Millisecond}, Logger: slog.New(logs), Open: open})
		if err := w.Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	// The maintenance leader's health write: disable whatever has only failed for a moment, then resume it.
	disablerPool := connect(t, 2)
	pools = append(pools, disablerPool)
	stopDisabling := startDisabler(t, e, disablerPool)
	eventually(t, 120*time.Second, "most deliveries finished", func() bool {
		return e.count("SELECT count(*) FROM webhook_deliveries WHERE state <> 'pending'") >= total/2
	})
	stopDisabling()
	for _, w := range workers {
		w.Stop(context.Background())
	}
	e.closeAndWaitForBackends(pools)
	t.Logf("%d of %d deliveries finished, %d attempts", e.count("SELECT count(*) FROM webhook_deliveries WHERE state <> 'pending'"), total,
		e.count("SELECT count(*) FROM webhook_attempts"))
	if got := e.deadlocks() - before; got != 0 {
		t.Errorf("%d deadlocks detected while two workers drained %d deliveries", got, total)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, m := range logs.msgs {
		t.Errorf("worker logged: %s", m)
	}
}

// startDisabler runs the maintenance leader's health write on pool every 20 ms until the returned stop:
// it disables whatever has only failed for a moment, then resumes it.
func startDisabler(t *testing.T, e *env, pool *pgxpool.Pool) (stop func()) {
	subsSvc := subscriptions.NewService(pool, time.Now, true)
	stopDisabling := make(chan struct{})
	var disabler sync.WaitGroup
	disabler.Go(func() {
		for {
			select {
			case <-stopDisabling:
				return
			case <-time.After(20 * time.Millisecond):
			}
			disabled, err := subsSvc.DisableFailing(e.ctx, time.Millisecond)
			if err != nil {
				t.Errorf("auto-disable: %v", err)
				return
			}
			for _, d := range disabled {
				if _, err := subsSvc.Resume(e.ctx, d.TenantID, d.ID); err != nil {
					t.Errorf("resume: %v", err)
					return
				}
			}
		}
	})
	return func() { close(stopDisabling); disabler.Wait() }
}

// closeAndWaitForBackends closes the pools and waits until their backends have left pg_stat_activity. A
// backend flushes its statistics (the deadlock count) as it exits, before it leaves pg_stat_activity: once
// every backend of the pools has gone, the count is complete.
func (e *env) closeAndWaitForBackends(pools []*pgxpool.Pool) {
	var pids []int32
	for _, pool := range pools {
		for _, c := range pool.AcquireAllIdle(e.ctx) {
			pids = append(pids, int32(c.Conn().PgConn().PID()))
			c.Release()
		}
		pool.Close()
	}
	eventually(e.t, 10*time.Second, "the workers' backends exited", func() bool {
		return e.count("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", pids) == 0
	})
}
