package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookline/hookline/internal/db"
)

// SessionPruneInterval is how often expired dashboard sessions are deleted. scs refuses expired sessions
// on read, so pruning only keeps the table small and need not be prompt.
const SessionPruneInterval = 10 * time.Minute

// PruneSessions is the task deleting expired dashboard sessions (scs's own cleanup goroutine is off: it
// would run in every process and outlive the server's pool).
func PruneSessions(q *db.Queries, now func() time.Time, log *slog.Logger) Task {
	return Task{Name: "prune_sessions", Interval: SessionPruneInterval, Run: func(ctx context.Context) error {
		n, err := q.DeleteExpiredSessions(ctx, now())
		if err != nil {
			return err
		}
		if n > 0 {
			log.Info("pruned expired sessions", "count", n)
		}
		return nil
	}}
}

// LoginThrottlePruneInterval is how often refilled sign-in buckets are deleted. A refilled bucket acts like
// no row, so pruning only keeps the table small.
const LoginThrottlePruneInterval = 10 * time.Minute

// PruneLoginThrottle is the task deleting the dashboard's sign-in buckets that have refilled.
func PruneLoginThrottle(q *db.Queries, now func() time.Time, log *slog.Logger) Task {
	return Task{Name: "prune_login_throttle", Interval: LoginThrottlePruneInterval, Run: func(ctx context.Context) error {
		n, err := q.DeleteFullLoginBuckets(ctx, now())
		if err != nil {
			return err
		}
		if n > 0 {
			log.Debug("pruned refilled sign-in buckets", "count", n)
		}
		return nil
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
