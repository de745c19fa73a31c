package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestRetryNowOffWhileCircuitOpen: a retrying delivery held by its subscription's open circuit: the page
// disables Retry now with the reason (the API refuses it: nothing but the probe is sent), and a POST
// anyway says why it was not retried, counts nothing and sends nothing.
func TestRetryNowOffWhileCircuitOpen(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("retry-now-circuit")
	sub, id := e.retrying(tn, "retry-now-circuit")
	// Its circuit opens (as HOOKLINE_BREAKER_THRESHOLD failures in a row would; the package's servers share
	// one database and one breaker configuration), its probe an hour away.
	if _, err := e.srv.Pool.Exec(t.Context(), `UPDATE subscriptions SET circuit_state = 'open', circuit_opened_at = now(),
		circuit_probe_at = now() + interval '1 hour', circuit_probe_ms = 3600000 WHERE id = $1`, sub); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)

	p := c.get("/deliveries/" + id.String())
	if !hasAttr(one(t, p.Doc, "retry-now"), "disabled") {
		t.Error("Retry now is enabled while the circuit is open")
	}
	if got := text(one(t, p.Doc, "action-reason")); !strings.Contains(got, "circuit is open") || !strings.Contains(got, "until its probe (in ") {
		t.Errorf("Retry now's reason %q does not say the circuit is open and when the probe is due", got)
	}
	if len(byTestID(p.Doc, "retry-now-note")) != 0 {
		t.Error("the page still says what Retry now would do")
	}

	before, err := e.srv.Deliveries.Get(t.Context(), tn.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	p = c.post("/deliveries/"+id.String()+"/retry-now", nil)
	if p.URL.Path != "/deliveries/"+id.String() || p.Status != http.StatusOK {
		t.Fatalf("retry now: %s", p)
	}
	if got := text(one(t, p.Doc, "flash")); !strings.HasPrefix(got, "Not retried: the subscription's circuit is open") || !strings.Contains(got, "probe, due at ") {
		t.Errorf("flash %q, want the refusal with the reason", got)
	}
	d, err := e.srv.Deliveries.Get(t.Context(), tn.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.ManualRetries != 0 || d.TotalAttempts != before.TotalAttempts {
		t.Errorf("a refused retry now counted or sent: manual retries %d, attempts %d", d.ManualRetries, d.TotalAttempts)
	}
}
