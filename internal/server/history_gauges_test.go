package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/subscriptions"
)

// movingClock is a clock the test moves.
type movingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movingClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *movingClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// uuidV7At is a UUIDv7 of time t, as uuid.NewV7 would have made it then.
func uuidV7At(t time.Time) uuid.UUID {
	id := uuid.New()
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = 0x70 | id[6]&0x0f
	return id
}

// The history gauges on /metrics: every table's partitions and their size, how far ahead they are made,
// the interval, the oldest finished delivery's age and how long past its retention a delivery is kept.
// The ages follow the clock at each scrape.
func TestHistoryGauges(t *testing.T) {
	t.Parallel()
	cfg := servertest.Config(t, ownDatabase(t)) // the oldest delivery is the whole database's
	cfg.RetentionDead = 4 * 24 * time.Hour      // (no retention sweep runs here: the dead delivery stays)
	c := &movingClock{now: time.Now()}
	srv, base := servertest.Start(t, cfg, nil, server.Options{Now: c.Now})
	ctx := activity.System(context.Background(), "test setup")
	tn, err := srv.Tenants.CreateTenant(ctx, "history gauges")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:1/hook"
	sub, _, err := srv.Subscriptions.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	made := c.Now().Add(-10 * 24 * time.Hour).Truncate(time.Millisecond) // in the legacy partition
	id := uuidV7At(made)
	if _, err := srv.Pool.Exec(ctx, `INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, state,
		give_up_at, created_at, last_attempt_at, dead_at) VALUES ($1, $2, $1, $3, 'a.b', 'failed', $4, $4, $4, $4)`,
		id, tn.ID, sub.ID, made); err != nil {
		t.Fatal(err)
	}
	parts, err := srv.History.List(ctx)
	if err != nil {
		t.Fatal(err)
	}

	_, body := get(t, base+"/metrics")
	for _, table := range history.Tables {
		n := 0
		for _, p := range parts {
			if p.Table == table {
				n++
			}
		}
		if got := gauge(t, body, fmt.Sprintf("webhook_history_partitions{table=%q}", table)); got != float64(n) || n < history.Ahead+1 {
			t.Errorf("%s: %v partitions, want %d", table, got, n)
		}
		if got := gauge(t, body, fmt.Sprintf("webhook_history_partition_bytes{table=%q}", table)); got <= 0 {
			t.Errorf("%s: %v bytes", table, got)
		}
	}
	ahead := history.MadeUntil(parts).Sub(c.Now())
	want := map[string]float64{
		"webhook_history_partitions_ahead_seconds":   ahead.Seconds(),
		"webhook_history_partition_interval_seconds": 86400,
		"webhook_history_oldest_row_age_seconds":     (10 * 24 * time.Hour).Seconds(),
		"webhook_history_retention_overdue_seconds":  (6 * 24 * time.Hour).Seconds(), // died 10 days ago, kept 4
	}
	checkGauges(t, body, want)

	// Two days later (the read is cached, the ages are not): two days less ahead, two days older.
	c.Add(48 * time.Hour)
	_, body = get(t, base+"/metrics")
	want["webhook_history_partitions_ahead_seconds"] -= 48 * 3600
	want["webhook_history_oldest_row_age_seconds"] += 48 * 3600
	want["webhook_history_retention_overdue_seconds"] += 48 * 3600
	checkGauges(t, body, want)
}

func checkGauges(t *testing.T, body string, want map[string]float64) {
	t.Helper()
	for name, w := range want {
		if got := gauge(t, body, name); math.Abs(got-w) > 0.01 {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
}
