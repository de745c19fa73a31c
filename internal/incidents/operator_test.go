package incidents_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The operator notifications' subscription is never disabled: a 410 from the operator's endpoint fails that
// delivery only, and auto-disable passes it by (while a customer's subscription failing as long is
// disabled). One disabled by an older version is enabled again at start-up, with a warning in the log.
// Its state, last error and dead deliveries are what OperatorStatus (the /admin card) shows.
func TestOperatorSubscriptionIsNeverDisabled(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool := ownPool(t, 4)
	policy := delivery.DefaultRetryPolicy
	subs := subscriptions.NewService(pool, time.Now, true)
	pub := publish.NewPublisher(pool, policy, time.Now)
	var status atomic.Int32
	status.Store(http.StatusGone)
	opSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer opSrv.Close()
	secret := delivery.NewSecret()
	operator, err := incidents.EnsureOperator(ctx, pool, subs, pub, opSrv.URL+"/ops", secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	inc := incidents.New(pool, incidents.Options{Log: slog.New(slog.DiscardHandler), Operator: operator})
	w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), policy,
		delivery.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	opSub := func() subscriptions.Subscription {
		t.Helper()
		all, err := subs.List(ctx, operator.TenantID())
		if err != nil || len(all) != 1 {
			t.Fatalf("operator subscriptions: %v, %v", all, err)
		}
		return all[0]
	}

	// A 410: the delivery is dead, the subscription stays active.
	if err := operator.Notify(ctx, incidents.EventFailing, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if n, err := w.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("run: %d, %v", n, err)
	}
	if s := opSub(); s.State != subscriptions.Active {
		t.Fatalf("after a 410 the operator subscription is %s (%s), want active", s.State, s.DisabledReason)
	}
	var dead int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1 AND state = 'failed'", operator.TenantID()).Scan(&dead); err != nil || dead != 1 {
		t.Fatalf("the 410's delivery: %d failed, %v; want 1", dead, err)
	}
	st, err := inc.OperatorStatus(ctx)
	if err != nil || st == nil || st.State != subscriptions.Active || st.Dead != 1 || st.LastError != "HTTP 410" || st.LastErrorAt == nil {
		t.Fatalf("operator status %+v, %v; want active, 1 dead, last error HTTP 410", st, err)
	}

	autoDisableSparesTheOperator(ctx, t, pool, subs, opSub)
	startUpEnablesTheOperator(ctx, t, pool, subs, pub, opSrv.URL+"/ops", secret, opSub)

	// Off without HOOKLINE_OPERATOR_WEBHOOK_URL.
	if st, err := incidents.New(pool, incidents.Options{}).OperatorStatus(ctx); st != nil || err != nil {
		t.Fatalf("operator status without an operator: %+v, %v", st, err)
	}
}

// autoDisableSparesTheOperator: failing for two hours, an hour allowed, a customer's subscription is
// disabled and the operator's is not.
func autoDisableSparesTheOperator(ctx context.Context, t *testing.T, pool *pgxpool.Pool, subs *subscriptions.Service, opSub func() subscriptions.Subscription) {
	t.Helper()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "failing customer")
	if err != nil {
		t.Fatal(err)
	}
	url := "https://example.com/hook"
	cust, _, err := subs.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE subscriptions SET failing_since = now() - interval '2 hours' WHERE id = ANY($1)",
		[]any{cust.ID, opSub().ID}); err != nil {
		t.Fatal(err)
	}
	disabled, err := subs.DisableFailing(ctx, time.Hour)
	if err != nil || len(disabled) != 1 || disabled[0].ID != cust.ID {
		t.Fatalf("auto-disable disabled %+v, %v; want only the customer's subscription", disabled, err)
	}
	if s := opSub(); s.State != subscriptions.Active {
		t.Fatalf("after auto-disable the operator subscription is %s (%s), want active", s.State, s.DisabledReason)
	}
}

// startUpEnablesTheOperator: an operator subscription disabled by an older version is enabled again at
// the next start-up, which says so.
func startUpEnablesTheOperator(ctx context.Context, t *testing.T, pool *pgxpool.Pool, subs *subscriptions.Service, pub *publish.Publisher,
	url, secret string, opSub func() subscriptions.Subscription) {
	t.Helper()
	if _, err := pool.Exec(ctx, "UPDATE subscriptions SET state = 'disabled', disabled_reason = 'The endpoint answered 410 Gone' WHERE id = $1", opSub().ID); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	if _, err := incidents.EnsureOperator(ctx, pool, subs, pub, url, secret, slog.New(slog.NewTextHandler(&logged, nil))); err != nil {
		t.Fatal(err)
	}
	if s := opSub(); s.State != subscriptions.Active || s.DisabledReason != "" {
		t.Fatalf("after start-up the operator subscription is %s (%s), want active", s.State, s.DisabledReason)
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "enabled again") {
		t.Fatalf("start-up re-enabled the operator subscription without a warning: %q", logged.String())
	}
}

// Setting the operator notifications' subscription up happens at start, outside any request; it is a
// change like any other, recorded with the system as its actor (a change with no actor is refused).
func TestOperatorSetupIsRecordedAsTheSystem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := ownPool(t, 4)
	subs := subscriptions.NewService(pool, time.Now, true)
	pub := publish.NewPublisher(pool, delivery.DefaultRetryPolicy, time.Now)
	// A URL of its own, so the subscription is created or changed now whatever other tests set up.
	url := "http://127.0.0.1:9/ops-" + uuid.NewString()
	operator, err := incidents.EnsureOperator(ctx, pool, subs, pub, url, delivery.NewSecret(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("EnsureOperator outside a request: %v", err)
	}
	page, err := activity.NewLog(pool).List(ctx, operator.TenantID(), activity.Filter{Limit: 1})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("operator tenant's activity: %d entries (%v), want the setup's", len(page.Items), err)
	}
	e := page.Items[0]
	if (e.Action != activity.SubscriptionCreated && e.Action != activity.SubscriptionChanged) ||
		e.Actor.Kind != activity.ActorSystem || e.Actor.Name != "operator notifications setup" {
		t.Errorf("newest entry %s by %+v, want the subscription's creation or change by the system's operator notifications setup", e.Action, e.Actor)
	}
}
