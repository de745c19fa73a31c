package phases

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// scaling: drain (a) and (c) with 1, 2 and 3 server processes on one database (each on its own port,
// all started before the backlog is resumed): deliveries/s. On a 2-core machine the processes share the
// cores with PostgreSQL and the receiver, so this shows the cost of coordination more than any gain.
func (b *Bench) scaling(ctx context.Context) error {
	for _, key := range []string{"a", "c"} {
		v := drainVariants[0]
		if key == "c" {
			v = drainVariants[2]
		}
		for p := range strings.SplitSeq(b.o.ScaleProcs, ",") {
			procs, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || procs < 1 {
				return fmt.Errorf("-scaling-procs: %q", p)
			}
			rate, t, err := b.drainOnce(ctx, "scaling", v, b.o.ScaleN, procs)
			if err != nil {
				return fmt.Errorf("%s with %d processes: %w", v.name, procs, err)
			}
			name := fmt.Sprintf("%s, %d process", v.name, procs)
			if procs > 1 {
				name += "es"
			}
			b.res.Add("scaling", name, rate, "deliveries/s", fmt.Sprintf("%d deliveries", b.o.ScaleN))
			b.record("scaling", fmt.Sprintf("%s×%d", key, procs), t)
		}
	}
	return nil
}
