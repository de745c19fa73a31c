package bounded

import (
	"context"
	"errors"
	"testing"
	"time"
)

// noWait is an injected wait that records the backoffs asked for and returns at once.
func noWait(waits *[]time.Duration) func(context.Context, time.Duration) bool {
	return func(ctx context.Context, d time.Duration) bool {
		*waits = append(*waits, d)
		return ctx.Err() == nil
	}
}

func TestDoCountsFailuresAndGivesUp(t *testing.T) {
	t.Parallel()
	var waits []time.Duration
	boom := errors.New("boom")
	tries := 0
	err := Do(context.Background(), Policy{Tries: 3, Wait: noWait(&waits)}, func(context.Context) error {
		tries++
		return boom
	})
	if !errors.Is(err, ErrGaveUp) || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want ErrGaveUp wrapping boom", err)
	}
	if tries != 3 {
		t.Errorf("%d tries, want 3", tries)
	}
	if len(waits) != 2 || waits[0] != 100*time.Millisecond || waits[1] != 200*time.Millisecond {
		t.Errorf("waits %v, want [100ms 200ms]", waits)
	}
}

func TestDoSucceedsAfterAFailure(t *testing.T) {
	t.Parallel()
	var waits []time.Duration
	tries := 0
	err := Do(context.Background(), Policy{Wait: noWait(&waits)}, func(context.Context) error {
		tries++
		if tries == 1 {
			return errors.New("once")
		}
		return nil
	})
	if err != nil || tries != 2 {
		t.Fatalf("err %v after %d tries, want nil after 2", err, tries)
	}
}

// Each try runs under its own deadline: a try that blocks ends at PerTry and counts as a failure.
func TestDoBoundsEachTry(t *testing.T) {
	t.Parallel()
	var waits []time.Duration
	var deadlines []time.Duration
	err := Do(context.Background(), Policy{PerTry: 20 * time.Millisecond, Tries: 2, Wait: noWait(&waits)}, func(ctx context.Context) error {
		d, ok := ctx.Deadline()
		if !ok {
			t.Fatal("a try without a deadline")
		}
		deadlines = append(deadlines, time.Until(d))
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, ErrGaveUp) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	for _, d := range deadlines {
		if d > 20*time.Millisecond {
			t.Errorf("a try's deadline %s away, want at most 20ms", d)
		}
	}
}

// A failure the policy calls the database being away is not counted: the statement is tried until the
// caller's context ends.
func TestDoKeepsTryingWhileAway(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tries := 0
	away := errors.New("connection refused")
	err := Do(ctx, Policy{
		Tries: 1,
		Away:  func(context.Context, error) bool { return true },
		Wait: func(ctx context.Context, _ time.Duration) bool {
			if tries == 10 {
				cancel()
			}
			return ctx.Err() == nil
		},
	}, func(context.Context) error {
		tries++
		return away
	})
	if tries != 10 || !errors.Is(err, away) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrGaveUp) {
		t.Fatalf("after %d tries err = %v, want 10 tries ending with the caller's cancel", tries, err)
	}
}

func TestDoReturnsPermanentErrorsAtOnce(t *testing.T) {
	t.Parallel()
	bad := errors.New("violates a constraint")
	tries := 0
	err := Do(context.Background(), Policy{Tries: 5}, func(context.Context) error {
		tries++
		return Permanent(bad)
	})
	if tries != 1 || err != bad {
		t.Fatalf("after %d tries err = %v, want bad after one", tries, err)
	}
}
