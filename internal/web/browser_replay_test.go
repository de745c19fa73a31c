package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/replays"
)

// A replay has scheduled everything while its deliveries still wait (their subscription is paused): its
// page says "delivering" with 3 still pending and keeps following; once resumed, the deliveries die again
// (the endpoint still answers 400) and the page, without a reload, says finished: dead again 3, pending 0.
func TestBrowserReplayPageFollowsUntilDeliveriesAreFinal(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, withAdmin)
	ctx := activity.System(context.Background(), "test setup")
	tn := e.newTenant("browser-follow")
	sub := e.newSubscription(tn, "/bad/browser-follow", "Follow endpoint")
	e.deadOf(tn, sub.ID, "order.paid", 3)
	if _, err := e.srv.Subscriptions.Pause(ctx, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	from, to := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	rep, err := e.srv.Replays.Start(ctx, replays.ReplayRequest{Filter: replays.DeadFilter{SubscriptionID: &sub.ID, CreatedFrom: &from, CreatedTo: &to},
		Spread: time.Second, Actor: adminEmail})
	if err != nil {
		t.Fatal(err)
	}
	var got replays.Replay
	eventually(t, 15*time.Second, 50*time.Millisecond, func() bool {
		var err error
		if got, err = e.srv.Replays.Get(ctx, rep.ID, nil); err != nil {
			t.Fatal(err)
		}
		return got.State == replays.ReplayFinished && got.Pending == 3
	}, func() string { return fmt.Sprintf("replay not scheduled: %+v", got) })

	b.login(e.base, adminEmail)
	b.run("replay page", chromedp.Navigate(e.base+"/admin/replays/"+rep.ID.String()), chromedp.WaitVisible(chromedp.CSS(`[data-testid=replay-head]`)))
	b.assetsLoaded("replay page")
	if got := b.text(`[data-testid=replay-head] [data-testid=state]`); got != "delivering" {
		t.Errorf("badge %q while 3 are pending", got)
	}
	if got := b.text(`[data-testid=progress-text]`); got != "Scheduled 3 of 3; delivered 0, dead again 0, still pending 3" {
		t.Errorf("progress %q", got)
	}
	if !eval[bool](b, `!!document.querySelector('#replay[data-live]')`) {
		t.Fatal("the page does not follow a replay with pending deliveries")
	}
	b.screenshot("replay-delivering")
	eval[bool](b, `window.hooklineMark = true`)

	if _, err := e.srv.Subscriptions.Resume(ctx, tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	b.waitJS("settled", `document.querySelector('[data-testid=replay-head]')?.dataset.settled === 'true'`)
	if got := b.text(`[data-testid=replay-head] [data-testid=state]`); got != "finished" {
		t.Errorf("badge %q once every delivery is final", got)
	}
	if got := b.text(`[data-testid=progress-text]`); got != "Scheduled 3 of 3; delivered 0, dead again 3, still pending 0" {
		t.Errorf("progress %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('[data-testid=delivery-row][data-state=failed]').length`); n != 3 {
		t.Errorf("%d rows shown failed", n)
	}
	if !eval[bool](b, `window.hooklineMark === true`) {
		t.Error("the page reloaded instead of following")
	}
	if eval[bool](b, `!!document.querySelector('#replay[data-live]')`) {
		t.Error("the settled page still follows")
	}
	b.screenshot("replay-settled")
}
