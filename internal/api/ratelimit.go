package api

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/sleep"
	"golang.org/x/time/rate"
)

// TokenLimits limits each tenant token's API requests to this process (HOOKLINE_API_RATE_PER_SECOND,
// HOOKLINE_API_BURST, HOOKLINE_API_RATE_WAIT): a token bucket per token id, held in memory. A request over
// the rate is first held for its turn, up to the wait, and refused only past that: clients that wait out
// Retry-After all come back in the same instant, and their bursts, not their rate, were what slowed
// everyone else; held requests go through one by one at the rate instead. Each process keeps its own buckets, so
// N processes behind a load balancer allow N times the rate; that is the price of never asking the
// database whether a request may proceed. A nil *TokenLimits limits nothing.
type TokenLimits struct {
	limit   rate.Limit
	burst   int
	maxWait time.Duration
	now     func() time.Time
	// Sleep holds a request for its turn; false when ctx ended first (sleep.For unless a test sets it).
	Sleep func(ctx context.Context, d time.Duration) bool
	// idle is how long a bucket may go unused before it is dropped: long enough to have refilled, so a
	// dropped bucket and the fresh one made on the token's next request are the same.
	idle time.Duration

	mu        sync.Mutex
	buckets   map[uuid.UUID]*tokenBucket
	lastSweep time.Time
}

type tokenBucket struct {
	lim      *rate.Limiter
	lastUsed time.Time
}

// minIdle keeps a bucket at least this long, so a steady trickle of requests does not churn the map.
const minIdle = time.Minute

// NewTokenLimits returns limits of perSecond requests per token with bursts of burst, holding a request
// over the rate up to maxWait for its turn, on the clock now (time.Now when nil); nil when perSecond is 0
// (no limit).
func NewTokenLimits(perSecond float64, burst int, maxWait time.Duration, now func() time.Time) *TokenLimits {
	if perSecond <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	burst = max(burst, 1)
	refill := time.Duration(math.Ceil(float64(burst) / perSecond * float64(time.Second)))
	return &TokenLimits{limit: rate.Limit(perSecond), burst: burst, maxWait: max(maxWait, 0), now: now, Sleep: sleep.For,
		idle: max(refill, minIdle), buckets: map[uuid.UUID]*tokenBucket{}}
}

// Take takes one request from token's bucket. ok: the request may go after wait (0 within the burst; its
// turn, at most the limits' wait, when over the rate), and cancel gives the turn back if it goes away while
// held. Not ok: the turn is further off than the wait; nothing is taken (a client that keeps knocking is
// not pushed further back) and wait says how long until the bucket holds a request again.
func (l *TokenLimits) Take(token uuid.UUID) (wait time.Duration, cancel func(), ok bool) {
	if l == nil {
		return 0, func() {}, true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evictIdle(now)
	b := l.buckets[token]
	if b == nil {
		b = &tokenBucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[token] = b
	}
	b.lastUsed = now
	r := b.lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d > l.maxWait {
		r.CancelAt(now)
		return d, func() {}, false
	}
	return d, func() { l.mu.Lock(); defer l.mu.Unlock(); r.CancelAt(l.now()) }, true
}

// evictIdle drops the buckets unused for l.idle, scanning the map at most once per l.idle: the map holds
// the tokens seen within the last two idle periods, whatever the number of tokens ever seen.
func (l *TokenLimits) evictIdle(now time.Time) {
	if now.Sub(l.lastSweep) < l.idle {
		return
	}
	l.lastSweep = now
	for id, b := range l.buckets {
		if now.Sub(b.lastUsed) >= l.idle {
			delete(l.buckets, id)
		}
	}
}

// Rate is the limit in words, such as "50" or "0.5" (requests per second).
func (l *TokenLimits) Rate() string { return strconv.FormatFloat(float64(l.limit), 'f', -1, 64) }

// Burst is the most requests a token may send at once.
func (l *TokenLimits) Burst() int { return l.burst }

// Len is the number of buckets held.
func (l *TokenLimits) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
