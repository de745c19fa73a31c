package delivery_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// logBuffer collects a logger's lines; safe for the engine's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// A completion that runs past its try while the database answers (here it waits on row locks another
// transaction holds) is a slow statement, not an outage: the completer tries it a bounded number of times,
// then gives the batch up, says so, and goes on. Nothing is lost: the rows stay in flight under their
// lease, and the rescuer puts them back in the queue when it runs out (unless a cut-off try, still
// running in the server, records them once the lock goes: guarded by the lease, that is fine too).
func TestCompletionStuckOnALockIsGivenUpNotRetriedForever(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	for range 2 {
		e.publishOne(`{"n":1}`)
	}
	var logs logBuffer
	w := e.worker(delivery.WorkerOptions{Logger: logs.logger()}, nil)
	rows, leaseID, err := w.Claim(e.ctx, 10)
	if err != nil || len(rows) != 2 {
		t.Fatalf("claimed %d rows, err %v; want 2", len(rows), err)
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}

	holder, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(e.ctx)
	if _, err := holder.Exec(e.ctx, "SELECT 1 FROM webhook_deliveries WHERE id = ANY($1) FOR UPDATE", ids); err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		w.WriteStatus(e.ctx, rows, leaseID, 200, 200*time.Millisecond)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the completer still retries a completion stuck on a lock after 20 s (tries of 200 ms)\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "giving the batch up") {
		t.Errorf("giving the batch up was not logged:\n%s", logs.String())
	}
	for _, id := range ids {
		d := e.wantState(id, delivery.InFlight, 0)
		if d.LeaseID == nil || *d.LeaseID != leaseID {
			t.Errorf("delivery %s lost its lease", id)
		}
	}

	// The lock goes. The tries cut off by the client may still run in the server and land late, guarded by
	// the lease; whatever they did, the rescuer takes back the rest: every delivery is recorded or queued.
	if err := holder.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the cut-off completions to end in the server", func() bool {
		return e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND state = 'active' AND query LIKE '%name: CompleteAttempts %' AND pid <> pg_backend_pid()`) == 0
	})
	if _, err := e.q.RescueExpiredLeases(e.ctx, e.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if d := e.delivery(id); d.State != string(delivery.Delivered) && d.State != string(delivery.Pending) {
			t.Errorf("delivery %s is %s after the rescue, want delivered (a late write) or pending (rescued)", id, d.State)
		}
	}
}
