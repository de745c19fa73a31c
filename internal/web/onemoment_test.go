package web_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/web"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestHealthCardAfterAReplay: deliveries created days ago, dead, then recovered and delivered now. The
// health card's "delivered" and its attempts count the same thing, the attempts of the range that
// succeeded: "4 delivered" beside "4 attempts · 100 %". It said "0 delivered" (it counted the deliveries
// created in the range) beside "4 attempts · 100 %".
func TestHealthCardAfterAReplay(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	ctx := setupCtx()
	tn := e.newTenant("replayed health")
	sub := e.newSubscription(tn, "/good/replayed", "replayed", "order.paid")
	if _, err := e.srv.Subscriptions.Pause(ctx, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	ids := make([]uuid.UUID, 4)
	for i := range ids {
		ids[i] = e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": i})
	}
	// Dead for days: created three days ago, out of attempts an hour later (their attempts long gone).
	if _, err := e.srv.Pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'failed', dead_reason = 'max_attempts',
		created_at = now() - interval '3 days', dead_at = now() - interval '71 hours', give_up_at = now() - interval '71 hours'
		WHERE subscription_id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.Subscriptions.Resume(ctx, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.Replays.Recover(ctx, tn.ID, sub.ID, time.Now().Add(-4*24*time.Hour), false, "test"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		e.waitState(tn, id, delivery.Delivered)
	}
	c := e.client()
	c.login(tn.Email)
	p := c.get("/subscriptions/" + sub.ID.String())
	card := one(t, p.Doc, "health-card")
	if got := text(one(t, card, "attempts")); got != "4" {
		t.Fatalf("attempts %q, want 4", got)
	}
	if got := text(one(t, card, "success-rate")); got != "100 %" {
		t.Errorf("success rate %q, want 100 %%", got)
	}
	if got := attr(one(t, card, "delivered-count"), "data-count"); got != "4" {
		t.Errorf("the card says %s delivered beside 4 attempts at 100 %%", got)
	}
	if got := attr(one(t, card, "dead-count"), "data-count"); got != "0" {
		t.Errorf("the card says %s dead after all were delivered", got)
	}
	if got := text(one(t, card, "health-brief")); got != "4 delivered · 100 % of attempts succeeded" {
		t.Errorf("folded health says %q", got)
	}
}

// TestPageNumbersAreOfOneMoment: a delivery moves (pending → delivered) after a subscription page has read
// its rows and before it counts: its rows, "N matching", the state tabs, the health card's pending count and
// the paused note's "N waiting" still agree, all read in one snapshot. Read one by one (as they were, in
// parallel), the rows listed 3 pending under "2 matching deliveries" beside "3 waiting".
func TestPageNumbersAreOfOneMoment(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	ctx := setupCtx()
	tn := e.newTenant("one moment")
	sub := e.newSubscription(tn, "/good/one-moment", "one moment", "order.paid")
	if _, err := e.srv.Subscriptions.Pause(ctx, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	ids := make([]uuid.UUID, 3)
	for i := range ids {
		ids[i] = e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": i})
	}

	// The same dashboard over a deliveries service whose pool runs moved() once, after the page's rows are
	// read (ListDeliveries finished) and before its first tab count starts.
	between := &betweenListAndCount{listed: make(chan struct{})}
	between.moved = func() {
		if _, err := e.srv.Pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'delivered', total_attempts = 1,
			last_attempt_at = now() WHERE id = $1`, ids[0]); err != nil {
			t.Error(err)
		}
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect = pgxuuid.AfterConnect
	cfg.ConnConfig.Tracer = between
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	dels := deliveries.NewService(pool, e.srv.Policy, time.Now, e.srv.Config.MaxManualRetries, e.srv.Config.ResendPerMinute)
	h := web.New(web.Options{Sessions: e.srv.Sessions, LoginThrottle: e.srv.LoginThrottle, Activity: e.srv.Activity, Tenants: e.srv.Tenants, Subscriptions: e.srv.Subscriptions, Deliveries: dels,
		Replays: e.srv.Replays, Incidents: e.srv.Incidents, Portal: e.srv.Portal, Catalogue: e.srv.Catalogue,
		Publisher: e.srv.Publisher, Policy: e.srv.Policy, MaxManualRetries: e.srv.Config.MaxManualRetries})
	ts := httptest.NewServer(h.Routes())
	t.Cleanup(ts.Close)
	te := *e
	te.base = ts.URL
	c := te.client()
	c.login(tn.Email)
	between.armed.Store(true)
	p := c.get("/subscriptions/" + sub.ID.String() + "?state=pending")
	if !between.fired.Load() {
		t.Fatal("the delivery was not moved between the page's reads")
	}
	rows := len(byTestID(p.Doc, "delivery-row"))
	tabs, _ := tabCounts(t, p)
	total := text(one(t, p.Doc, "total"))
	card := attr(one(t, p.Doc, "pending-count"), "data-count")
	waiting := text(one(t, p.Doc, "paused-waiting"))
	if rows != 3 || tabs["pending"] != "3" || !strings.HasPrefix(total, "3 matching") || card != "3" ||
		!strings.Contains(waiting, "3 waiting") || tabs["delivered"] != "0" {
		t.Errorf("one page, several moments: %d rows, %q, Pending tab %s, Delivered tab %s, card %s pending, %q; want 3 of each and 0 delivered",
			rows, total, tabs["pending"], tabs["delivered"], card, waiting)
	}
	// The next look sees the move everywhere.
	between.armed.Store(false)
	p = c.get("/subscriptions/" + sub.ID.String() + "?state=pending")
	if tabs, _ := tabCounts(t, p); len(byTestID(p.Doc, "delivery-row")) != 2 || tabs["pending"] != "2" || tabs["delivered"] != "1" {
		t.Errorf("after the move: %d rows, tabs %v", len(byTestID(p.Doc, "delivery-row")), tabs)
	}
}

// betweenListAndCount is a pgx tracer that, once armed, runs moved when the first CountDeliveries starts,
// after a ListDeliveries has finished (waiting for it when the two run side by side).
type betweenListAndCount struct {
	armed, fired atomic.Bool
	once         sync.Once
	listedOnce   sync.Once
	listed       chan struct{}
	moved        func()
}

type sqlKey struct{}

func (b *betweenListAndCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if b.armed.Load() && strings.Contains(d.SQL, "-- name: CountDeliveries :") {
		b.once.Do(func() {
			select {
			case <-b.listed:
			case <-time.After(10 * time.Second):
			}
			b.moved()
			b.fired.Store(true)
		})
	}
	return context.WithValue(ctx, sqlKey{}, d.SQL)
}

func (b *betweenListAndCount) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if sql, _ := ctx.Value(sqlKey{}).(string); b.armed.Load() && strings.Contains(sql, "-- name: ListDeliveries :") {
		b.listedOnce.Do(func() { close(b.listed) })
	}
}
