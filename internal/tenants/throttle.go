package tenants

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LoginThrottle limits the dashboard's sign-in tries per email and per client address: a burst, then one more per
// interval. The buckets live in PostgreSQL (login_throttle) so every process shares them, and a try is
// reserved before the password is checked: parallel requests queue on the key's row and at most the burst
// of them reach bcrypt. A sign-in that succeeds gives its tries back, so only failures use the allowance.
type LoginThrottle struct {
	pool     *pgxpool.Pool
	now      func() time.Time
	perEmail int
	perAddr  int
	every    time.Duration
}

// NewLoginThrottle returns a throttle: perEmail and perAddr tries at once (default 5 and 20), then one more
// every interval (default 30 s).
func NewLoginThrottle(pool *pgxpool.Pool, now func() time.Time, perEmail, perAddr int, every time.Duration) *LoginThrottle {
	if perEmail <= 0 {
		perEmail = 5
	}
	if perAddr <= 0 {
		perAddr = 20
	}
	if every <= 0 {
		every = 30 * time.Second
	}
	return &LoginThrottle{pool: pool, now: now, perEmail: perEmail, perAddr: perAddr, every: every}
}

type throttleKey struct {
	key   string
	burst int
}

// keys are the email's and the address's buckets, always in this order, so that two transactions
// reserving the same keys lock their rows in the same order and cannot deadlock.
func (t *LoginThrottle) keys(email, addr string) []throttleKey {
	return []throttleKey{{"email:" + strings.ToLower(email), t.perEmail}, {"addr:" + addrBucket(addr), t.perAddr}}
}

// addrBucket is whose tries an address spends: an IPv4 address its own, an IPv6 address its /64's. A
// home or a server is routinely given a whole /64, so counting each of its 2^64 addresses apart would
// give one client an unlimited number of tries.
func addrBucket(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return addr
	}
	return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String()
}

func (t *LoginThrottle) interval() pgtype.Interval {
	return pgtype.Interval{Microseconds: t.every.Microseconds(), Valid: true}
}

// Reserve spends one try of the email and one of the address, both or neither. When either bucket is
// empty it spends nothing and returns how long until both allow a try again.
func (t *LoginThrottle) Reserve(ctx context.Context, email, addr string) (time.Duration, error) {
	now := t.now()
	keys := t.keys(email, addr)
	refused, err := func() (bool, error) {
		tx, err := t.pool.Begin(ctx)
		if err != nil {
			return false, err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		q := db.New(tx)
		for _, k := range keys {
			_, err := q.ReserveLoginTry(ctx, db.ReserveLoginTryParams{
				Key: k.key, NextAt: now.Add(t.every), Every: t.interval(),
				LimitAt: now.Add(time.Duration(k.burst-1) * t.every),
			})
			if errors.Is(err, pgx.ErrNoRows) {
				return true, nil // the rollback undoes the keys already spent
			}
			if err != nil {
				return false, err
			}
		}
		return false, tx.Commit(ctx)
	}()
	if err != nil || !refused {
		return 0, err
	}
	rows, err := db.New(t.pool).LoginThrottleState(ctx, []string{keys[0].key, keys[1].key})
	if err != nil {
		return 0, err
	}
	wait := time.Nanosecond // refilled in the meantime: still refused, but only just
	for _, row := range rows {
		for _, k := range keys {
			if k.key == row.Key {
				wait = max(wait, row.AllowedAt.Sub(now.Add(time.Duration(k.burst-1)*t.every)))
			}
		}
	}
	return wait, nil
}

// Succeeded gives a sign-in's tries back: the email's failures are forgotten, the address gets its try.
func (t *LoginThrottle) Succeeded(ctx context.Context, email, addr string) error {
	keys := t.keys(email, addr)
	q := db.New(t.pool)
	if err := q.ForgetLoginKey(ctx, keys[0].key); err != nil {
		return err
	}
	return q.ReleaseLoginTry(ctx, db.ReleaseLoginTryParams{Key: keys[1].key, Every: t.interval()})
}

// Prune deletes the buckets that have refilled: a full bucket acts like no row, so pruning only keeps the
// table small.
func (t *LoginThrottle) Prune(ctx context.Context) (int64, error) {
	return db.New(t.pool).DeleteFullLoginBuckets(ctx, t.now())
}
