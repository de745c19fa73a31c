package phases

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// ratelimit: does one tenant flooding POST /events slow another tenant's publishes? A quiet tenant
// publishes a steady stream (-ratelimit-quiet events/s) for -ratelimit-time alone, then again while a noisy
// tenant floods with -publishers keep-alive publishers as fast as they go, each waiting out Retry-After
// after a 429 as a client library would (-ratelimit-ignore-retry-after: knock again at once, the worst
// client, whose refused requests still cost the server its HTTP work). Run twice, each on a fresh server
// and database: without HOOKLINE_API_RATE_PER_SECOND, then with it at -ratelimit-rate (the burst its
// default, twice the rate). The figure that matters is the quiet tenant's publish p99 during the flood over
// its p99 alone (measured after a warm-up, half before the flood and half after), with the limit off and on. The subscriptions are paused, so only the publish path works,
// as in ingest.
func (b *Bench) ratelimit(ctx context.Context) error {
	for _, limited := range []bool{false, true} {
		if err := b.ratelimitRun(ctx, limited); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bench) ratelimitRun(ctx context.Context, limited bool) error {
	variant := "limit off"
	var env []string
	if limited {
		variant = fmt.Sprintf("limit %g/s per token", b.o.LimitRate)
		env = append(env, fmt.Sprintf("HOOKLINE_API_RATE_PER_SECOND=%g", b.o.LimitRate))
		if b.o.LimitBurst > 0 {
			variant += fmt.Sprintf(", burst %d", b.o.LimitBurst)
			env = append(env, fmt.Sprintf("HOOKLINE_API_BURST=%d", b.o.LimitBurst))
		}
	}
	_, s, c, done, err := b.serverPhase(ctx, "ratelimit", env...)
	if err != nil {
		return err
	}
	defer done()
	quiet, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	noisy, err := b.setupTenant(ctx, c, 1, 0)
	if err != nil {
		return err
	}
	for _, ts := range []*tenantSetup{quiet, noisy} {
		if err := ts.setState(ctx, c, "pause"); err != nil {
			return err
		}
	}
	steady := func(d time.Duration) (*loadResult, error) {
		return b.publishLoad(ctx, c, quiet, false, int(b.o.LimitQuiet*d.Seconds()), d, b.o.LimitQuiet)
	}
	// Warm up first (connections, plans): the first publishes after a start are the slowest.
	if _, err := steady(2 * time.Second); err != nil {
		return fmt.Errorf("%s, warm-up: %w", variant, err)
	}
	// Alone is measured half before and half after the flood, so a drift of the machine's load over the
	// run weighs on both sides of the ratio.
	alone, err := steady(b.o.LimitDur / 2)
	if err != nil {
		return fmt.Errorf("%s, quiet tenant alone: %w", variant, err)
	}

	// The flood has its own connections, as another customer's publisher would.
	fc := testbed.NewClient(s.Base)
	fctx, stop := context.WithCancel(ctx)
	var accepted, refused, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range b.o.Publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hdr := map[string]string{"Authorization": "Bearer " + noisy.token}
			for i := 0; fctx.Err() == nil; i++ {
				body := map[string]any{"event_type": "bench.flood", "payload": rawJSON(payload(b.o.Payload, i))}
				status, err := fc.Call(fctx, "POST", "/tenants/"+noisy.tenant+"/events", body, hdr, nil)
				switch {
				case err == nil:
					accepted.Add(1)
				case status == http.StatusTooManyRequests:
					refused.Add(1)
					if !b.o.LimitIgnore {
						// Retry-After is whole seconds, at least 1, and 1 at any rate of a request a second or more:
						// this publisher waits that second.
						select {
						case <-fctx.Done():
						case <-time.After(time.Second):
						}
					}
				case fctx.Err() == nil:
					failed.Add(1)
				}
			}
		}()
	}
	during, err := steady(b.o.LimitDur)
	stop()
	wg.Wait()
	flood := time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("%s, quiet tenant during the flood: %w", variant, err)
	}
	after, err := steady(b.o.LimitDur / 2)
	if err != nil {
		return fmt.Errorf("%s, quiet tenant alone after the flood: %w", variant, err)
	}
	alone.lat = append(alone.lat, after.lat...)
	alone.errors += after.errors
	if alone.firstErr == "" {
		alone.firstErr = after.firstErr
	}
	for _, r := range []*loadResult{alone, during} {
		if r.errors > 0 {
			return fmt.Errorf("%s: the quiet tenant's publishes failed %d times: %s", variant, r.errors, r.firstErr)
		}
	}
	// With the limit, what it can best achieve: the same neighbour publishing steadily at the limit, without
	// a flood. A flood that costs the quiet tenant what this costs has been made into a well-behaved
	// neighbour; what is left is the neighbour's allowed load, not the flood.
	var besideSteady *loadResult
	if limited {
		nc := testbed.NewClient(s.Base)
		done := make(chan error, 1)
		go func() {
			_, err := b.publishLoad(ctx, nc, noisy, false, int(b.o.LimitRate*b.o.LimitDur.Seconds()), b.o.LimitDur, b.o.LimitRate)
			done <- err
		}()
		besideSteady, err = steady(b.o.LimitDur)
		if nerr := <-done; err == nil {
			err = nerr
		}
		if err != nil {
			return fmt.Errorf("%s, beside a neighbour steady at the limit: %w", variant, err)
		}
	}
	ratio, ratio50 := during.lat.Millis(99)/alone.lat.Millis(99), during.lat.Millis(50)/alone.lat.Millis(50)
	fmt.Printf("ratelimit %s: quiet tenant p50 %.1f → %.1f ms, p99 %.1f → %.1f ms (%.2f×) while the noisy one had %.0f/s accepted, %.0f/s refused (429), %d other errors\n",
		variant, alone.lat.Millis(50), during.lat.Millis(50), alone.lat.Millis(99), during.lat.Millis(99), ratio,
		float64(accepted.Load())/flood, float64(refused.Load())/flood, failed.Load())
	note := fmt.Sprintf("%g events/s for %s, %d flooding publishers", b.o.LimitQuiet, b.o.LimitDur, b.o.Publishers)
	if b.o.LimitIgnore {
		note += " ignoring Retry-After"
	}
	b.res.Add("ratelimit", variant+": quiet tenant p99 alone", alone.lat.Millis(99), "ms", note)
	b.res.Add("ratelimit", variant+": quiet tenant p99 during the flood", during.lat.Millis(99), "ms", note)
	b.res.Add("ratelimit", variant+": quiet tenant p99 during / alone", ratio, "×", "")
	b.res.Add("ratelimit", variant+": quiet tenant p50 during / alone", ratio50, "×", "")
	b.res.Add("ratelimit", variant+": flood accepted", float64(accepted.Load())/flood, "events/s", "")
	b.res.Add("ratelimit", variant+": flood refused (429)", float64(refused.Load())/flood, "requests/s", "")
	if failed.Load() > 0 {
		b.res.Add("ratelimit", variant+": flood errors", float64(failed.Load()), "errors", "neither 202 nor 429")
	}
	if besideSteady != nil {
		steady99 := besideSteady.lat.Millis(99)
		fmt.Printf("ratelimit %s: quiet tenant p99 beside a neighbour steady at %g/s (no flood) %.1f ms (%.2f× alone); the flood over that: %.2f×\n",
			variant, b.o.LimitRate, steady99, steady99/alone.lat.Millis(99), during.lat.Millis(99)/steady99)
		b.res.Add("ratelimit", variant+": quiet tenant p99 beside a neighbour steady at the limit / alone", steady99/alone.lat.Millis(99), "×", "no flood: the neighbour publishes at the limit")
		b.res.Add("ratelimit", variant+": quiet tenant p99 during the flood / beside the steady neighbour", during.lat.Millis(99)/steady99, "×", "1: the flood costs what a neighbour at the limit does")
	}
	return nil
}
