// Package session keeps the dashboard's sessions in PostgreSQL for scs: the store (Store, built once by the
// server and given to the dashboard), the session manager's settings (NewManager), a token's renewal that
// retires the old token instead of deleting it (Renew), and the middleware that never hands a retired token
// back (Stale).

package session

import (
	"context"
	"errors"
	"time"

	"github.com/hookline/hookline/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the dashboard's session store (scs's CtxStore) on PostgreSQL's sessions table, its SQL in
// db/query/sessions.sql. Beyond storing rows it does three things for the dashboard:
//
//   - A session's token renewed (Renew: at sign-in, on opening a portal link, when a portal session
//     ends) is retired rather than deleted: its row stays for renewGrace with its old data, never written
//     again, so a request the browser sent with the old cookie before it got the new one, to this process
//     or another, is answered as it would have been instead of landing on the sign-in form; and that
//     answer does not hand the old token back as a cookie (Stale). The old data is never more than
//     the old token already had, so a token planted before a sign-in (session fixation) gains nothing.
//   - Inside a transaction carried by the context (WithTx) it writes in that transaction: opening a portal
//     link stores the session in the transaction that uses the link up.
//   - It has no background goroutine (scs's pgxstore has one per process, outliving the server's pool): the
//     maintenance leader deletes expired rows (tenants.Service.PruneSessions).
type Store struct {
	q *db.Queries
}

// renewGrace is how long a renewed token's old row keeps answering.
const renewGrace = time.Minute

// NewStore is the store on pool; the server builds one and gives it to the dashboard.
func NewStore(pool *pgxpool.Pool) *Store {
	return &Store{q: db.New(pool)}
}

type (
	txKey       struct{} // a pgx.Tx the store writes in
	renewingKey struct{} // the context of a token renewal: the old token is retired, not deleted
	loadedKey   struct{} // *loadedSession, filled by FindCtx for Stale
)

// WithTx returns ctx whose session writes go to tx.
func WithTx(ctx context.Context, tx pgx.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// loadedSession is what FindCtx learnt of the request's session: the token it was found under, when that
// token had been renewed.
type loadedSession struct{ retired string }

func (s *Store) queries(ctx context.Context) *db.Queries {
	if tx, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return s.q.WithTx(tx)
	}
	return s.q
}

// FindCtx returns a live session's data.
func (s *Store) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	r, err := s.queries(ctx).FindSession(ctx, token)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if l, ok := ctx.Value(loadedKey{}).(*loadedSession); ok && r.Renewed {
		l.retired = token
	}
	return r.Data, true, nil
}

// CommitCtx stores a session's data (never a retired token's).
func (s *Store) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	return s.queries(ctx).CommitSession(ctx, db.CommitSessionParams{Token: token, Data: b, Expiry: expiry})
}

// DeleteCtx deletes a session (sign-out), or, in a renewal, retires its token.
func (s *Store) DeleteCtx(ctx context.Context, token string) error {
	if ctx.Value(renewingKey{}) != nil {
		return s.queries(ctx).RetireSession(ctx, db.RetireSessionParams{Token: token, GraceSeconds: renewGrace.Seconds()})
	}
	return s.queries(ctx).DeleteSession(ctx, token)
}

// Find, Commit and Delete complete scs.Store; scs calls the Ctx forms.
func (s *Store) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

func (s *Store) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

func (s *Store) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }
