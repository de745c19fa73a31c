// Package bounded is the one way a background statement is run: each try within its own deadline, a
// limited number of counted failures, a growing wait between tries, and the caller's context as the
// outer bound (shutdown's deadline). River's completer does the same (withRetries, a timeout per try);
// here it is one helper so that no background loop is left with a statement that can hang for good.
package bounded

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/sleep"
)

// Policy says how a statement is retried. The zero value is usable: 3 tries of 5 s each.
type Policy struct {
	// PerTry is each try's deadline (default 5 s).
	PerTry time.Duration
	// Tries is how many counted failures end the retries (default 3).
	Tries int
	// Away, when set, says whether a failure is the database being away (down, failing over, silent):
	// such a failure is not counted, so the statement is tried again until ctx ends. The completer uses
	// it: its results are good, and the database coming back is what it waits for.
	Away func(ctx context.Context, err error) bool
	// Backoff is the wait after the try-th failure (counted from 0); default 100 ms doubling to 2 s.
	Backoff func(try int) time.Duration
	// OnRetry, when set, is told of each failure that will be tried again (for logs).
	OnRetry func(try int, err error, away bool)
	// Wait waits d or until ctx ends and says whether ctx is live; default sleep.For (tests inject one).
	Wait func(ctx context.Context, d time.Duration) bool
}

// ErrGaveUp wraps the last error when the counted failures reached Policy.Tries.
var ErrGaveUp = errors.New("gave up after its tries")

// Permanent marks an error that no retry can mend (bad input, a constraint): Do returns it at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Backoff is the default wait: 100 ms doubling each try, at most 2 s.
func Backoff(try int) time.Duration {
	return min(time.Duration(100<<min(try, 5))*time.Millisecond, 2*time.Second)
}

func (p Policy) withDefaults() Policy {
	if p.PerTry <= 0 {
		p.PerTry = 5 * time.Second
	}
	if p.Tries <= 0 {
		p.Tries = 3
	}
	if p.Backoff == nil {
		p.Backoff = Backoff
	}
	if p.Wait == nil {
		p.Wait = sleep.For
	}
	return p
}

// Do runs fn, each try under a context that ends after PerTry, until it succeeds, fails permanently,
// fails Tries counted times (ErrGaveUp wrapping the last error), or ctx ends (the last error, or ctx's).
func Do(ctx context.Context, p Policy, fn func(ctx context.Context) error) error {
	p = p.withDefaults()
	failed := 0
	for try := 0; ; try++ {
		tryCtx, cancel := context.WithTimeout(ctx, p.PerTry)
		err := fn(tryCtx)
		cancel()
		if err == nil {
			return nil
		}
		var perm permanent
		if errors.As(err, &perm) {
			return perm.error
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (and %w)", err, context.Cause(ctx))
		}
		away := p.Away != nil && p.Away(ctx, err)
		if !away {
			failed++
		}
		if failed >= p.Tries {
			return fmt.Errorf("%w: %w", ErrGaveUp, err)
		}
		if p.OnRetry != nil {
			p.OnRetry(try, err, away)
		}
		if !p.Wait(ctx, p.Backoff(try)) {
			return fmt.Errorf("%w (and %w)", err, context.Cause(ctx))
		}
	}
}
