package subscriptions_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "subscriptions", func(u string) { dbURL = u }) }

// ownDatabase is the URL of a database of the test's own (a copy of the migrated template), dropped when
// the test ends: for a test that reads or changes more than its own tenant's rows (a worker claims any
// tenant's deliveries, retention sweeps every tenant's minutes), which the package's parallel tests
// would otherwise disturb.
func ownDatabase(t *testing.T, prefix string) string {
	t.Helper()
	u, drop, err := testdb.Create(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return u
}

// receiverAnswering answers the given statuses in order (then 200).
func receiverAnswering(t *testing.T, statuses ...int) string {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		code := 200
		if n < len(statuses) {
			code = statuses[n]
		}
		n++
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Health of several subscriptions at once matches each one's own attempts: rate, run of failures, last
// success and failure, and the hourly buckets; a subscription without attempts has no rate.
func TestHealthOfSeveralSubscriptions(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	// A database of its own: the worker claims every due delivery, whichever test published it.
	pool, err := server.Connect(ctx, ownDatabase(t, "subs_health"), 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "health")
	if err != nil {
		t.Fatal(err)
	}
	svc := subscriptions.NewService(pool, clock, true)
	create := func(url string, types ...string) subscriptions.Subscription {
		s, _, err := svc.Create(ctx, tn.ID, subscriptions.Input{URL: &url, EventTypes: &types})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := create(receiverAnswering(t, 200, 500, 500), "x")
	b := create(receiverAnswering(t, 500, 200, 200), "x")
	quiet := create(receiverAnswering(t), "never.sent")

	policy := delivery.RetryPolicy{Base: time.Hour, MaxDelay: time.Hour, MaxAttempts: 1, Window: time.Hour}
	pub := publish.NewPublisher(pool, policy, clock)
	w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), policy,
		delivery.WorkerOptions{Now: clock, Logger: slog.New(slog.DiscardHandler)})
	for i := range 3 { // one event at a time, so each receiver sees them in order
		if _, err := pub.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "x", Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if n, err := w.RunOnce(ctx); err != nil || n != 2 {
			t.Fatalf("round %d: attempted %d, %v", i, n, err)
		}
		now = now.Add(time.Second)
	}

	all, err := svc.HealthOf(ctx, tn.ID, []subscriptions.Subscription{a, b, quiet})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, h subscriptions.Health, attempts, successes, run int) {
		t.Helper()
		if h.Attempts != attempts || h.Successes != successes || h.ConsecutiveFailures != run {
			t.Errorf("%s: attempts %d successes %d run %d, want %d %d %d", name, h.Attempts, h.Successes, h.ConsecutiveFailures, attempts, successes, run)
		}
		if attempts > 0 && (h.SuccessRate == nil || *h.SuccessRate != float64(successes)/float64(attempts)) {
			t.Errorf("%s: success rate %v", name, h.SuccessRate)
		}
		if h.State != subscriptions.Active {
			t.Errorf("%s: state %q", name, h.State)
		}
	}
	check("a", all[a.ID], 3, 1, 2)
	check("b", all[b.ID], 3, 2, 0)
	check("quiet", all[quiet.ID], 0, 0, 0)
	if all[quiet.ID].SuccessRate != nil || all[quiet.ID].LastSuccessAt != nil {
		t.Errorf("a subscription without attempts has health %+v", all[quiet.ID])
	}
	if la, lb := all[a.ID].LastSuccessAt, all[b.ID].LastFailureAt; la == nil || lb == nil || !lb.Equal(*la) {
		t.Errorf("a's only success and b's only failure were in the same round: %v, %v", la, lb)
	}
	one, err := svc.Health(ctx, tn.ID, a.ID)
	if err != nil || one.Attempts != 3 || one.ConsecutiveFailures != 2 {
		t.Errorf("single Health of a: %+v, %v", one, err)
	}

	checkHourly(t, svc, tn.ID, map[uuid.UUID][2]int{a.ID: {1, 2}, b.ID: {2, 1}, quiet.ID: {0, 0}})
}

// checkHourly checks each subscription's hourly buckets of the last day: at least 24, holding want's
// successes and failures in all.
func checkHourly(t *testing.T, svc *subscriptions.Service, tenant uuid.UUID, want map[uuid.UUID][2]int) {
	t.Helper()
	ctx := context.Background()
	ids := slices.Collect(maps.Keys(want))
	hours, err := svc.HourlyOf(ctx, tenant, ids)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(bs []subscriptions.HourBucket) (s, f int) {
		for _, x := range bs {
			s, f = s+x.Successes, f+x.Failures
		}
		return
	}
	for id, w := range want {
		if s, f := sum(hours[id]); s != w[0] || f != w[1] || len(hours[id]) < 24 {
			t.Errorf("hourly %s: %d successes %d failures in %d buckets, want %d %d in 24+", id, s, f, len(hours[id]), w[0], w[1])
		}
	}
}
