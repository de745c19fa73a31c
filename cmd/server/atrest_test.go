package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5"
)

// received is one request at the test receiver.
type received struct {
	header http.Header
	body   []byte
}

// signedWith reports whether one of the request's v1 signatures is the HMAC under a whsec_ secret.
func (r received) signedWith(secret string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.header.Get("webhook-id") + "." + r.header.Get("webhook-timestamp") + "."))
	mac.Write(r.body)
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.header.Get("webhook-signature")) {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return true
		}
	}
	return false
}

// startInstance runs the real binary on the test's database with the given HOOKLINE_SECRET_KEY.
func startInstance(t *testing.T, bin, dbURL, keys string) *process {
	t.Helper()
	p := startProcess(t, bin, "DATABASE_URL="+dbURL, "HOOKLINE_ADMIN_TOKEN=t0ken",
		"HOOKLINE_ALLOW_PRIVATE_NETWORKS=true", "HOOKLINE_SECRET_KEY="+keys, "HOOKLINE_LOG_FORMAT=text")
	waitReady(t, p.base)
	return p
}

// atRest is the key rotation's database, receiver and subscription.
type atRest struct {
	t           *testing.T
	bin, url    string
	got         chan received
	receiver    string
	tenant, sub string
}

// stored is what the database holds of the subscription's secrets and custom header.
func (a *atRest) stored() (secrets []string, header string) {
	t := a.t
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT array_agg(secret ORDER BY created_at, id) FROM subscription_secrets`).Scan(&secrets); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT headers->>'X-Api-Key' FROM subscriptions`).Scan(&header); err != nil {
		t.Fatal(err)
	}
	return secrets, header
}

// deliver publishes one event and checks what the receiver got: signed with every one of secrets, the
// custom header in plaintext.
func (a *atRest) deliver(in *process, secrets ...string) {
	t := a.t
	t.Helper()
	call(t, in.base, "POST", "/api/v1/tenants/"+a.tenant+"/events", `{"event_type":"a.b","payload":{"n":1}}`)
	select {
	case r := <-a.got:
		for _, s := range secrets {
			if !r.signedWith(s) {
				t.Fatalf("not signed with %s…: %q\n%s", s[:10], r.header.Get("webhook-signature"), in.logs)
			}
		}
		if v := r.header.Get("X-Api-Key"); v != "k_live_123" {
			t.Fatalf("custom header X-Api-Key = %q, want the plaintext", v)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("nothing delivered\n%s", in.logs)
	}
}

// stop stops an instance with SIGTERM; it must exit 0.
func (a *atRest) stop(in *process) { a.t.Helper(); in.sigterm(a.t, time.Minute) }

// The whole life of secrets at rest through the real binary: written in plaintext without a key, sealed
// when a key is configured, readable through a rotation of keys, re-encrypted by `server reencrypt`,
// and the old key dropped, with every delivery on the way signed with the plaintext secrets and carrying
// the plaintext custom header.
func TestSecretsAtRestAcrossKeyRotation(t *testing.T) {
	t.Parallel()
	a := &atRest{t: t, bin: buildServer(t), got: make(chan received, 16)}
	// A database of its own: every row in it must end up under the expected key.
	url, drop, err := testdb.Create(context.Background(), "cmd_atrest")
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	a.url = url
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a.got <- received{r.Header.Clone(), b}
	}))
	defer receiver.Close()
	a.receiver = receiver.URL
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	secret1, secret2 := a.sealAndRotate(k1, k2)
	a.reencryptAndDrop(k1, k2, secret1, secret2)
}

