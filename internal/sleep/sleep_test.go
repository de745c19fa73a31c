package sleep

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestForWaitsOrEndsWithContext(t *testing.T) {
	t.Parallel()
	if !For(context.Background(), time.Millisecond) {
		t.Error("a full wait says the context ended")
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	start := time.Now()
	if For(ctx, time.Hour) {
		t.Error("a cancelled wait says the context is live")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled wait took %s", d)
	}
}
