package subscriptions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/jackc/pgx/v5/pgxpool"
)

// UseKeys makes the service seal signing secrets and custom header values under box's first key
// (HOOKLINE_SECRET_KEY). Without it (or with a nil box) they are stored as plaintext.
func (s *Service) UseKeys(box *secretbox.Box) { s.box = box }

// Encrypted reports whether secrets and custom headers are sealed at rest (the admin page warns when not).
func (s *Service) Encrypted() bool { return s.box.Enabled() }

// sealHeaders is the stored form of custom headers: a JSON object whose names stay readable (the API
// shows them) and whose values are sealed.
func (s *Service) sealHeaders(h map[string]string) ([]byte, error) {
	out := make(map[string]string, len(h))
	for k, v := range canonicalHeaders(h) {
		sealed, err := s.box.Seal(v)
		if err != nil {
			return nil, err
		}
		out[k] = sealed
	}
	return json.Marshal(out)
}

// SealMode chooses what SealStored re-seals.
type SealMode int

const (
	// SealPlaintext seals only values still stored in plaintext: run at every start, so rows written
	// before a key was configured become sealed. Values under an older key are left for reencrypt, as
	// another instance may not have the newer key yet.
	SealPlaintext SealMode = iota
	// SealAll re-seals every value not under the first key (server reencrypt), so older keys can be dropped.
	SealAll
)

// SealCounts are how many rows SealStored changed.
type SealCounts struct {
	Secrets       int // subscription_secrets rows
	Subscriptions int // subscriptions whose custom headers or credentials changed
}

// sealBatch is how many rows one statement reads: small enough that a start with many plaintext rows
// holds no long transaction, large enough to be quick.
const sealBatch = 500

// SealStored seals stored signing secrets and custom header values under box's first key, in batches of
// single-row compare-and-set updates (a row changed meanwhile is left to the next run rather than
// overwritten). A value that cannot be opened (sealed under a key not configured) stops it with an error
// naming the row.
func SealStored(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, mode SealMode) (SealCounts, error) {
	var n SealCounts
	if !box.Enabled() {
		return n, nil
	}
	prefix := "enc:"
	if mode == SealAll {
		prefix = box.CurrentPrefix()
	}
	q := db.New(pool)
	for after := uuid.Nil; ; {
		rows, err := q.SecretsToSeal(ctx, db.SecretsToSealParams{After: after, Prefix: prefix, Max: sealBatch})
		if err != nil {
			return n, fmt.Errorf("seal secrets: %w", err)
		}
		for _, r := range rows {
			after = r.ID
			sealed, changed, err := box.Reseal(r.Secret)
			if err != nil {
				return n, fmt.Errorf("signing secret %s: %w", r.ID, err)
			}
			if !changed {
				continue
			}
			k, err := q.ReplaceStoredSecret(ctx, db.ReplaceStoredSecretParams{ID: r.ID, OldSecret: r.Secret, NewSecret: sealed})
			if err != nil {
				return n, fmt.Errorf("seal secrets: %w", err)
			}
			n.Secrets += int(k)
		}
		if len(rows) < sealBatch {
			break
		}
	}
	headers := sealedObject{what: "custom header",
		batch: func(ctx context.Context, after uuid.UUID) ([]objectRow, error) {
			rows, err := q.HeadersToSeal(ctx, db.HeadersToSealParams{After: after, Prefix: prefix, Max: sealBatch})
			out := make([]objectRow, len(rows))
			for i, r := range rows {
				out[i] = objectRow{r.ID, r.Headers}
			}
			return out, err
		},
		replace: func(ctx context.Context, id uuid.UUID, old, new []byte) (int64, error) {
			return q.ReplaceStoredHeaders(ctx, db.ReplaceStoredHeadersParams{ID: id, OldHeaders: old, NewHeaders: new})
		}}
	credentials := sealedObject{what: "credential",
		batch: func(ctx context.Context, after uuid.UUID) ([]objectRow, error) {
			rows, err := q.CredentialsToSeal(ctx, db.CredentialsToSealParams{After: after, Prefix: prefix, Max: sealBatch})
			out := make([]objectRow, len(rows))
			for i, r := range rows {
				out[i] = objectRow{r.ID, r.Credentials}
			}
			return out, err
		},
		replace: func(ctx context.Context, id uuid.UUID, old, new []byte) (int64, error) {
			return q.ReplaceStoredCredentials(ctx, db.ReplaceStoredCredentialsParams{ID: id, OldCredentials: old, NewCredentials: new})
		}}
	for _, obj := range []sealedObject{headers, credentials} {
		k, err := obj.seal(ctx, box, mode)
		if err != nil {
			return n, err
		}
		n.Subscriptions += k
	}
	return n, nil
}

// sealedObject is a subscription column holding a JSON object of sealed strings (custom headers, and the
// endpoint's credentials), read and replaced in batches by SealStored.
type sealedObject struct {
	what    string
	batch   func(ctx context.Context, after uuid.UUID) ([]objectRow, error)
	replace func(ctx context.Context, id uuid.UUID, old, new []byte) (int64, error)
}

type objectRow struct {
	id    uuid.UUID
	value []byte
}

// seal re-seals the object's values as SealStored's mode says, and counts the rows it changed.
func (o sealedObject) seal(ctx context.Context, box *secretbox.Box, mode SealMode) (int, error) {
	n := 0
	for after := uuid.Nil; ; {
		rows, err := o.batch(ctx, after)
		if err != nil {
			return n, fmt.Errorf("seal %ss: %w", o.what, err)
		}
		for _, r := range rows {
			after = r.id
			var h map[string]string
			if err := json.Unmarshal(r.value, &h); err != nil {
				return n, fmt.Errorf("%ss of subscription %s: %w", o.what, r.id, err)
			}
			changedAny := false
			for name, v := range h {
				if mode == SealPlaintext && secretbox.IsSealed(v) {
					continue
				}
				sealed, changed, err := box.Reseal(v)
				if err != nil {
					return n, fmt.Errorf("%s %s of subscription %s: %w", o.what, name, r.id, err)
				}
				h[name], changedAny = sealed, changedAny || changed
			}
			if !changedAny {
				continue
			}
			b, _ := json.Marshal(h)
			k, err := o.replace(ctx, r.id, r.value, b)
			if err != nil {
				return n, fmt.Errorf("seal %ss: %w", o.what, err)
			}
			n += int(k)
		}
		if len(rows) < sealBatch {
			return n, nil
		}
	}
}

// Unreadable counts the stored values sealed under none of box's keys (all sealed ones without a key):
// their subscriptions' deliveries wait until the key is configured again.
func Unreadable(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box) (SealCounts, error) {
	r, err := db.New(pool).CountSealedUnderOtherKeys(ctx, box.Prefixes())
	if err != nil {
		return SealCounts{}, fmt.Errorf("count unreadable secrets: %w", err)
	}
	return SealCounts{Secrets: int(r.Secrets), Subscriptions: int(r.Subscriptions)}, nil
}
