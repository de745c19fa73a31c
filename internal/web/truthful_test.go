package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/replays"
)

// The message a bulk replay's start leaves on its page stays true once the replay has scheduled
// everything: a small replay is scheduled before its page is even shown, and the page keeps the message
// while it follows the replay, so it must not say that scheduling is going on.
func TestReplayStartedMessageStaysTrue(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("replay-banner")
	sub := e.newSubscription(tn, "/bad/replay-banner", "replay banner")
	// An event type no other test uses: the replay must not touch their deliveries.
	const typ = "outage.replay-banner-test"
	e.deadOf(tn, sub.ID, typ, 2)
	c := e.client()
	c.login(adminEmail)

	r := noRedirects(c).post("/admin/replay", replayCriteria(typ, "confirm"))
	loc := r.Header.Get("Location")
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(loc, "/admin/replays/") {
		t.Fatalf("confirm: %s to %q: %s", r, loc, r.text())
	}
	id := uuid.MustParse(strings.TrimPrefix(loc, "/admin/replays/"))
	eventually(t, 20*time.Second, 25*time.Millisecond, func() bool {
		rep, err := e.srv.Replays.Get(context.Background(), id, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep.State != replays.ReplayRunning
	}, func() string { return fmt.Sprintf("replay %s still scheduling", id) })
	p := c.get(loc)
	if got := attr(one(t, p.Doc, "replay-head"), "data-state"); got != "finished" {
		t.Fatalf("replay page state %q, want finished", got)
	}
	const want = "Replay started: 2 dead deliveries matched. Its progress is below."
	if got := text(one(t, p.Doc, "flash")); got != want {
		t.Errorf("after the replay finished scheduling, its page says %q, want %q", got, want)
	}
}
