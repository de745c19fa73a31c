package phases

import (
	"context"
	"fmt"
	"slices"

	"github.com/hookline/hookline/cmd/bench/internal/report"
	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

// goals: the engine against the harness's own loop, and many endpoints against one, measured side by side.
// A drain and the loop run one after the other, seconds apart; on a shared machine the same ratio taken in
// separate phases minutes apart measured the machine's drift as much as the engine (0.58× and 0.88× of
// the same build). So each of -goal-rounds rounds runs drain (a), the claim → POST → record loop and drain
// (c) back to back, each on a fresh database with the same backlog, takes its ratios within the round,
// and the median round is the figure.
func (b *Bench) goals(ctx context.Context) error {
	a, c := drainVariants[0], drainVariants[2]
	// A warm-up of each, not counted: the first drain of a run found PostgreSQL's and the kernel's caches
	// cold and ran up to a third slower than the same drain a minute later, which only the first round's
	// drain (a) paid.
	warm := max(b.o.DrainN/5, 1000)
	if _, _, err := b.drainOnce(ctx, "goals", a, warm, 1); err != nil {
		return fmt.Errorf("warm-up, %s: %w", a.name, err)
	}
	if _, _, err := b.drainOnce(ctx, "goals", c, warm, 1); err != nil {
		return fmt.Errorf("warm-up, %s: %w", c.name, err)
	}
	var loopRatio, dbRatio, manyRatio []float64
	for round := 1; round <= b.o.GoalRounds; round++ {
		var aCPU [2]testbed.CPUUse
		b.lastDrainCPU = &aCPU
		aRate, _, err := b.drainOnce(ctx, "goals", a, b.o.DrainN, 1)
		b.lastDrainCPU = nil
		if err != nil {
			return fmt.Errorf("round %d, %s: %w", round, a.name, err)
		}
		loopRate, _, loopCPU, err := b.ceilingOnce(ctx, true)
		if err != nil {
			return fmt.Errorf("round %d, the loop: %w", round, err)
		}
		cRate, _, err := b.drainOnce(ctx, "goals", c, b.o.DrainN, 1)
		if err != nil {
			return fmt.Errorf("round %d, %s: %w", round, c.name, err)
		}
		b.res.Add("goals", fmt.Sprintf("round %d: drain (a)", round), aRate, "deliveries/s", "")
		b.res.Add("goals", fmt.Sprintf("round %d: loop with a POST per row", round), loopRate, "deliveries/s", "")
		b.res.Add("goals", fmt.Sprintf("round %d: drain (c)", round), cRate, "deliveries/s", "")
		loopRatio = append(loopRatio, aRate/loopRate)
		manyRatio = append(manyRatio, cRate/aRate)
		_, aDB, _, ok1 := aCPU[0].PerDelivery(aCPU[1], b.o.DrainN)
		_, loopDB, _, ok2 := loopCPU[0].PerDelivery(loopCPU[1], b.o.DrainN)
		if ok1 && ok2 && loopDB > 0 {
			b.res.Add("goals", fmt.Sprintf("round %d: database CPU per delivery, drain (a)", round), aDB, "µs", "")
			b.res.Add("goals", fmt.Sprintf("round %d: database CPU per delivery, loop", round), loopDB, "µs", "")
			dbRatio = append(dbRatio, aDB/loopDB)
		}
		fmt.Printf("goals round %d: drain (a) %.0f/s, loop %.0f/s (%.2f×), drain (c) %.0f/s (%.2f× (a))\n",
			round, aRate, loopRate, aRate/loopRate, cRate, cRate/aRate)
	}
	note := func(v []float64) string { return fmt.Sprintf("median of %d rounds: %s", len(v), joinRatios(v)) }
	b.res.Add("goals", report.RatioDrainLoop, median(loopRatio), "×", note(loopRatio))
	if len(dbRatio) > 0 {
		b.res.Add("goals", report.RatioDrainLoopDB, median(dbRatio), "×", note(dbRatio))
	}
	b.res.Add("goals", report.RatioManyOne, median(manyRatio), "×", note(manyRatio))
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinRatios(v []float64) string {
	out := ""
	for i, x := range v {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%.2f", x)
	}
	return out
}