// sealAndRotate runs without a key, then with k1, then with k2 before k1 (rotating the secret), and
// returns the two secrets.
func (a *atRest) sealAndRotate(k1, k2 string) (secret1, secret2 string) {
	t := a.t
	box1, _ := secretbox.Parse(k1)
	box2, _ := secretbox.Parse(k2)
	// 1. No key: plaintext in the table, a loud warning.
	in := startInstance(t, a.bin, a.url, "")
	a.tenant = call(t, in.base, "POST", "/api/v1/tenants", `{"name":"at rest"}`)["id"].(string)
	created := call(t, in.base, "POST", "/api/v1/tenants/"+a.tenant+"/subscriptions",
		fmt.Sprintf(`{"url":%q,"headers":{"X-Api-Key":"k_live_123"}}`, a.receiver))
	a.sub = created["id"].(string)
	secret1 = created["secret"].(string)
	if ss, h := a.stored(); len(ss) != 1 || ss[0] != secret1 || h != "k_live_123" {
		t.Fatalf("without a key: %v %q", ss, h)
	}
	a.deliver(in, secret1)
	a.stop(in)
	if !strings.Contains(in.logs.String(), "UNENCRYPTED") {
		t.Fatalf("no warning without a key:\n%s", in.logs)
	}

	// 2. A key: the plaintext rows are sealed at start; deliveries unchanged.
	in = startInstance(t, a.bin, a.url, k1)
	if ss, h := a.stored(); !strings.HasPrefix(ss[0], "enc:v1:"+box1.KeyIDs()[0]+":") || !strings.HasPrefix(h, box1.CurrentPrefix()) {
		t.Fatalf("not sealed at start: %v %q", ss, h)
	}
	a.deliver(in, secret1)
	a.stop(in)
	if strings.Contains(in.logs.String(), "UNENCRYPTED") {
		t.Fatal("warned although a key is configured")
	}

	// 3. Rotation: new key first, old second. Old values still open; a rotated secret is sealed under the
	// new key and both secrets sign.
	in = startInstance(t, a.bin, a.url, k2+","+k1)
	a.deliver(in, secret1)
	secret2 = call(t, in.base, "POST", "/api/v1/tenants/"+a.tenant+"/subscriptions/"+a.sub+"/rotate-secret", "")["secret"].(string)
	if !strings.HasPrefix(secret2, "whsec_") {
		t.Fatalf("rotate answered %q, want the plaintext secret", secret2)
	}
	if ss, _ := a.stored(); len(ss) != 2 || !strings.HasPrefix(ss[0], box1.CurrentPrefix()) || !strings.HasPrefix(ss[1], box2.CurrentPrefix()) {
		t.Fatalf("after rotation: %v", ss)
	}
	a.deliver(in, secret1, secret2)
	a.stop(in)
	return secret1, secret2
}

// reencryptAndDrop re-encrypts under k2, runs with k2 alone, then with a key that sealed nothing.
func (a *atRest) reencryptAndDrop(k1, k2, secret1, secret2 string) {
	t := a.t
	box2, _ := secretbox.Parse(k2)
	// 4. reencrypt: every row under the new key.
	cmd := exec.Command(a.bin, "reencrypt")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+a.url, "HOOKLINE_SECRET_KEY="+k2+","+k1, "HOOKLINE_LOG_FORMAT=text")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reencrypt: %v\n%s", err, out)
	}
	ss, h := a.stored()
	for _, v := range append(ss, h) {
		if !strings.HasPrefix(v, box2.CurrentPrefix()) {
			t.Fatalf("after reencrypt, %q is not under the new key", v)
		}
	}

	// 5. Only the new key: everything still works, and nothing is reported unreadable.
	in := startInstance(t, a.bin, a.url, k2)
	a.deliver(in, secret1, secret2)
	a.stop(in)
	if strings.Contains(in.logs.String(), "missing from HOOKLINE_SECRET_KEY") || strings.Contains(in.logs.String(), "cannot decrypt") {
		t.Fatalf("values unreadable with the new key alone:\n%s", in.logs)
	}

	// 6. A key that sealed nothing: start is fine, the unreadable values are reported, nothing is sent.
	in = startInstance(t, a.bin, a.url, secretbox.NewKey())
	call(t, in.base, "POST", "/api/v1/tenants/"+a.tenant+"/events", `{"event_type":"a.b","payload":{}}`)
	select {
	case r := <-a.got:
		t.Fatalf("delivered without the key: %v", r.header)
	case <-time.After(2 * time.Second):
	}
	a.stop(in)
	if !strings.Contains(in.logs.String(), "missing from HOOKLINE_SECRET_KEY") || !strings.Contains(in.logs.String(), "cannot decrypt") {
		t.Fatalf("unreadable values not reported:\n%s", in.logs)
	}
}
