package subscriptions_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/jackc/pgx/v5/pgxpool"
)

// stored reads what the tables hold for one subscription: its secrets (oldest first) and header values.
func stored(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) ([]string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	var secrets []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(secret ORDER BY created_at, id) FROM subscription_secrets WHERE subscription_id = $1`, id).Scan(&secrets); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := pool.QueryRow(ctx, `SELECT headers FROM subscriptions WHERE id = $1`, id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return secrets, h
}

func parseBox(t *testing.T, keys ...string) *secretbox.Box {
	t.Helper()
	b, err := secretbox.Parse(strings.Join(keys, ","))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openAll opens every stored value with box and fails the test if one does not open.
func openAll(t *testing.T, box *secretbox.Box, secrets []string, h map[string]string) ([]string, map[string]string) {
	t.Helper()
	var ps []string
	for _, s := range secrets {
		p, err := box.Open(s)
		if err != nil {
			t.Fatalf("secret %q: %v", s, err)
		}
		ps = append(ps, p)
	}
	ph := map[string]string{}
	for k, v := range h {
		p, err := box.Open(v)
		if err != nil {
			t.Fatalf("header %s %q: %v", k, v, err)
		}
		ph[k] = p
	}
	return ps, ph
}

// Secrets and custom header values are plaintext without a key, sealed once a key is configured (new
// rows at once, old rows by SealStored), re-sealed under a new first key by SealAll, and always open to
// the values the customer set; header names stay readable.
func TestSecretsAtRest(t *testing.T) {
	t.Parallel()
	ctx := activity.System(context.Background(), "test setup")
	// A database of its own: SealStored goes over every row, and the counts below are exact.
	pool, err := server.Connect(ctx, ownDatabase(t, "subs_atrest"), 4, server.PlanPerCall)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tn, err := tenants.NewService(pool, "").CreateTenant(ctx, "at rest")
	if err != nil {
		t.Fatal(err)
	}
	r := &atRest{pool: pool, tenant: tn.ID, url: "https://example.com/hook",
		headers: map[string]string{"x-api-key": "k_123", "X-Odd": "enc:v1:notreally:sealed"}}
	r.withoutAKey(t)
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	box1 := r.underAKey(t, k1)
	box21 := r.rotated(t, k2, k1, box1)

	// Reencrypt: every value under the new key; then the new key alone opens everything.
	n, err := subscriptions.SealStored(ctx, pool, box21, subscriptions.SealAll)
	if err != nil || n.Secrets != 2 || n.Subscriptions != 1 {
		t.Fatalf("SealAll: %+v, %v", n, err)
	}
	box2 := parseBox(t, k2)
	ss, h := stored(t, pool, r.sub)
	ps, ph := openAll(t, box2, ss, h)
	if ps[0] != r.secret1 || ps[1] != r.secret3 || ph["X-Api-Key"] != "k_123" || ph["X-Odd"] != r.headers["X-Odd"] {
		t.Fatalf("after reencrypt: %v %v", ps, ph)
	}
	ss2, h2 := stored(t, pool, r.sub2)
	if ps, ph := openAll(t, box2, ss2, h2); ps[0] != r.secret2 || ph["Authorization"] != "Bearer t" {
		t.Fatalf("after reencrypt: %v %v", ps, ph)
	}

	if bad, err := subscriptions.Unreadable(ctx, pool, box2); err != nil || bad != (subscriptions.SealCounts{}) {
		t.Fatalf("Unreadable with the right key: %+v, %v", bad, err)
	}
	if bad, _ := subscriptions.Unreadable(ctx, pool, parseBox(t, secretbox.NewKey())); bad != (subscriptions.SealCounts{Secrets: 3, Subscriptions: 2}) {
		t.Fatalf("Unreadable with another key: %+v, want 3 secrets and 2 subscriptions", bad)
	}
	if bad, _ := subscriptions.Unreadable(ctx, pool, nil); bad != (subscriptions.SealCounts{Secrets: 3, Subscriptions: 2}) {
		t.Fatalf("Unreadable without a key: %+v", bad)
	}

	// A key that is not configured: a clear error naming the row and the key.
	_, err = subscriptions.SealStored(ctx, pool, parseBox(t, secretbox.NewKey()), subscriptions.SealAll)
	if err == nil || !strings.Contains(err.Error(), box2.KeyIDs()[0]) || !strings.Contains(err.Error(), "not among") {
		t.Fatalf("unknown key: %v", err)
	}
}

// atRest is what TestSecretsAtRest's steps create and check: its subscriptions and the secrets they
// were given.
type atRest struct {
	pool                      *pgxpool.Pool
	tenant                    uuid.UUID
	url                       string
	headers                   map[string]string
	sub, sub2                 uuid.UUID
	secret1, secret2, secret3 string
}

// withoutAKey: with no key, a subscription's secret and headers are plaintext in the table (the
// look-alike value escaped).
func (r *atRest) withoutAKey(t *testing.T) {
	t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	plain := subscriptions.NewService(r.pool, time.Now, true)
	if plain.Encrypted() {
		t.Fatal("Encrypted without a key")
	}
	sub, secret1, err := plain.Create(ctx, r.tenant, subscriptions.Input{URL: &r.url, Headers: &r.headers})
	if err != nil {
		t.Fatal(err)
	}
	r.sub, r.secret1 = sub.ID, secret1
	ss, h := stored(t, r.pool, sub.ID)
	if ss[0] != secret1 || h["X-Api-Key"] != "k_123" || h["X-Odd"] != "plain:enc:v1:notreally:sealed" {
		t.Fatalf("without a key: secrets %v headers %v", ss, h)
	}
}

// underAKey: with key k1, new rows are sealed at once, old ones by SealStored.
func (r *atRest) underAKey(t *testing.T, k1 string) *secretbox.Box {
	t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	box1 := parseBox(t, k1)
	svc1 := subscriptions.NewService(r.pool, time.Now, true)
	svc1.UseKeys(box1)
	sub2, secret2, err := svc1.Create(ctx, r.tenant, subscriptions.Input{URL: &r.url, Headers: &r.headers})
	if err != nil {
		t.Fatal(err)
	}
	r.sub2, r.secret2 = sub2.ID, secret2
	if !strings.HasPrefix(secret2, "whsec_") {
		t.Fatalf("Create returns %q, want the plaintext secret", secret2)
	}
	if strings.Join(sub2.HeaderNames, ",") != "X-Api-Key,X-Odd" {
		t.Fatalf("header names %v", sub2.HeaderNames)
	}
	ss2, h2 := stored(t, r.pool, sub2.ID)
	if !strings.HasPrefix(ss2[0], box1.CurrentPrefix()) || !strings.HasPrefix(h2["X-Api-Key"], box1.CurrentPrefix()) {
		t.Fatalf("created with a key: secrets %v headers %v", ss2, h2)
	}
	n, err := subscriptions.SealStored(ctx, r.pool, box1, subscriptions.SealPlaintext)
	if err != nil || n.Secrets != 1 || n.Subscriptions != 1 {
		t.Fatalf("SealStored: %+v, %v", n, err)
	}
	ss, h := stored(t, r.pool, r.sub)
	for _, v := range append(ss, h["X-Api-Key"], h["X-Odd"]) {
		if !strings.HasPrefix(v, box1.CurrentPrefix()) {
			t.Fatalf("after SealStored, %q is not sealed under the key", v)
		}
	}
	if ps, ph := openAll(t, box1, ss, h); ps[0] != r.secret1 || ph["X-Api-Key"] != "k_123" || ph["X-Odd"] != r.headers["X-Odd"] {
		t.Fatalf("opened: %v %v", ps, ph)
	}
	if n, _ := subscriptions.SealStored(ctx, r.pool, box1, subscriptions.SealPlaintext); n != (subscriptions.SealCounts{}) {
		t.Fatalf("a second SealStored changed %+v", n)
	}
	got, err := svc1.Get(ctx, r.tenant, r.sub)
	if err != nil || strings.Join(got.HeaderNames, ",") != "X-Api-Key,X-Odd" {
		t.Fatalf("header names after sealing: %v %v", got.HeaderNames, err)
	}
	return box1
}

// rotated: with the new key k2 first and the old k1 second, the start pass leaves old-key values alone;
// new values use the new key; rotate returns the plaintext secret.
func (r *atRest) rotated(t *testing.T, k2, k1 string, box1 *secretbox.Box) *secretbox.Box {
	t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	box21 := parseBox(t, k2, k1)
	svc21 := subscriptions.NewService(r.pool, time.Now, true)
	svc21.UseKeys(box21)
	if n, _ := subscriptions.SealStored(ctx, r.pool, box21, subscriptions.SealPlaintext); n != (subscriptions.SealCounts{}) {
		t.Fatalf("the start pass re-sealed %+v values under an old key", n)
	}
	secret3, err := svc21.RotateSecret(ctx, r.tenant, r.sub)
	if err != nil || !strings.HasPrefix(secret3, "whsec_") {
		t.Fatalf("rotate: %q %v", secret3, err)
	}
	r.secret3 = secret3
	ss, _ := stored(t, r.pool, r.sub)
	if len(ss) != 2 || !strings.HasPrefix(ss[0], box1.CurrentPrefix()) || !strings.HasPrefix(ss[1], box21.CurrentPrefix()) {
		t.Fatalf("after rotation: %v", ss)
	}
	newHeaders := map[string]string{"Authorization": "Bearer t"}
	if _, err := svc21.Update(ctx, r.tenant, r.sub2, subscriptions.Input{Headers: &newHeaders}); err != nil {
		t.Fatal(err)
	}
	if _, h := stored(t, r.pool, r.sub2); !strings.HasPrefix(h["Authorization"], box21.CurrentPrefix()) {
		t.Fatalf("updated headers: %v", h)
	}
	return box21
}
