package api

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// The buckets are bounded by the tokens active lately, not by every token ever seen: a stream of new
// tokens, one every 6 ms for 10 minutes on the injected clock, never holds more than two idle periods'
// worth, and a token idle long enough to have refilled is forgotten.
func TestTokenLimitsForgetIdleTokens(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewTokenLimits(10, 20, func() time.Time { return now })
	if l.idle != minIdle {
		t.Fatalf("idle %v, want %v (20 requests refill in 2 s)", l.idle, minIdle)
	}
	const step = 6 * time.Millisecond
	bound := int(2*minIdle/step) + 1
	most := 0
	for range 100_000 {
		if ok, _ := l.Allow(uuid.New()); !ok {
			t.Fatal("a new token was refused")
		}
		most = max(most, l.Len())
		now = now.Add(step)
	}
	if most > bound {
		t.Errorf("held %d buckets at most, want at most %d", most, bound)
	}
	now = now.Add(minIdle)
	l.Allow(uuid.New())
	if n := l.Len(); n != 1 {
		t.Errorf("%d buckets after every other token went idle, want 1", n)
	}
}

// A slow rate keeps its bucket until it has refilled: forgetting it sooner would hand a limited token a
// fresh burst.
func TestTokenLimitsKeepBucketsUntilRefilled(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewTokenLimits(0.01, 2, func() time.Time { return now }) // refills in 200 s
	tok := uuid.New()
	l.Allow(tok)
	l.Allow(tok)
	if ok, after := l.Allow(tok); ok || after != 100*time.Second {
		t.Fatalf("third request: %v, retry after %v; want refused for 100 s", ok, after)
	}
	now = now.Add(150 * time.Second)
	l.Allow(uuid.New()) // a sweep runs: past minIdle, not past the refill
	if ok, _ := l.Allow(tok); !ok {
		t.Fatal("after 150 s one request has refilled")
	}
	if ok, _ := l.Allow(tok); ok {
		t.Error("a second request was allowed: the bucket was forgotten before it refilled")
	}
	if NewTokenLimits(0, 5, nil) != nil {
		t.Error("rate 0 made limits")
	}
	var off *TokenLimits
	if ok, _ := off.Allow(tok); !ok {
		t.Error("no limits refused a request")
	}
}
