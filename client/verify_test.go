package client_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/client"
	"github.com/hookline/hookline/internal/delivery"
)

// The Standard Webhooks test vectors, from github.com/standard-webhooks/standard-webhooks: the secret,
// message id, timestamp, payload and signature of TestWebhookSign in libraries/go/webhook_test.go (the
// same in every library's tests: javascript, python, ruby, php, csharp).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// A signature of another message (their "invalid signature" and multi-signature cases).
	vectorOtherSignature = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

var vectorTime = time.Unix(vectorTimestamp, 0)

func vectorHeaders() http.Header {
	h := http.Header{}
	h.Set("webhook-id", vectorMsgID)
	h.Set("webhook-timestamp", strconv.Itoa(vectorTimestamp))
	h.Set("webhook-signature", vectorSignature)
	return h
}

// The cases of the Standard Webhooks libraries' tests (libraries/go/webhook_test.go TestWebhook and
// TestWebhookPrefix, python's test_webhooks.py, ruby's webhook_spec.rb, php's WebhookTest.php), on the
// vector, with the clock injected instead of signing at time.Now().
func TestVerifyStandardWebhooksVectors(t *testing.T) {
	t.Parallel()
	body := []byte(vectorPayload)
	cases := []struct {
		name   string
		secret string
		change func(h http.Header)
		now    time.Time
		want   error // nil: valid
	}{
		{name: "valid signature is valid", now: vectorTime},
		{name: "secret without the whsec_ prefix", secret: strings.TrimPrefix(vectorSecret, "whsec_"), now: vectorTime},
		{name: "valid within the tolerance, late", now: vectorTime.Add(client.Tolerance)},
		{name: "valid within the tolerance, early", now: vectorTime.Add(-client.Tolerance)},
		{name: "missing id", change: func(h http.Header) { h.Del("webhook-id") }, now: vectorTime, want: client.ErrMissingHeaders},
		{name: "missing timestamp", change: func(h http.Header) { h.Del("webhook-timestamp") }, now: vectorTime, want: client.ErrMissingHeaders},
		{name: "missing signature", change: func(h http.Header) { h.Del("webhook-signature") }, now: vectorTime, want: client.ErrMissingHeaders},
		{name: "invalid signature", change: func(h http.Header) { h.Set("webhook-signature", vectorOtherSignature) }, now: vectorTime, want: client.ErrNoSignature},
		{name: "partial signature", change: func(h http.Header) { h.Set("webhook-signature", "v1,") }, now: vectorTime, want: client.ErrNoSignature},
		{name: "truncated signature", change: func(h http.Header) { h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLawdd") }, now: vectorTime, want: client.ErrNoSignature},
		{name: "old timestamp", now: vectorTime.Add(client.Tolerance + time.Second), want: client.ErrTimestampTooOld},
		{name: "new timestamp", now: vectorTime.Add(-client.Tolerance - time.Second), want: client.ErrTimestampTooNew},
		{name: "valid multi sig is valid", change: func(h http.Header) {
			h.Set("webhook-signature", strings.Join([]string{vectorOtherSignature, "v2," + strings.TrimPrefix(vectorOtherSignature, "v1,"),
				vectorSignature, vectorOtherSignature}, " "))
		}, now: vectorTime},
		{name: "invalid timestamp", change: func(h http.Header) { h.Set("webhook-timestamp", "hello") }, now: vectorTime, want: client.ErrInvalidTimestamp},
		{name: "fractional timestamp", change: func(h http.Header) { h.Set("webhook-timestamp", "161426533.0") }, now: vectorTime, want: client.ErrInvalidTimestamp},
		{name: "negative timestamp", change: func(h http.Header) { h.Set("webhook-timestamp", "-161426533") }, now: vectorTime, want: client.ErrInvalidTimestamp},
		{name: "empty secret", secret: "whsec_", now: vectorTime, want: client.ErrInvalidSecret},
		{name: "no secret", secret: "", now: vectorTime, want: client.ErrInvalidSecret},
	}
	for _, c := range cases {
		h := vectorHeaders()
		if c.change != nil {
			c.change(h)
		}
		secret := vectorSecret
		if c.secret != "" || c.want == client.ErrInvalidSecret {
			secret = c.secret
		}
		err := client.VerifyAt(secret, h, body, c.now)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// Anything changed of a genuine request is refused: a byte of the body, the id, the timestamp (still
// within the tolerance), the secret, the signature's scheme or a bit of it.
func TestVerifyTampering(t *testing.T) {
	t.Parallel()
	body := []byte(vectorPayload)
	if err := client.VerifyAt(vectorSecret, vectorHeaders(), body, vectorTime); err != nil {
		t.Fatalf("the vector itself: %v", err)
	}
	otherSecret := delivery.NewSecret()
	cases := []struct {
		name   string
		secret string
		body   string
		change func(h http.Header)
	}{
		{name: "body with a byte changed", body: `{"test": 2432232315}`},
		{name: "body with a space dropped", body: `{"test":2432232314}`},
		{name: "body with a newline added", body: vectorPayload + "\n"},
		{name: "empty body", body: ""},
		{name: "another id", change: func(h http.Header) { h.Set("webhook-id", vectorMsgID+"x") }},
		{name: "another timestamp within the tolerance", change: func(h http.Header) { h.Set("webhook-timestamp", strconv.Itoa(vectorTimestamp+1)) }},
		{name: "the timestamp with a leading zero", change: func(h http.Header) { h.Set("webhook-timestamp", "0"+strconv.Itoa(vectorTimestamp)) }},
		{name: "another secret", secret: otherSecret},
		{name: "scheme v1a", change: func(h http.Header) { h.Set("webhook-signature", "v1a,"+strings.TrimPrefix(vectorSignature, "v1,")) }},
		{name: "signature without its scheme", change: func(h http.Header) { h.Set("webhook-signature", strings.TrimPrefix(vectorSignature, "v1,")) }},
		{name: "signature with a character changed", change: func(h http.Header) { h.Set("webhook-signature", strings.Replace(vectorSignature, "g0hM", "g0hN", 1)) }},
		{name: "signature that is not base64", change: func(h http.Header) { h.Set("webhook-signature", "v1,not base64!") }},
	}
	for _, c := range cases {
		h := vectorHeaders()
		if c.change != nil {
			c.change(h)
		}
		secret, b := vectorSecret, body
		if c.secret != "" {
			secret = c.secret
		}
		if c.change == nil && c.secret == "" {
			b = []byte(c.body)
		}
		if err := client.VerifyAt(secret, h, b, vectorTime); !errors.Is(err, client.ErrNoSignature) {
			t.Errorf("%s: %v, want %v", c.name, err, client.ErrNoSignature)
		}
	}
}

// Verify accepts what the server's signer (internal/delivery.Sign) signs, with each of the secrets it
// signs with (a rotation signs with the new and the old ones), and nothing else: random secrets, ids,
// timestamps and bodies (any bytes, not only JSON), each also checked with one bit of the body flipped
// and with a secret the signer did not use.
func TestVerifyAgainstTheServersSigner(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewChaCha8([32]byte{'h', 'o', 'o', 'k', 'l', 'i', 'n', 'e'}))
	for i := range 500 {
		secrets := make([]string, 1+rng.IntN(3))
		for j := range secrets {
			secrets[j] = delivery.NewSecret()
		}
		id := fmt.Sprintf("%016x-%d", rng.Uint64(), i)
		ts := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(10 * 365 * 24 * time.Hour)))).Unix()
		body := make([]byte, rng.IntN(2048))
		for j := range body {
			body[j] = byte(rng.UintN(256))
		}
		sig, err := delivery.Sign(secrets, id, ts, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		h.Set("webhook-signature", sig)
		now := time.Unix(ts, 0).Add(time.Duration(rng.Int64N(int64(2*client.Tolerance))) - client.Tolerance)
		for j, s := range secrets {
			if err := client.VerifyAt(s, h, body, now); err != nil {
				t.Fatalf("case %d: secret %d of %d: %v", i, j+1, len(secrets), err)
			}
		}
		if err := client.VerifyAt(delivery.NewSecret(), h, body, now); !errors.Is(err, client.ErrNoSignature) {
			t.Fatalf("case %d: a secret the signer did not use: %v", i, err)
		}
		if len(body) > 0 {
			flipped := append([]byte(nil), body...)
			flipped[rng.IntN(len(flipped))] ^= 1 << rng.UintN(8)
			if err := client.VerifyAt(secrets[0], h, flipped, now); !errors.Is(err, client.ErrNoSignature) {
				t.Fatalf("case %d: a body with a bit flipped: %v", i, err)
			}
		}
	}
}

// A real webhook from a real server, received by a real HTTP receiver, verifies with the secret the
// subscription was created with, and fails with another.
func TestVerifyARealDelivery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, true)
	tenant := e.newTenant(ctx, "sdk-verify")
	type received struct {
		header http.Header
		body   []byte
	}
	got := make(chan received, 4)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Clone(), b}
	}))
	defer rc.Close()
	res, err := e.admin.CreateSubscriptionWithResponse(ctx, tenant, nil, client.CreateSubscriptionJSONRequestBody{URL: new(rc.URL + "/hook")})
	if err != nil {
		t.Fatalf("create subscription: %v", err)
	}
	published, err := e.admin.Publish(ctx, tenant, "invoice.paid", map[string]any{"invoice_id": "inv_1", "amount": 1250}, client.PublishOptions{})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	var r received
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook within 30 s")
	}
	if r.header.Get("webhook-id") != published.ID {
		t.Errorf("webhook-id %q, want the event id %s", r.header.Get("webhook-id"), published.ID)
	}
	if err := client.Verify(res.JSON201.Secret, r.header, r.body); err != nil {
		t.Errorf("the server's webhook does not verify with the subscription's secret: %v", err)
	}
	if err := client.Verify(delivery.NewSecret(), r.header, r.body); !errors.Is(err, client.ErrNoSignature) {
		t.Errorf("the server's webhook with another secret: %v, want %v", err, client.ErrNoSignature)
	}
}
