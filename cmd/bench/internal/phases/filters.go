package phases

import (
	"context"
	"fmt"

	"github.com/hookline/hookline/cmd/bench/internal/report"
)

// benchFilter is a realistic filter that every bench payload passes: four conditions on the payload's
// fields and the type, so the comparison is between the same deliveries with and without filters.
var benchFilter = map[string]any{
	"type": map[string]any{"$startsWith": "bench."},
	"data": map[string]any{
		"order": map[string]any{"total": map[string]any{"$gte": 100}, "currency": map[string]any{"$in": []string{"EUR", "USD"}},
			"id": map[string]any{"$startsWith": "ord_"}},
	},
}

// filters: ingest (fan-out 100, paused subscriptions, as the ingest phase) without filters and then with a
// filter on each of the 100 subscriptions, three times each, alternating, on one tenant of one server. The goal:
// with filters at least 0.9 × without, in the same run.
func (b *Bench) filters(ctx context.Context) error {
	db, _, c, done, err := b.serverPhase(ctx, "filters")
	if err != nil {
		return err
	}
	defer done()
	ts, err := b.setupTenant(ctx, c, 100, 0)
	if err != nil {
		return err
	}
	if err := ts.setState(ctx, c, "pause"); err != nil {
		return err
	}
	setFilters := func(f any) error {
		for _, s := range ts.subs {
			if _, err := c.Call(ctx, "PATCH", "/tenants/"+ts.tenant+"/subscriptions/"+s, map[string]any{"filter": f}, nil, nil); err != nil {
				return err
			}
		}
		return nil
	}
	rates := map[bool]float64{}
	const rounds = 6 // three of each, alternating: the machine drifts within a run
	for round := range rounds {
		filtered := round%2 == 1
		var f any // nil: the filter removed
		if filtered {
			f = benchFilter
		}
		if err := setFilters(f); err != nil {
			return err
		}
		r, err := b.publishLoad(ctx, c, ts, false, b.o.IngestN, b.o.IngestDur/2, 0)
		if err != nil {
			return err
		}
		if r.errors > 0 {
			return fmt.Errorf("filters: %d publishes failed: %s", r.errors, r.firstErr)
		}
		if t, err := checkStored(ctx, db, r.events, 100); err != nil || t.Unique != t.Expected || t.Total != t.Expected {
			return fmt.Errorf("filters (filtered %v): deliveries %+v, %v", filtered, t, err)
		}
		rate := float64(len(r.events)) / r.elapsed.Seconds()
		fmt.Printf("filters: round %d, filters %v: %.0f events/s (fan-out 100)\n", round+1, filtered, rate)
		rates[filtered] += rate / (rounds / 2)
	}
	b.res.Add("filters", "fan-out 100 without filters", rates[false], "events/s", "mean of three rounds")
	b.res.Add("filters", "fan-out 100, a 4-condition filter on each", rates[true], "events/s", "mean of three rounds, alternating with the above")
	b.res.Add("filters", report.RatioFilters, rates[true]/rates[false], "×", "")
	return nil
}
