package delivery_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/subscriptions"
)

// With secrets sealed at rest, the worker opens them: the receiver gets the signature of the plaintext
// secret and the plaintext custom header. A worker without the key records no attempt and postpones the
// delivery instead of sending it unsigned.
func TestWorkerOpensSealedSecretsAndHeaders(t *testing.T) {
	t.Parallel()
	e, box := setupSealed(t)
	rc := newReceiver(t, nil)
	headers := map[string]string{"X-Customer-Token": "tok_sealed"}
	sub, secret := e.subscribe(rc.URL(), subscriptions.Input{Headers: &headers})
	if n := e.count(`SELECT count(*) FROM subscription_secrets WHERE subscription_id = $1 AND secret LIKE 'enc:v1:%'`, sub.ID); n != 1 {
		t.Fatalf("%d sealed secrets stored, want 1", n)
	}

	// No key: postponed, nothing sent, no attempt.
	p := e.publish("order.created", `{}`)
	id := uuid.MustParse(p.Deliveries[0].ID)
	if n := e.runOnce(e.worker(delivery.WorkerOptions{}, nil)); n != 1 {
		t.Fatalf("RunOnce handled %d, want 1", n)
	}
	if len(rc.requests()) != 0 || len(e.attempts(id)) != 0 {
		t.Fatalf("without the key: %d requests, %d attempts; want none", len(rc.requests()), len(e.attempts(id)))
	}
	if d := e.delivery(id); d.State != string(delivery.Pending) || !d.NextAttemptAt.After(e.clock.Now()) {
		t.Fatalf("without the key: state %s next %v, want pending later", d.State, d.NextAttemptAt)
	}

	e.clock.Advance(2 * 60e9)
	if n := e.runOnce(e.worker(delivery.WorkerOptions{Open: box.Open}, nil)); n != 1 {
		t.Fatalf("RunOnce attempted %d, want 1", n)
	}
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	if err := verifyStandardWebhook(secret, reqs[0].Header, reqs[0].Body); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if got := reqs[0].Header.Get("X-Customer-Token"); got != "tok_sealed" {
		t.Fatalf("custom header %q, want the plaintext", got)
	}
	if strings.Contains(reqs[0].Header.Get("webhook-signature"), "enc:") {
		t.Fatal("signature made of the sealed form")
	}
	e.wantState(id, delivery.Delivered, 1)
}

// A claimed batch holds several rows of each subscription; the worker opens each subscription's secrets
// and header values once per batch, and every request still carries its own subscription's headers and
// signature (no row gets another's).
func TestBatchOpensEachSubscriptionOnce(t *testing.T) {
	t.Parallel()
	e, box := setupSealed(t)
	rc := newReceiver(t, nil)
	inputs := map[string]map[string]string{
		"/a": {"X-Customer-Token": "tok_a"},
		"/b": {"X-Customer-Token": "tok_b", "X-Region": "eu"},
		"/c": nil, // no custom headers
	}
	secrets := map[string]string{}
	values := 0 // sealed values stored: one secret each, and each header value
	for path, h := range inputs {
		in := subscriptions.Input{}
		if h != nil {
			in.Headers = &h
		}
		_, secrets[path] = e.subscribe(rc.srv.URL+path, in)
		values += 1 + len(h)
	}
	const events = 6
	for range events {
		e.publish("order.created", `{}`)
	}

	var opened atomic.Int32
	open := func(s string) (string, error) { opened.Add(1); return box.Open(s) }
	if n := e.runOnce(e.worker(delivery.WorkerOptions{Open: open}, nil)); n != events*len(inputs) {
		t.Fatalf("RunOnce attempted %d, want %d in one batch", n, events*len(inputs))
	}
	if got := int(opened.Load()); got != values {
		t.Errorf("opened %d stored values for a batch of %d rows, want %d (each subscription's once)", got, events*len(inputs), values)
	}
	perPath := map[string]int{}
	for _, r := range rc.requests() {
		perPath[r.Path]++
		if err := verifyStandardWebhook(secrets[r.Path], r.Header, r.Body); err != nil {
			t.Errorf("%s: signature: %v", r.Path, err)
		}
		for _, k := range []string{"X-Customer-Token", "X-Region"} {
			if got, want := r.Header.Get(k), inputs[r.Path][k]; got != want {
				t.Errorf("%s: header %s = %q, want %q", r.Path, k, got, want)
			}
		}
	}
	for path := range inputs {
		if perPath[path] != events {
			t.Errorf("%s got %d requests, want %d", path, perPath[path], events)
		}
	}
}

// setupSealed is setup with a key, so secrets and header values are sealed at rest.
func setupSealed(t *testing.T) (*env, *secretbox.Box) {
	t.Helper()
	e := setup(t)
	box, err := secretbox.Parse(secretbox.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	e.subs.UseKeys(box)
	return e, box
}
