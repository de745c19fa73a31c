package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/subscriptions"
)

// gauge reads one unlabelled gauge from the Prometheus text.
func gauge(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics lacks %s", name)
	return 0
}

// The queue gauges read the database: a dead delivery, a 410 that disables its subscription, and a due
// delivery waiting behind a paused subscription (counted as pending, but not as lag: it waits on purpose).
func TestQueueGauges(t *testing.T) {
	t.Parallel()
	cfg := servertest.Config(t, ownDatabase(t)) // the gauges count the whole database
	cfg.RetryMaxAttempts = 1
	srv, base := servertest.StartWithBackground(t, cfg, nil, server.Options{})
	ctx := activity.System(context.Background(), "test setup")
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer gone.Close()
	tn, err := srv.Tenants.CreateTenant(ctx, "gauges")
	if err != nil {
		t.Fatal(err)
	}
	url := gone.URL + "/hook"
	goneSub, _, err := srv.Subscriptions.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	paused, _, err := srv.Subscriptions.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Subscriptions.Pause(ctx, tn.ID, paused.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Publisher.Publish(ctx, publish.PublishInput{TenantID: tn.ID, EventType: "a.b", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() string { return "the 410 did not disable the subscription" }, func() bool {
		s, err := srv.Subscriptions.Get(ctx, tn.ID, goneSub.ID)
		if err != nil {
			t.Fatal(err)
		}
		return s.State == subscriptions.Disabled
	})
	_, body := get(t, base+"/metrics")
	for name, want := range map[string]float64{
		"webhook_deliveries_dead": 1, "webhook_deliveries_pending": 1, "webhook_subscriptions_disabled": 1,
		"webhook_subscriptions_circuit_open": 0, "webhook_queue_lag_seconds": 0,
	} {
		if got := gauge(t, body, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
