package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
)

// TestCountsAgree: the state tabs, the health card's counts of now and the paused note count the same
// deliveries with the same words (delivery.Pending): pending includes retrying, in flight is apart, and
// waiting is the pending deliveries of a paused subscription. The card's "delivered" is the range's
// successful attempts (none here: the deliveries were moved by hand, without attempts).
func TestCountsAgree(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("counts")
	sub := e.newSubscription(tn, "/good/counts", "counted")
	ctx := activity.System(context.Background(), "test setup")
	if _, err := e.srv.Subscriptions.Pause(ctx, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	// Six deliveries, then put where the counts differ most: 1 never tried, 2 retrying, 1 in flight,
	// 1 delivered, 1 dead.
	ids := make([]uuid.UUID, 6)
	for i := range ids {
		ids[i] = e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": i})
	}

	for _, u := range []struct {
		id  uuid.UUID
		sql string
	}{
		{ids[1], `UPDATE webhook_deliveries SET total_attempts = 1, attempt_count = 1, last_status = 503 WHERE id = $1`},
		{ids[2], `UPDATE webhook_deliveries SET total_attempts = 3, attempt_count = 3, last_status = 503 WHERE id = $1`},
		{ids[3], `UPDATE webhook_deliveries SET state = 'in_flight', lease_expires_at = now() + interval '1 hour' WHERE id = $1`},
		{ids[4], `UPDATE webhook_deliveries SET state = 'delivered', total_attempts = 1, attempt_count = 1, last_status = 200 WHERE id = $1`},
		{ids[5], `UPDATE webhook_deliveries SET state = 'failed', total_attempts = 1, attempt_count = 1, last_status = 404,
			dead_reason = 'permanent_status', dead_at = now() WHERE id = $1`},
	} {
		if _, err := e.srv.Pool.Exec(ctx, u.sql, u.id); err != nil {
			t.Fatal(err)
		}
	}
	c := e.client()
	c.login(tn.Email)
	base := "/subscriptions/" + sub.ID.String()
	p := c.get(base)
	tabs, _ := tabCounts(t, p)
	card := map[string]string{}
	for _, id := range []string{"delivered-count", "pending-count", "retrying-count", "dead-count"} {
		card[id] = attr(one(t, p.Doc, id), "data-count")
	}
	inFlight := attr(one(t, p.Doc, "in-flight-count"), "data-count")
	want := map[string]string{"pending": "3", "retrying": "2", "delivered": "1", "dead": "1", "all": "6"}
	for state, n := range want {
		if tabs[state] != n {
			t.Errorf("tab %s counts %q, want %s", state, tabs[state], n)
		}
		if state != "all" && state != "delivered" && card[state+"-count"] != tabs[state] {
			t.Errorf("the card counts %s %s, its tab %s", state, card[state+"-count"], tabs[state])
		}
	}
	if got, _ := tabCounts(t, c.get(base+"?state=in_flight")); got["in_flight"] != inFlight || inFlight != "1" {
		t.Errorf("in flight: card %s, tab %s, want 1", inFlight, got["in_flight"])
	}
	if card["delivered-count"] != text(one(t, p.Doc, "attempts")) || card["delivered-count"] != "0" {
		t.Errorf("the card's delivered %s beside %s attempts, want the successful attempts (0)", card["delivered-count"], text(one(t, p.Doc, "attempts")))
	}
	if got := text(one(t, p.Doc, "paused-waiting")); !strings.Contains(got, "Paused — "+tabs["pending"]+" waiting") {
		t.Errorf("paused note %q beside %s pending", got, tabs["pending"])
	}
	// Filtered to one event type, the tabs count the filtered list; the card and the note still count the
	// subscription's deliveries now, the same numbers as before.
	fp := c.get(base + "?event_type=order.other")
	if ft, _ := tabCounts(t, fp); ft["pending"] != "0" {
		t.Errorf("filtered pending tab %q, want 0", ft["pending"])
	}
	if got := attr(one(t, fp.Doc, "pending-count"), "data-count"); got != tabs["pending"] {
		t.Errorf("filtered page: the card counts %s pending, want the subscription's %s", got, tabs["pending"])
	}
	if got := text(one(t, fp.Doc, "paused-waiting")); !strings.Contains(got, "Paused — "+tabs["pending"]+" waiting") {
		t.Errorf("filtered page: paused note %q, want %s waiting", got, tabs["pending"])
	}
	// The Deliveries page, filtered to the subscription, counts the same.
	all, _ := tabCounts(t, c.get("/deliveries?subscription="+sub.ID.String()))
	for state, n := range want {
		if all[state] != n {
			t.Errorf("/deliveries tab %s counts %q, want %s", state, all[state], n)
		}
	}
}
