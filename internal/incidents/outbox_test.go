package incidents_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// A step is claimed and told in one transaction: a crash between the claim and its emails and operator
// notification (an error, or the context cancelled between the statements) leaves nothing behind, neither
// the claim nor part of what it tells, and the next check tells the step exactly once.
func TestIncidentStepClaimAndTellCommitTogether(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	pool := ownPool(t, 4)
	now := time.Now().UTC().Truncate(time.Second)
	clk := func() time.Time { return now }
	ts := tenants.NewService(pool, "")
	subs := subscriptions.NewService(pool, clk, true)
	pub := publish.NewPublisher(pool, delivery.DefaultRetryPolicy, clk)
	opSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer opSrv.Close()
	operator, err := incidents.EnsureOperator(ctx, pool, subs, pub, opSrv.URL+"/ops", delivery.NewSecret(), nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, crash := range []string{"error", "cancel"} {
		t.Run(crash, func(t *testing.T) {
			tn, sub := failingSubscription(ctx, t, pool, ts, subs, crash, now)
			counts := func() (incidentsOpen, emails, operatorEvents int) {
				t.Helper()
				err := pool.QueryRow(ctx, `SELECT
					(SELECT count(*) FROM incidents WHERE subscription_id = $1),
					(SELECT count(*) FROM notifications WHERE tenant_id = $2 AND kind = $3),
					(SELECT count(*) FROM events WHERE tenant_id = $4 AND event_type = $5
					   AND convert_from(body, 'UTF8') LIKE '%' || $1::text || '%')`,
					sub.ID, tn.ID, incidents.KindOpened, operator.TenantID(), incidents.EventFailing).Scan(&incidentsOpen, &emails, &operatorEvents)
				if err != nil {
					t.Fatal(err)
				}
				return
			}

			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			inc := incidents.New(pool, incidents.Options{After: time.Hour, Now: clk, Log: slog.New(slog.DiscardHandler), Operator: operator})
			inc.SetAfterClaim(func(_ context.Context, kind string, _ int) error {
				if kind != incidents.KindOpened {
					return nil
				}
				if crash == "cancel" {
					cancel() // the statements after the claim fail
					return nil
				}
				return errors.New("crash after the claim")
			})
			if err := inc.Check(runCtx); err == nil {
				t.Fatal("the check succeeded through a crash after the claim")
			}
			if i, e, o := counts(); i != 0 || e != 0 || o != 0 {
				t.Fatalf("after a crash between claim and queueing: %d incidents, %d emails, %d operator events; want none", i, e, o)
			}

			inc.SetAfterClaim(nil)
			for range 2 {
				if err := inc.Check(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if i, e, o := counts(); i != 1 || e != 2 || o != 1 {
				t.Fatalf("after the next checks: %d incidents, %d emails, %d operator events; want 1, 2 (one per user), 1", i, e, o)
			}

			checkNotices(ctx, t, pool, inc, clk, tn.ID, sub.ID)
		})
	}
}

// failingSubscription makes a tenant with two dashboard users and a subscription failing for two hours.
func failingSubscription(ctx context.Context, t *testing.T, pool *pgxpool.Pool, ts *tenants.Service, subs *subscriptions.Service,
	crash string, now time.Time) (tenants.Tenant, subscriptions.Subscription) {
	t.Helper()
	tn, err := ts.CreateTenant(ctx, "outbox "+crash)
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"a-" + crash + "@example.com", "b-" + crash + "@example.com"} {
		if _, err := ts.CreateUser(ctx, tn.ID, email, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
	}
	url := "https://example.com/" + crash
	sub, _, err := subs.Create(ctx, tn.ID, subscriptions.Input{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE subscriptions SET failing_since = $2 WHERE id = $1", sub.ID, now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	return tn, sub
}

// checkNotices checks what the opened step sent, as the pages read it: two emails queued, the operator's
// notification pending until its delivery is made, then delivered.
func checkNotices(ctx context.Context, t *testing.T, pool *pgxpool.Pool, inc *incidents.Service, clk func() time.Time, tenantID, subID uuid.UUID) {
	t.Helper()
	notice := func() incidents.StepNotice {
		t.Helper()
		list, err := inc.OfSubscription(ctx, tenantID, subID, 10)
		if err != nil || len(list) != 1 {
			t.Fatalf("incidents: %+v, %v", list, err)
		}
		return list[0].Notices[incidents.KindOpened]
	}
	if n := notice(); n.Pending != 2 || n.Sent != 0 || n.SetAside != 0 || n.Operator != "pending" {
		t.Fatalf("opened step before anything was sent: %+v", n)
	}
	w := delivery.NewWorker(pool, delivery.NewSender(delivery.SenderOptions{AllowPrivate: true}), delivery.DefaultRetryPolicy,
		delivery.WorkerOptions{Now: clk, Logger: slog.New(slog.DiscardHandler)})
	for {
		n, err := w.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if n := notice(); n.Operator != "delivered" || n.OperatorAt == nil {
		t.Fatalf("opened step after the operator's delivery: %+v", n)
	}
}
