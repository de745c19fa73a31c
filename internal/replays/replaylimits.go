package replays

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/hookline/hookline/internal/sleep"
)

// Recover previews (dry runs) are limited per subscription, per process: RecoverPreviewBurst at once, then
// one every RecoverPreviewEvery. A preview counts the subscription's dead deliveries and writes an audit
// row; the limit stops a script or a held-down button from filling the audit log. It is an x/time/rate
// limiter in memory rather than a PostgreSQL bucket like the resend limit: a bucket in the database would
// itself write a row per preview, the very cost being limited, and with N processes the worst case is N
// times the limit, still a handful a minute.
const (
	RecoverPreviewBurst = 5
	RecoverPreviewEvery = 12 * time.Second
	// previewLimitersMax bounds the limiters kept; past it, those that have refilled are dropped (a full
	// limiter is the same as none).
	previewLimitersMax = 10000
)

type previewLimiter struct {
	mu   sync.Mutex
	subs map[uuid.UUID]*rate.Limiter
}

// take spends one preview of the subscription at now, or says how long until one is available.
func (l *previewLimiter) take(subID uuid.UUID, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs == nil {
		l.subs = map[uuid.UUID]*rate.Limiter{}
	}
	lim, ok := l.subs[subID]
	if !ok {
		if len(l.subs) >= previewLimitersMax {
			for id, x := range l.subs {
				if x.TokensAt(now) >= RecoverPreviewBurst {
					delete(l.subs, id)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(RecoverPreviewEvery), RecoverPreviewBurst)
		l.subs[subID] = lim
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// DefaultReplayChunksPerSecond is how many replay chunks (of ReplayChunkSize deliveries) one process's
// runner moves per second at most, over all the replays it works: 5,000 deliveries a second, so that a
// large replay leaves the database to the workers that deliver (their claims and completions wait on the
// same rows and WAL) instead of starving them.
const DefaultReplayChunksPerSecond = 5

// chunkPacer spaces the runner's chunks with a token bucket (burst 1): the first chunk goes at once, the
// next when the bucket has refilled. It is per process. now and sleep are the runner's clock, so a test
// can run it on a fake one.
type chunkPacer struct {
	lim   *rate.Limiter
	now   func() time.Time
	sleep func(context.Context, time.Duration)
}

// newChunkPacer paces perSecond chunks a second; 0 or less does not pace.
func newChunkPacer(perSecond float64) *chunkPacer {
	limit := rate.Limit(perSecond)
	if perSecond <= 0 {
		limit = rate.Inf
	}
	return &chunkPacer{lim: rate.NewLimiter(limit, 1), now: time.Now, sleep: sleepFor}
}

// wait returns when the next chunk may go (or ctx ends).
func (p *chunkPacer) wait(ctx context.Context) {
	now := p.now()
	if d := p.lim.ReserveN(now, 1).DelayFrom(now); d > 0 {
		p.sleep(ctx, d)
	}
}

// sleepFor is sleep.For without its answer, the pacer's sleep.
func sleepFor(ctx context.Context, d time.Duration) { sleep.For(ctx, d) }
