package deliveries_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/subscriptions"
)

// TestViewReadsOneSnapshot: what a View lists and counts is of one moment, whatever commits in between;
// the next View sees the change.
func TestViewReadsOneSnapshot(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sub, _ := e.subscribe("http://127.0.0.1:1/hook", subscriptions.Input{})
	if _, err := e.subs.Pause(e.ctx, e.tenant, sub.ID); err != nil {
		t.Fatal(err)
	}
	ids := []uuid.UUID{e.publishOne(`{}`), e.publishOne(`{}`), e.publishOne(`{}`)}
	pending := deliveries.Filter{SubscriptionID: &sub.ID, States: []string{"pending"}}
	read := func(move bool) (rows int, n int64, states deliveries.StateCounts) {
		t.Helper()
		err := e.svc.Read(e.ctx, func(v *deliveries.View) error {
			page, err := v.List(e.ctx, e.tenant, pending)
			if err != nil {
				return err
			}
			rows = len(page.Items)
			if move {
				if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET state = 'delivered' WHERE id = $1`, ids[0]); err != nil {
					return err
				}
			}
			if n, _, err = v.Count(e.ctx, e.tenant, pending, 100); err != nil {
				return err
			}
			by, err := v.StateCounts(e.ctx, e.tenant, []uuid.UUID{sub.ID}, 100)
			states = by[sub.ID]
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return rows, n, states
	}
	if rows, n, st := read(true); rows != 3 || n != 3 || st.Pending.N != 3 {
		t.Errorf("a delivery moved while the view read: %d rows, counted %d, state counts %d pending; want 3 each", rows, n, st.Pending.N)
	}
	if rows, n, st := read(false); rows != 2 || n != 2 || st.Pending.N != 2 {
		t.Errorf("the next view: %d rows, counted %d, %d pending; want 2 each", rows, n, st.Pending.N)
	}
}
