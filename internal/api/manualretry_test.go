package api_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
)

// TestConcurrentAdminRetriesQueueOnce: admin retries of one dead delivery, released together while the
// worker runs: exactly one is queued, the others are 409 INVALID_STATE. The endpoint answers after 300 ms,
// so every call has read the delivery before the queued retry can be sent and dead again (a call that
// reads it dead again is a later retry, rightly queued). The case of a call that read the dead delivery
// and runs its statement after the first one's retry was sent is TestAdminRetryOfAVersionAlreadyResentIsRefused
// in internal/delivery.
func TestConcurrentAdminRetriesQueueOnce(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.ResendPerMinute = 1000 })
	rc := newReceiver(t, func(string, int) int {
		time.Sleep(300 * time.Millisecond)
		return 400
	})
	tid := e.newTenant("admin-retries")
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/dead"})
	id := e.publish(tid, "order.paid", map[string]any{}).Deliveries[0].ID
	for round := 1; round <= 3; round++ {
		e.waitState(tid, id, "failed")
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				r := e.call("POST", "/tenants/"+tid+"/deliveries/"+id+"/retry", adminToken, nil)
				if r.status == 409 {
					wantError(t, "concurrent admin retry", r, "INVALID_STATE")
				}
				mu.Lock()
				codes[r.status]++
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		if codes[202] != 1 || codes[409] != 7 {
			t.Fatalf("round %d: answers %v, want one 202 and seven 409", round, codes)
		}
		e.waitState(tid, id, "failed")
		if n := len(rc.requests("/dead")); n != round+1 {
			t.Fatalf("round %d: the endpoint received the event %d times, want %d", round, n, round+1)
		}
	}
}

// TestRetryNowRefusedWhileCircuitOpen: with the subscription's circuit open, retry-now is 409 INVALID_STATE
// saying so and when the probe is due, for a tenant and an admin alike, and counts no manual retry.
func TestRetryNowRefusedWhileCircuitOpen(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.BreakerThreshold = 1
		c.BreakerProbeInterval = time.Hour
		c.RetryMaxDelay = 2 * time.Hour // the probe interval is capped at it
	})
	rc := newReceiver(t, func(string, int) int { return 503 })
	tid := e.newTenant("retry-now-circuit")
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/down"})
	id := e.publish(tid, "order.paid", map[string]any{}).Deliveries[0].ID
	deadline := time.Now().Add(20 * time.Second)
	for e.delivery(tid, id).TotalAttempts == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if d := e.delivery(tid, id); d.State != "pending" || d.TotalAttempts != 1 {
		t.Fatalf("fixture: want a retrying delivery held by the open circuit, got %+v", d)
	}
	tenantToken := e.newToken(tid, "deliveries:read", "deliveries:write")
	for _, token := range []string{tenantToken, adminToken} {
		r := e.call("POST", "/tenants/"+tid+"/deliveries/"+id+"/retry-now", token, nil)
		if r.status != 409 {
			t.Fatalf("retry now with the circuit open: %s, want 409", r)
		}
		ae := wantError(t, "retry now, circuit open", r, "INVALID_STATE")
		if !strings.Contains(ae.Error.Message, "circuit is open") || !strings.Contains(ae.Error.Message, "probe, due at ") {
			t.Errorf("refusal %q does not say the circuit is open and when the probe is due", ae.Error.Message)
		}
	}
	if d := e.delivery(tid, id); d.ManualRetries != 0 || d.TotalAttempts != 1 {
		t.Errorf("a refused retry now counted or sent: %+v", d)
	}
}
