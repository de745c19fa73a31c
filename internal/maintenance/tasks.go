package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookline/hookline/internal/bounded"
)

// Statement is how a task's statements run (bounded.Do): each try within 30 s, three counted failures.
// A maintenance statement may delete or update many rows, and is safe to try again: it acts on what is
// still due when it runs.
var Statement = bounded.Policy{PerTry: 30 * time.Second, Tries: 3}

// Do runs one statement of a task as Statement says, returning its result.
func Do[T any](ctx context.Context, statement func(context.Context) (T, error)) (T, error) {
	var out T
	err := bounded.Do(ctx, Statement, func(ctx context.Context) (err error) {
		out, err = statement(ctx)
		return err
	})
	return out, err
}

// SessionPruneInterval is how often expired dashboard sessions, refilled sign-in buckets, unusable portal
// links and old activity entries are deleted. Each is refused or ignored when read anyway, so pruning only
// keeps the tables small and need not be prompt.
const SessionPruneInterval = 10 * time.Minute

// Prune is a task deleting what has expired every interval; prune says how many rows went.
func Prune(name string, interval time.Duration, prune func(context.Context) (int64, error), log *slog.Logger) Task {
	return Task{Name: name, Interval: interval, Run: func(ctx context.Context) error {
		n, err := Do(ctx, prune)
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
		n, err := Do(ctx, func(ctx context.Context) (int, error) { return disable(ctx, after) })
		if err != nil {
			return err
		}
		if n > 0 {
			log.Warn("subscriptions disabled: only failures for too long", "count", n, "after", after)
		}
		return nil
	}}
}
