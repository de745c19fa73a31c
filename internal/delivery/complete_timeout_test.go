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
// lease, and the rescuer puts them back in the queue when it runs out.
func TestCompletionStuckOnALockIsGivenUpNotRetriedForever(t *testing.T) {
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
	if err := holder.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}

	for _, id := range ids {
		d := e.wantState(id, delivery.InFlight, 0)
		if d.LeaseID == nil || *d.LeaseID != leaseID {
			t.Errorf("delivery %s lost its lease", id)
		}
	}
	rescued, err := e.q.RescueExpiredLeases(e.ctx, e.clock.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rescued) != 2 {
		t.Fatalf("the rescuer took back %d deliveries, want 2", len(rescued))
	}
	for _, id := range ids {
		e.wantState(id, delivery.Pending, 0)
	}
}
