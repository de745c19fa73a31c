package web_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/delivery"
)

// An open circuit and a run of only failures are told on the home page and the subscription page, in
// words, with since when and when the next probe goes; a healthy subscription shows neither.
func TestCircuitStateShown(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("circuit")
	broken := e.newSubscription(tn, "/flaky/circuit", "Broken endpoint")
	healthy := e.newSubscription(tn, "/ok/circuit", "Healthy endpoint")
	opened := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE subscriptions SET circuit_state = 'open', circuit_opened_at = $2,
		circuit_probe_at = $3, circuit_probe_ms = 60000, failing_since = $4 WHERE id = $1`,
		broken.ID, opened, opened.Add(time.Hour), opened.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	home := c.login(tn.Email)
	for _, card := range byTestID(home.Doc, "subscription") {
		notices := byTestID(card, "circuit")
		switch attr(card, "data-id") {
		case broken.ID.String():
			if len(notices) != 1 || !strings.Contains(text(notices[0]), "Circuit open since "+opened.Format("2006-01-02 15:04:05")) ||
				!strings.Contains(text(notices[0]), "One delivery will be tried at") {
				t.Errorf("home, broken endpoint: circuit notice %d, %q", len(notices), text(card))
			}
			if len(byTestID(card, "failing-since")) != 1 {
				t.Error("home, broken endpoint: no failing-since line")
			}
		case healthy.ID.String():
			if len(notices) != 0 || len(byTestID(card, "failing-since")) != 0 {
				t.Errorf("home, healthy endpoint shows a circuit notice: %q", text(card))
			}
		}
	}
	page := c.get("/subscriptions/" + broken.ID.String())
	if got := text(one(t, page.Doc, "circuit")); !strings.Contains(got, "due deliveries wait instead of being sent") {
		t.Errorf("subscription page circuit notice %q", got)
	}
}

// The failing line says "all N attempts" only when several attempts failed, and a single failure as such.
func TestFailingSinceCountsTheAttempts(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("failing-count")
	bad := e.newSubscription(tn, "/bad/failing-count", "Failing endpoint")
	c := e.client()
	c.login(tn.Email)
	line := func(path string) string {
		t.Helper()
		return text(one(t, c.get(path).Doc, "failing-since"))
	}
	e.waitState(tn, e.publishTo(tn, bad.ID, "order.paid", map[string]any{"n": 1}), delivery.Failed)
	for _, path := range []string{"/", "/subscriptions/" + bad.ID.String()} {
		if got := line(path); !strings.HasPrefix(got, "The last attempt failed at ") || strings.Contains(got, "All") {
			t.Errorf("%s after one failure: %q", path, got)
		}
	}
	for i := range 2 {
		e.waitState(tn, e.publishTo(tn, bad.ID, "order.paid", map[string]any{"n": i + 2}), delivery.Failed)
	}
	for _, path := range []string{"/", "/subscriptions/" + bad.ID.String()} {
		if got := line(path); !regexp.MustCompile(`^All 3 attempts since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d .* have failed\.$`).MatchString(got) {
			t.Errorf("%s after three failures: %q", path, got)
		}
	}
}
