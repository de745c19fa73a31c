package replays

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/pgfail"
	"github.com/hookline/hookline/internal/service"
	"github.com/hookline/hookline/internal/sleep"
)

// The replay runner: works through running replays in the background, a paced chunk at a time.

// ReplayRunner works through running replays in the background. It runs in every process: each chunk locks
// its replay row (SKIP LOCKED), so one runner at a time advances a replay, and a replay whose process died
// is resumed by any other from its cursor.
type ReplayRunner struct {
	replays *Replays
	log     *slog.Logger
	// Poll is how often it looks for unfinished replays without being woken (default 2 s).
	Poll time.Duration
	// MaxFailures is how many chunks of one replay may fail in a row before it is marked failed (default 5).
	MaxFailures int
	// ChunkTimeout bounds one chunk's transaction, and each of the runner's other statements (default
	// 30 s; a chunk of ReplayChunkSize rows takes milliseconds to a few hundred). A chunk cut off while the
	// database answers (a lock wait, a bad plan) counts as a failed chunk; unbounded, it held the runner,
	// and every replay behind it, for as long as it waited.
	ChunkTimeout time.Duration

	// pace spaces chunks (DefaultReplayChunksPerSecond; SetChunkRate changes it).
	pace *chunkPacer

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// A ReplayRunner is a background service: Start runs it, Stop ends it within a deadline.
var _ service.Service = (*ReplayRunner)(nil)

// NewReplayRunner returns a runner; Start runs it.
func NewReplayRunner(replays *Replays, log *slog.Logger) *ReplayRunner {
	return &ReplayRunner{replays: replays, log: log, Poll: 2 * time.Second, MaxFailures: 5, ChunkTimeout: 30 * time.Second,
		pace: newChunkPacer(DefaultReplayChunksPerSecond), wake: make(chan struct{}, 1)}
}

// SetChunkRate sets how many chunks a second this runner moves at most, over all replays (per process);
// 0 does not pace. Call it before Start.
func (r *ReplayRunner) SetChunkRate(perSecond float64) {
	r.pace = newChunkPacer(perSecond)
}

// Wake makes the runner look for running replays now.
func (r *ReplayRunner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Start runs the runner until Stop. ctx only bounds start-up.
func (r *ReplayRunner) Start(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		for {
			r.RunAll(ctx)
			t := time.NewTimer(r.Poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-r.wake:
				t.Stop()
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop stops the runner and waits for it until ctx ends; a chunk it was working on rolls back whole (its
// transaction is cancelled), so the replay keeps exact counts and is resumed later from its cursor, by this
// process or another.
func (r *ReplayRunner) Stop(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("replay runner: %w", ctx.Err())
	}
}

// RunAll works every running replay it can take to its end, or until ctx ends.
func (r *ReplayRunner) RunAll(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, r.ChunkTimeout)
	ids, err := r.replays.Running(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("list running replays", "err", err)
		}
		return
	}
	for _, id := range ids {
		r.Run(ctx, id)
	}
}

// Run works one replay chunk by chunk until it is done, another runner holds it, or ctx ends.
func (r *ReplayRunner) Run(ctx context.Context, id uuid.UUID) {
	failures := 0
	for ctx.Err() == nil {
		r.pace.wait(ctx)
		if ctx.Err() != nil {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, r.ChunkTimeout)
		taken, done, err := r.replays.Step(cctx, id)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && pgfail.Away(ctx, r.replays.pool, err):
			// The database is away (restarting, failing over, silent): not the replay's fault, so it is not
			// counted against MaxFailures, which a failover of a few seconds would otherwise exhaust and fail
			// the replay for good. The chunk rolled back; the replay is still running, and the next poll
			// resumes it from its cursor once a primary answers.
			r.log.Warn("replay chunk failed: database unavailable; resuming when it answers", "replay_id", id, "err", err)
			return
		case err != nil:
			failures++
			r.log.Warn("replay chunk failed", "replay_id", id, "err", err, "failures", failures,
				"timed_out", pgfail.TimedOut(err))
			if failures >= r.MaxFailures {
				fctx, cancel := context.WithTimeout(ctx, r.ChunkTimeout)
				ferr := r.replays.Fail(fctx, id, err.Error())
				cancel()
				if ferr != nil {
					r.log.Error("mark replay failed", "replay_id", id, "err", ferr)
				}
				r.log.Error("replay failed", "replay_id", id, "err", err)
				return
			}
			sleep.For(ctx, time.Duration(failures)*time.Second)
			continue
		case !taken:
			return
		case done:
			r.log.Info("replay finished", "replay_id", id)
			return
		}
		failures = 0
	}
}
