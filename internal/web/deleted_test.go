package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
)

// TestDeliveryOfADeletedSubscription: a dead delivery's page, once its subscription is deleted, names the
// deleted subscription, offers no Resend (nothing would ever send it), and does not tell the customer to
// fix the endpoint and resend; a Resend posted anyway is refused in words, with nothing queued. The page
// offered Resend, which queued the delivery for good as "Retrying · due 14 s ago".
func TestDeliveryOfADeletedSubscription(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("deleted endpoint")
	sub := e.newSubscription(tn, "/bad/deleted-endpoint", "soon deleted", "order.paid")
	id := e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": 1})
	e.waitState(tn, id, delivery.Failed)
	if err := e.srv.Subscriptions.Delete(setupCtx(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	p := c.get("/deliveries/" + id.String())
	if p.Status != 200 {
		t.Fatalf("delivery page: %s", p)
	}
	if got := byTestID(p.Doc, "resend"); len(got) != 0 {
		t.Errorf("the page offers Resend for a deleted subscription's delivery")
	}
	if got := byTestID(p.Doc, "retry-now"); len(got) != 0 {
		t.Errorf("the page offers Retry now for a deleted subscription's delivery")
	}
	notice := text(one(t, p.Doc, "endpoint-deleted"))
	for _, want := range []string{e.recv.URL + "/bad/deleted-endpoint", sub.ID.String(), "deleted", "cannot be resent"} {
		if !strings.Contains(notice, want) {
			t.Errorf("notice %q does not say %q", notice, want)
		}
	}
	if got := byTestID(p.Doc, "subscription-link"); len(got) != 0 {
		t.Errorf("the page links the deleted subscription's page (a 404)")
	}
	if name := text(one(t, p.Doc, "subscription-name")); !strings.Contains(name, "deleted") {
		t.Errorf("the subscription is named %q, not as deleted", name)
	}
	if strings.Contains(p.text(), "then Resend") {
		t.Errorf("the page tells the customer to resend: %q", text(one(t, p.Doc, "summary")))
	}

	after := c.post("/deliveries/"+id.String()+"/resend", url.Values{})
	if flash := after.text(); !strings.Contains(flash, "Not resent") || !strings.Contains(flash, "deleted") {
		t.Errorf("a posted Resend says %q, want it refused because the subscription was deleted", text(one(t, after.Doc, "summary")))
	}
	if d := e.waitState(tn, id, delivery.Failed, delivery.Pending); d.State != delivery.Failed || d.ManualRetries != 0 {
		t.Errorf("after the refused Resend: %s with %d manual retries, want failed with 0", d.State, d.ManualRetries)
	}
}

// A delivery that was retrying when its subscription was deleted ends dead with its last attempt's
// temporary error; the page must not say that attempt was "retried": nothing followed it.
func TestDeletedSubscriptionsRetryingDeliveryWasNotRetried(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("deleted while retrying")
	sub := e.newSubscription(tn, "/flaky/deleted-while-retrying", "retrying, then deleted", "order.paid")
	id := e.publishTo(tn, sub.ID, "order.paid", map[string]any{"n": 1})
	eventually(t, 60*time.Second, 25*time.Millisecond, func() bool {
		d, err := e.srv.Deliveries.Get(context.Background(), tn.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return d.TotalAttempts > 0
	}, func() string { return "no attempt of the delivery" })
	if err := e.srv.Subscriptions.Delete(setupCtx(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	e.waitState(tn, id, delivery.Failed)
	c := e.client()
	c.login(tn.Email)
	p := c.get("/deliveries/" + id.String())
	attempts := byTestID(p.Doc, "attempt")
	if p.Status != 200 || len(attempts) == 0 {
		t.Fatalf("delivery page: %s with %d attempts", p, len(attempts))
	}
	if last := text(attempts[0]); strings.Contains(last, "temporary error, retried") || !strings.Contains(last, "its subscription was deleted") {
		t.Errorf("the last attempt says %q, want its temporary error not retried because the subscription was deleted", last)
	}
}

// /admin/dead marks the dead letters of a deleted endpoint as such and offers no replay of them: a replay
// never schedules a deleted endpoint's deliveries, so "Replay this window…" led to a preview saying "0 dead
// deliveries match now" with no reason. The preview of their window now says why it matches none.
func TestDeadLettersOfADeletedEndpointOfferNoReplay(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("dead of deleted")
	gone := e.newSubscription(tn, "/bad/dead-of-deleted", "deleted with its dead letters")
	kept := e.newSubscription(tn, "/bad/dead-of-kept", "kept")
	goneIDs := e.deadOf(tn, gone.ID, "order.paid", 2)
	e.deadOf(tn, kept.ID, "order.paid", 1)
	if err := e.srv.Subscriptions.Delete(setupCtx(), tn.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(adminEmail)

	p := c.get("/admin/dead?tenant=" + tn.ID.String())
	groups := byTestID(p.Doc, "dead-group")
	if p.Status != http.StatusOK || len(groups) != 2 {
		t.Fatalf("%s: %d groups", p, len(groups))
	}
	for _, g := range groups {
		deleted := strings.Contains(text(g), gone.URL)
		marks, replays, why := byTestID(g, "group-deleted"), byTestID(g, "group-replay"), byTestID(g, "group-not-replayable")
		switch {
		case deleted && (len(marks) != 1 || len(replays) != 0 || len(why) != 1):
			t.Errorf("the deleted endpoint's group: %d deleted marks, %d replay links, %d reasons: %q", len(marks), len(replays), len(why), text(g))
		case !deleted && (len(marks) != 0 || len(replays) != 1):
			t.Errorf("the live endpoint's group: %d deleted marks, %d replay links: %q", len(marks), len(replays), text(g))
		}
	}
	if strings.Contains(p.Body, `href="/subscriptions/`+gone.ID.String()+`"`) {
		t.Error("the page links the deleted endpoint's page (a 404)")
	}
	for _, row := range byTestID(p.Doc, "dead-row") {
		marked := len(byTestID(row, "dead-row-deleted")) == 1
		if ofGone := slices.Contains(goneIDs, uuid.MustParse(attr(row, "data-id"))); marked != ofGone {
			t.Errorf("dead letter %s: marked deleted %v, of the deleted endpoint %v", attr(row, "data-id"), marked, ofGone)
		}
	}

	// The bulk replay of the deleted endpoint's window, typed by hand: none match, and it says why.
	q := url.Values{"tenant": {tn.ID.String()}, "subscription": {gone.ID.String()},
		"from": {formTimeOf(time.Now().Add(-time.Hour))}, "to": {formTimeOf(time.Now().Add(time.Hour))}}
	p = c.get("/admin/replay?" + q.Encode())
	if got := attr(one(t, p.Doc, "matched"), "data-matched"); got != "0" {
		t.Fatalf("%s: matched %q", p, got)
	}
	want := "2 dead deliveries fit these criteria but are not replayed: their endpoints were deleted, and deliveries of deleted endpoints are never sent again."
	if got := text(one(t, p.Doc, "deleted-not-replayed")); got != want {
		t.Errorf("the preview says %q, want %q", got, want)
	}
}

// A delivery's page names its deleted endpoint as the activity log does, by its description marked
// "(deleted)", in the heading and the breadcrumb, and the notice by its description, URL and id; it named
// it "deleted subscription http://…" while the log said "Doomed endpoint (deleted)". Without a description
// the URL names it.
func TestDeliveryNamesItsDeletedEndpointByDescription(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("deleted endpoint named")
	described := e.newSubscription(tn, "/bad/deleted-named", "Doomed endpoint", "order.paid")
	bare := e.newSubscription(tn, "/bad/deleted-bare", "", "order.paid")
	c := e.client()
	c.login(tn.Email)
	for _, want := range []struct {
		sub          subscriptions.Subscription
		name, notice string
	}{
		{described, "Doomed endpoint (deleted)", "Its subscription Doomed endpoint (" + described.URL + ", " + described.ID.String() + ") was deleted"},
		{bare, bare.URL + " (deleted)", "Its subscription " + bare.URL + " (" + bare.ID.String() + ") was deleted"},
	} {
		id := e.publishTo(tn, want.sub.ID, "order.paid", map[string]any{"n": 1})
		e.waitState(tn, id, delivery.Failed)
		if err := e.srv.Subscriptions.Delete(setupCtx(), tn.ID, want.sub.ID); err != nil {
			t.Fatal(err)
		}
		p := c.get("/deliveries/" + id.String())
		if got := text(one(t, p.Doc, "subscription-name")); got != want.name {
			t.Errorf("the page names the deleted endpoint %q, want %q", got, want.name)
		}
		if crumbs := text(one(t, p.Doc, "breadcrumb")); !strings.Contains(crumbs, want.name) {
			t.Errorf("breadcrumb %q, want it to name %q", crumbs, want.name)
		}
		if notice := text(one(t, p.Doc, "endpoint-deleted")); !strings.HasPrefix(notice, want.notice) {
			t.Errorf("notice %q, want it to start %q", notice, want.notice)
		}
		var logged []string
		for _, row := range byTestID(c.get("/activity").Doc, "activity-row") {
			if attr(row, "data-action") == "subscription.deleted" {
				logged = append(logged, text(one(t, row, "activity-object")))
			}
		}
		if !slices.Contains(logged, want.name) {
			t.Errorf("the activity log names the deleted endpoints %q, the delivery page %q", logged, want.name)
		}
	}
}
