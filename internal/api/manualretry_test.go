package api_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/config"
)

// TestConcurrentAdminRetriesQueueOnce: admin retries of one dead delivery, released together while the
// worker runs: exactly one is queued, the others are 409 INVALID_STATE. The endpoint holds the retried
// attempt until every call has answered, so every call has read the delivery before the queued retry can
// be sent and dead again (a call that reads it dead again is a later retry, rightly queued). The case of a call that read the dead delivery
// and runs its statement after the first one's retry was sent is TestAdminRetryOfAVersionAlreadyResentIsRefused
// in internal/delivery.
func TestConcurrentAdminRetriesQueueOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground, func(c *config.Config) { c.ResendPerMinute = 1000 })
	gate := newGate()
	rc := newReceiver(t, func(string, int) int {
		gate.wait()
		return 400
	})
	t.Cleanup(gate.open)
	tid := e.newTenant("admin-retries")
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/dead"})
	id := e.publish(tid, "order.paid", map[string]any{}).Deliveries[0].ID
	for round := 1; round <= 3; round++ {
		e.waitState(tid, id, "failed")
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		gate.hold()
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
		gate.open()
		if codes[202] != 1 || codes[409] != 7 {
			t.Fatalf("round %d: answers %v, want one 202 and seven 409", round, codes)
		}
		e.waitState(tid, id, "failed")
		if n := len(rc.requests("/dead")); n != round+1 {
			t.Fatalf("round %d: the endpoint received the event %d times, want %d", round, n, round+1)
		}
	}
}

// gate holds an endpoint's answers while it is shut (hold) and lets them through once open. A test opens
// it in a cleanup registered after its receiver's, so that no answer is held past the test (the
// receiver's Close waits for its requests).
type gate struct {
	mu sync.Mutex
	ch chan struct{} // closed while open
}

func newGate() *gate {
	g := &gate{ch: make(chan struct{})}
	close(g.ch)
	return g
}

// hold shuts the gate: answers wait from now on.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
		g.ch = make(chan struct{})
	default:
	}
}

// open lets every held answer and every later one through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
	default:
		close(g.ch)
	}
}

// wait returns once the gate is open.
func (g *gate) wait() {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	<-ch
}

// TestRetryNowRefusedWhileCircuitOpen: with the subscription's circuit open, retry-now is 409 INVALID_STATE
// saying so and when the probe is due, for a tenant and an admin alike, and counts no manual retry.
func TestRetryNowRefusedWhileCircuitOpen(t *testing.T) {
	t.Parallel()
	// A database of its own: another test's server, with the default breaker, would send the delivery
	// again rather than hold it behind the open circuit.
	e := newEnv(t, withBackground, ownDatabase(t), func(c *config.Config) {
		c.BreakerThreshold = 1
		c.BreakerProbeInterval = time.Hour
		c.RetryMaxDelay = 2 * time.Hour // the probe interval is capped at it
	})
	rc := newReceiver(t, func(string, int) int { return 503 })
	tid := e.newTenant("retry-now-circuit")
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/down"})
	id := e.publish(tid, "order.paid", map[string]any{}).Deliveries[0].ID
	eventually(20*time.Second, 20*time.Millisecond, func() bool { return e.delivery(tid, id).TotalAttempts > 0 })
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
