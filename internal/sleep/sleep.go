// Package sleep is the one cancellable wait of the background loops (the worker, the maintenance leader,
// the replay runner): a wait that shutdown can cut short, unlike time.Sleep.
package sleep

import (
	"context"
	"time"
)

// For waits d or until ctx ends, and says whether ctx is still live.
func For(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
