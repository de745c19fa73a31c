package polling_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "polling", func(u string) { dbURL = u }) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

func TestCursorRoundTrip(t *testing.T) {
	sub, other := uuid.New(), uuid.New()
	p := polling.Position{Xid: 1234567, ID: uuid.New()}
	c := polling.EncodeCursor(sub, p)
	if got, err := polling.DecodeCursor(sub, c); err != nil || got != p {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "x", c + "A", c[:len(c)-1], "AQ" + c[2:]} {
		if _, err := polling.DecodeCursor(sub, bad); err == nil {
			t.Errorf("cursor %q decoded", bad)
		}
	}
	if _, err := polling.DecodeCursor(other, c); err == nil {
		t.Error("another subscription's cursor decoded")
	}
}

// TestUnpulledDeliveriesExpireAndRaiseIncidents: a polling subscription nobody pulls is failing from its
// oldest waiting delivery; after HOOKLINE_INCIDENT_AFTER an incident opens; a commit ends it; deliveries
// not committed by their give_up_at expire (deadline), on the injected clock.
func TestUnpulledDeliveriesExpireAndRaiseIncidents(t *testing.T) {
	ctx := activity.System(context.Background(), "test")
	pool := ownPool(t)
	clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
	t0 := clk.Now()
	policy := delivery.RetryPolicy{Base: time.Minute, MaxDelay: time.Hour, MaxAttempts: 30, Window: 3 * time.Hour}
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "polling upkeep")
	if err != nil {
		t.Fatal(err)
	}
	kind := subscriptions.Polling
	sub, _, err := subscriptions.NewService(pool, clk.Now, true).Create(ctx, tn.ID, subscriptions.Input{Type: &kind})
	if err != nil {
		t.Fatal(err)
	}
	pub := publish.NewPublisher(pool, policy, clk.Now)
	var deliveryIDs []uuid.UUID
	for range 2 {
		r, err := pub.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "order.created", Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		deliveryIDs = append(deliveryIDs, uuid.MustParse(r.Deliveries[0].ID))
	}
	svc := polling.NewService(pool, clk.Now)
	inc := incidents.New(pool, incidents.Options{After: time.Hour, PublicURL: "https://hooks.example.com", Now: clk.Now,
		Log: slog.New(slog.DiscardHandler)})
	step := func(at time.Duration) {
		t.Helper()
		clk.Set(t0.Add(at))
		if _, err := svc.Upkeep(ctx); err != nil {
			t.Fatal(err)
		}
		if err := inc.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	open := func() []incidents.Incident {
		t.Helper()
		o, err := inc.OpenOf(ctx, tn.ID)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	state := func(id uuid.UUID) (st, reason string) {
		t.Helper()
		var r *string
		if err := pool.QueryRow(ctx, "SELECT state, dead_reason FROM webhook_deliveries WHERE id = $1", id).Scan(&st, &r); err != nil {
			t.Fatal(err)
		}
		if r != nil {
			reason = *r
		}
		return st, reason
	}

	step(time.Minute)
	if o := open(); len(o) != 0 {
		t.Fatalf("an incident after a minute: %+v", o)
	}
	step(59 * time.Minute)
	if o := open(); len(o) != 0 {
		t.Fatalf("an incident after 59 minutes (after is 1 h): %+v", o)
	}
	step(61 * time.Minute)
	if o := open(); len(o) != 1 || o[0].SubscriptionID != sub.ID || !o[0].FailingSince.Equal(t0) || o[0].Waiting != 2 {
		t.Fatalf("nobody pulled for 61 minutes: open incidents %+v, want one failing since %s with 2 waiting", o, t0)
	}

	// The consumer pulls one and commits it: the incident ends.
	clk.Set(t0.Add(90 * time.Minute))
	var page polling.Page
	for end := time.Now().Add(10 * time.Second); len(page.Data) == 0 && time.Now().Before(end); {
		if page, err = svc.Poll(ctx, tn.ID, sub.ID, "laptop", 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(page.Data) != 1 || page.Data[0].DeliveryID != deliveryIDs[0] {
		t.Fatalf("poll: %+v", page)
	}
	if err := svc.Commit(ctx, tn.ID, sub.ID, "laptop", page.Cursor); err != nil {
		t.Fatal(err)
	}
	step(91 * time.Minute)
	if o := open(); len(o) != 0 {
		t.Fatalf("a commit must end the incident: %+v", o)
	}

	// The other one is not committed within its retry window (3 h): it expires, as any delivery would.
	step(3*time.Hour - time.Minute)
	if st, _ := state(deliveryIDs[1]); st != "pending" {
		t.Fatalf("before its deadline the delivery is %s", st)
	}
	step(3*time.Hour + time.Minute)
	if st, reason := state(deliveryIDs[1]); st != "expired" || reason != delivery.ReasonDeadline {
		t.Fatalf("after its deadline: %s (%s), want expired (deadline)", st, reason)
	}
	if st, _ := state(deliveryIDs[0]); st != "delivered" {
		t.Fatalf("the committed delivery is %s", st)
	}
	// Nobody committed since 90 min while it waited: an incident opened again at 150 min.
	if o := open(); len(o) != 1 || !o[0].FailingSince.Equal(t0.Add(90*time.Minute)) {
		t.Fatalf("open incidents: %+v, want one failing since the last commit", o)
	}
	// An expired delivery is not answered any more.
	page, err = svc.Poll(ctx, tn.ID, sub.ID, "laptop", 10)
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("poll after the expiry: %+v, %v", page, err)
	}
}

func ownPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	own, drop, err := testdb.Create(context.Background(), "polling")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	pool, err := server.Connect(context.Background(), own, 8, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
