package maintenance

import (
	"context"
	"log/slog"
	"time"
)

// SessionPruneInterval is how often expired dashboard sessions, refilled sign-in buckets, unusable portal
// links and old activity entries are deleted. Each is refused or ignored when read anyway, so pruning only
// keeps the tables small and need not be prompt.
const SessionPruneInterval = 10 * time.Minute

// Prune is a task deleting what has expired every interval; prune says how many rows went.
func Prune(name string, interval time.Duration, prune func(context.Context) (int64, error), log *slog.Logger) Task {
	return Task{Name: name, Interval: interval, Run: func(ctx context.Context) error {
		n, err := prune(ctx)
		if n > 0 {
			log.Debug("pruned", "task", name, "count", n)
		}
		return err
	}}
}

// AutoDisableInterval is how often failing subscriptions are checked: the contract wants the rule to act
// within a few seconds of its threshold.
const AutoDisableInterval = 5 * time.Second

// AutoDisable is the task disabling subscriptions whose attempts have only failed for longer than after.
func AutoDisable(disable func(ctx context.Context, after time.Duration) (int, error), after time.Duration, log *slog.Logger) Task {
	return Task{Name: "auto_disable", Interval: AutoDisableInterval, Run: func(ctx context.Context) error {
		n, err := disable(ctx, after)
		if err != nil {
			return err
		}
		if n > 0 {
			log.Warn("subscriptions disabled: only failures for too long", "count", n, "after", after)
		}
		return nil
	}}
}
