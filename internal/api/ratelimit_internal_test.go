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
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewTokenLimits(10, 20, 0, func() time.Time { return now })
	if l.idle != minIdle {
		t.Fatalf("idle %v, want %v (20 requests refill in 2 s)", l.idle, minIdle)
	}
	const step = 6 * time.Millisecond
	bound := int(2*minIdle/step) + 1
	most := 0
	for range 100_000 {
		if ok, _ := allow(l, uuid.New()); !ok {
			t.Fatal("a new token was refused")
		}
		most = max(most, l.Len())
		now = now.Add(step)
	}
	if most > bound {
		t.Errorf("held %d buckets at most, want at most %d", most, bound)
	}
	now = now.Add(minIdle)
	allow(l, uuid.New())
	if n := l.Len(); n != 1 {
		t.Errorf("%d buckets after every other token went idle, want 1", n)
	}
}

// A slow rate keeps its bucket until it has refilled: forgetting it sooner would hand a limited token a
// fresh burst.
func TestTokenLimitsKeepBucketsUntilRefilled(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewTokenLimits(0.01, 2, 0, func() time.Time { return now }) // refills in 200 s
	tok := uuid.New()
	allow(l, tok)
	allow(l, tok)
	if ok, after := allow(l, tok); ok || after != 100*time.Second {
		t.Fatalf("third request: %v, retry after %v; want refused for 100 s", ok, after)
	}
	now = now.Add(150 * time.Second)
	allow(l, uuid.New()) // a sweep runs: past minIdle, not past the refill
	if ok, _ := allow(l, tok); !ok {
		t.Fatal("after 150 s one request has refilled")
	}
	if ok, _ := allow(l, tok); ok {
		t.Error("a second request was allowed: the bucket was forgotten before it refilled")
	}
	if NewTokenLimits(0, 5, 0, nil) != nil {
		t.Error("rate 0 made limits")
	}
	var off *TokenLimits
	if ok, _ := allow(off, tok); !ok {
		t.Error("no limits refused a request")
	}
}

// allow takes a request without waiting for a turn: ok, or refused with the wait.
func allow(l *TokenLimits, tok uuid.UUID) (bool, time.Duration) {
	d, _, ok := l.Take(tok)
	return ok, d
}

// Over the rate a request is given its turn, up to the wait: one after another they are spaced at the
// rate; past the wait nothing is taken; a request that goes away while held gives its turn back.
func TestTokenLimitsHoldRequestsForTheirTurn(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewTokenLimits(10, 1, 250*time.Millisecond, func() time.Time { return now }) // one every 100 ms
	tok := uuid.New()
	var cancels []func()
	for i, want := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		d, cancel, ok := l.Take(tok)
		if !ok || d != want {
			t.Fatalf("request %d: wait %v, ok %v; want %v", i+1, d, ok, want)
		}
		cancels = append(cancels, cancel)
	}
	if d, _, ok := l.Take(tok); ok || d != 300*time.Millisecond {
		t.Fatalf("the fourth request: wait %v, ok %v; want refused, its turn 300 ms off", d, ok)
	}
	if d, _, ok := l.Take(tok); ok || d != 300*time.Millisecond {
		t.Fatalf("a refused request took a turn: the next is %v off", d)
	}
	cancels[2]() // the third went away while it waited
	if d, _, ok := l.Take(tok); !ok || d != 200*time.Millisecond {
		t.Fatalf("after a held request went away: wait %v, ok %v; want its turn, 200 ms", d, ok)
	}
	if d, _, ok := l.Take(uuid.New()); !ok || d != 0 {
		t.Errorf("another token waited %v", d)
	}
}
