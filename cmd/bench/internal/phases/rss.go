package phases

import (
	"context"
	"fmt"
	"time"
)

// rss: the server's memory with a pending backlog of -rss-small and then -rss-large deliveries on one
// subscription: VmRSS with the subscription paused (after a few API reads and the maintenance ticks),
// then the peak (VmHWM) over 10 s of draining it to the instant receiver. Flat means the server never
// holds the backlog. (The per-phase peaks of the other phases are recorded by each phase.)
func (b *Bench) rss(ctx context.Context) error {
	db, s, c, done, err := b.serverPhase(ctx, "rss")
	if err != nil {
		return err
	}
	defer done()
	ts, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	if err := ts.setState(ctx, c, "pause"); err != nil {
		return err
	}
	seeded := 0
	for _, n := range []int{b.o.RSSSmall, b.o.RSSLarge} {
		t0 := time.Now()
		if err := seedBacklog(ctx, db, ts, n-seeded, 200); err != nil {
			return err
		}
		seeded = n
		fmt.Printf("rss: %d pending deliveries (seeded in %s)\n", n, time.Since(t0).Round(time.Second))
		for range 5 {
			if _, err := c.Call(ctx, "GET", "/tenants/"+ts.tenant+"/deliveries?state=pending&limit=100", nil, nil, nil); err != nil {
				return err
			}
		}
		time.Sleep(6 * time.Second)
		rss, _, err := s.Memory()
		if err != nil {
			return err
		}
		_ = s.ResetPeak()
		b.rc.Reset(0, false)
		if err := ts.setState(ctx, c, "resume"); err != nil {
			return err
		}
		time.Sleep(10 * time.Second)
		if err := ts.setState(ctx, c, "pause"); err != nil {
			return err
		}
		_, hwm, err := s.Memory()
		if err != nil {
			return err
		}
		u, _, _ := b.rc.Counts()
		fmt.Printf("rss: %d pending: %.1f MiB paused; peak %.1f MiB over 10 s of drain (%d delivered meanwhile)\n", n, rss, hwm, u)
		b.res.Add("rss", fmt.Sprintf("%d pending, paused (VmRSS)", n), rss, "MiB", "")
		b.res.Add("rss", fmt.Sprintf("%d pending, draining (VmHWM over 10 s)", n), hwm, "MiB", "target < 200 MiB")
		seeded -= u
	}
	return nil
}
