package tenants

// Revoking a token at once in every process.
//
// Each process trusts a token it found valid for knownFor without asking the database again: a publisher
// sends many requests a second, and the lookup was a third of a publish's round trips. A revocation must
// still hold everywhere as soon as DELETE /tokens/{id} answers. So:
//
//   - the revoking transaction NOTIFYs hookline_tokens with the token's id and a nonce (sent at its commit);
//   - every process LISTENs on its own connection (StartListening), drops the token from its cache and
//     answers with an acknowledgement of the nonce;
//   - the revocation answers once as many processes acknowledged as there are listening on the database
//     (counted in pg_stat_activity by the listener connections' application_name), or, should one not
//     answer (a process stopping, a listener reconnecting), once knownFor has passed since the commit: by
//     then no cache entry made before the commit is trusted anywhere;
//   - a process trusts its cache only while its listener is connected (it could miss a revocation
//     otherwise: it looks every token up instead), empties it whenever the listener connects or drops, and
//     keeps no lookup that was running when a revocation arrived (its snapshot may predate the commit).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/principal"
	"github.com/hookline/hookline/internal/sleep"
	"github.com/jackc/pgx/v5"
)

// knownFor is how long a token found valid is trusted without asking the database again, and so the
// longest a revocation waits for a process that does not acknowledge it.
const knownFor = 2 * time.Second

// listenerName is the application_name of every process's listener connection: the revocation counts them.
const listenerName = "hookline token revocations"

type knownToken struct {
	p     principal.Principal
	until time.Time
}

// tokenCache holds recent successful lookups (token hash → knownToken). gen moves on every forget, so a
// lookup that ran across one is not stored (put).
type tokenCache struct {
	mu      sync.RWMutex
	entries map[string]knownToken
	gen     uint64
}

func (c *tokenCache) get(hash string, now time.Time, live bool) (principal.Principal, bool) {
	if !live {
		return principal.Principal{}, false
	}
	c.mu.RLock()
	k, ok := c.entries[hash]
	c.mu.RUnlock()
	if !ok || !now.Before(k.until) {
		return principal.Principal{}, false
	}
	return k.p, true
}

// generation is read before a lookup and handed to put after it.
func (c *tokenCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put stores a lookup's result unless a revocation (or a listener change) arrived since gen was read.
func (c *tokenCache) put(hash string, k knownToken, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.entries[hash] = k
	}
}

// forget drops the cached lookups of one token.
func (c *tokenCache) forget(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for hash, k := range c.entries {
		if t, ok := k.p.Token(); ok && t == id {
			delete(c.entries, hash)
		}
	}
}

// clear drops every cached lookup.
func (c *tokenCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// listener is the state of the process's revocation listener.
type listener struct {
	connected atomic.Bool
	// waiters: a revocation's nonce → the channel its acknowledgements arrive on.
	waiters sync.Map
	stop    context.CancelFunc
	done    chan struct{}
}

// live reports whether the listener is connected, so the cache may be trusted.
func (l *listener) live() bool { return l.connected.Load() }

// await registers a revocation about to be made: its nonce and the channel its acknowledgements arrive on.
func (l *listener) await() (string, chan struct{}) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	acks := make(chan struct{}, 64)
	l.waiters.Store(nonce, acks)
	return nonce, acks
}

// doneWith forgets a revocation's nonce.
func (l *listener) doneWith(nonce string) { l.waiters.Delete(nonce) }

func revokedPayload(id uuid.UUID, nonce string) string { return "revoked:" + id.String() + ":" + nonce }

// awaitForgotten waits until every process listening for revocations acknowledged this one (acks), or
// until knownFor has passed since it committed, or until ctx ends.
func (s *Service) awaitForgotten(ctx context.Context, committed time.Time, acks <-chan struct{}) {
	bound := time.NewTimer(knownFor - time.Since(committed))
	defer bound.Stop()
	want, err := s.q.CountTokenListeners(ctx, listenerName)
	if err != nil {
		s.Log.Warn("could not count the processes to wait for after a token revocation; waiting out their caches", "err", err)
		want = -1
	}
	for got := int64(0); want < 0 || got < want; got++ {
		select {
		case <-acks:
		case <-bound.C:
			if want >= 0 {
				s.Log.Warn("a process did not acknowledge a token revocation; answered after its cache ran out",
					"listening", want, "acknowledged", got)
			}
			return
		case <-ctx.Done():
			return
		}
	}
}

// StartListening connects the process's revocation listener and keeps it connected (reconnecting after a
// second when it drops) until StopListening. It returns once the first connection listens, or after it
// failed; until a connection listens, tokens are looked up on every request.
func (s *Service) StartListening(ctx context.Context) {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.listener.stop, s.listener.done = stop, make(chan struct{})
	first := make(chan struct{})
	var once sync.Once
	ready := func() { once.Do(func() { close(first) }) }
	go func() {
		defer close(s.listener.done)
		defer ready()
		for ctx.Err() == nil {
			err := s.listen(ctx, ready)
			ready()
			if ctx.Err() != nil {
				return
			}
			s.Log.Warn("listening for token revocations failed; looking every token up until it reconnects", "err", err)
			sleep.For(ctx, time.Second)
		}
	}()
	<-first
}

// StopListening closes the listener and waits for it.
func (s *Service) StopListening() {
	if s.listener.stop == nil {
		return
	}
	s.listener.stop()
	<-s.listener.done
}

func (s *Service) listen(ctx context.Context, ready func()) error {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	q := db.New(conn)
	if err := q.ListenForTokenRevocations(ctx); err != nil {
		return err
	}
	// Revocations made while nothing listened were not heard: whatever was cached before goes.
	s.known.clear()
	s.listener.connected.Store(true)
	defer func() {
		s.listener.connected.Store(false)
		s.known.clear()
	}()
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		kind, rest, _ := strings.Cut(n.Payload, ":")
		switch kind {
		case "revoked":
			id, nonce, _ := strings.Cut(rest, ":")
			if tid, err := uuid.Parse(id); err == nil {
				s.known.forget(tid)
			} else {
				s.known.clear()
			}
			if err := q.NotifyTokens(ctx, "ack:"+nonce); err != nil {
				return err
			}
		case "ack":
			if w, ok := s.listener.waiters.Load(rest); ok {
				select {
				case w.(chan struct{}) <- struct{}{}:
				default: // more acknowledgements than listeners counted: the revocation has them all
				}
			}
		}
	}
}
