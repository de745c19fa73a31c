package replays

import (
	"context"
	"time"
)

// Test hooks for the external test package (replays_test).

// SetPaceClock runs the runner's chunk pacing on a test clock: now is read before each chunk and sleep is
// called with how long the pacer waits.
func (r *ReplayRunner) SetPaceClock(now func() time.Time, sleep func(context.Context, time.Duration)) {
	r.pace.now, r.pace.sleep = now, sleep
}
