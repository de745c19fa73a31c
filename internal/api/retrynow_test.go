package api_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRetryNow: POST .../retry-now makes a retrying delivery's next attempt now; the endpoint, fixed
// meanwhile, gets it without waiting out the backoff.
func TestRetryNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	var fixed atomic.Bool
	rc := newReceiver(t, func(string, int) int {
		if fixed.Load() {
			return 200
		}
		return 503
	})
	tid := e.newTenant("retry-now")
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/fixable"})
	id := e.publish(tid, "order.paid", map[string]any{}).Deliveries[0].ID
	// Catch it waiting for its retry and make the wait an hour, as a long backoff would.
	// A busy machine may catch it after its second failure rather than its first: what counts is that
	// Retry now adds exactly one attempt to those it had when caught.
	var caught int
	var err error
	if !eventually(30*time.Second, 2*time.Millisecond, func() bool {
		err = e.srv.Pool.QueryRow(context.Background(), `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'
			WHERE id = $1 AND state = 'pending' AND total_attempts > 0 RETURNING total_attempts`, id).Scan(&caught)
		return err == nil || !errors.Is(err, pgx.ErrNoRows)
	}) || err != nil {
		t.Fatalf("never caught retrying: %v", err)
	}
	fixed.Store(true)
	type answer struct {
		ID            string     `json:"id"`
		State         string     `json:"state"`
		ManualRetries int        `json:"manual_retries"`
		NextAttemptAt *time.Time `json:"next_attempt_at"`
	}
	r := must[answer](e, 202, "POST", "/tenants/"+tid+"/deliveries/"+id+"/retry-now", adminToken, nil)
	if r.ID != id || r.State != "pending" || r.NextAttemptAt == nil || time.Until(*r.NextAttemptAt) > time.Second {
		t.Fatalf("retry now: %+v", r)
	}
	if a := e.lastActivity(tid, "delivery.retried_now"); a.Object.ID != id || a.Actor.Kind != "admin" {
		t.Errorf("activity entry %+v, want the delivery retried now by the admin", a)
	}
	d := e.waitState(tid, id, "delivered")
	if d.TotalAttempts != caught+1 {
		t.Errorf("total attempts %d, want %d (the %d it had when caught, and the one Retry now made)", d.TotalAttempts, caught+1, caught)
	}
	// Now delivered: /retry-now is refused, /retry (a resend) is the call.
	wantError(t, "retry now, delivered", e.call("POST", "/tenants/"+tid+"/deliveries/"+id+"/retry-now", adminToken, nil), "INVALID_STATE")
}
