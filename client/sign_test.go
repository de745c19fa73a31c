package client_test

import (
	"encoding/json"
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

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/hookline/hookline/client"
	"github.com/hookline/hookline/internal/delivery"
)

// Sign makes the Standard Webhooks test vector's signature, and the Standard Webhooks Go library's.
func TestSignStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	h, err := client.Sign(vectorSecret, vectorMsgID, vectorTime, []byte(vectorPayload))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("webhook-signature"); got != vectorSignature {
		t.Errorf("webhook-signature %q, want the vector's %q", got, vectorSignature)
	}
	if h.Get("webhook-id") != vectorMsgID || h.Get("webhook-timestamp") != strconv.Itoa(vectorTimestamp) || len(h) != 3 {
		t.Errorf("headers %v, want webhook-id %s, webhook-timestamp %d and the signature alone", h, vectorMsgID, vectorTimestamp)
	}
	wh, err := standardwebhooks.NewWebhook(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := wh.Sign(vectorMsgID, vectorTime, []byte(vectorPayload))
	if err != nil || theirs != h.Get("webhook-signature") {
		t.Errorf("the Standard Webhooks library signs %q (%v), Sign %q", theirs, err, h.Get("webhook-signature"))
	}
	if err := wh.VerifyIgnoringTimestamp([]byte(vectorPayload), h); err != nil {
		t.Errorf("the Standard Webhooks library refuses Sign's headers: %v", err)
	}
}

// Sign's headers are the server's (internal/delivery.Sign, the bytes every webhook carries) for random
// secrets (one to three, as during a rotation), ids, seconds and bodies; Verify and the Standard Webhooks
// library accept them with each secret, and refuse them with another secret or a body with a bit flipped.
func TestSignMatchesTheServer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewChaCha8([32]byte{'s', 'i', 'g', 'n'}))
	now := time.Now()
	for i := range 300 {
		secrets := make([]string, 1+rng.IntN(3))
		for j := range secrets {
			secrets[j] = delivery.NewSecret()
		}
		id := fmt.Sprintf("%016x-%d", rng.Uint64(), i)
		// Within the tolerance of now, so that the library's Verify (on its own clock) takes them.
		at := now.Add(time.Duration(rng.Int64N(int64(4*time.Minute))) - 2*time.Minute)
		body := make([]byte, rng.IntN(2048))
		for j := range body {
			body[j] = byte(rng.UintN(256))
		}
		h, err := client.SignWith(secrets, id, at, body)
		if err != nil {
			t.Fatal(err)
		}
		want, err := delivery.Sign(secrets, id, at.Unix(), body)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Get("webhook-signature"); got != want {
			t.Fatalf("case %d: SignWith %q, the server %q", i, got, want)
		}
		if h.Get("webhook-id") != id || h.Get("webhook-timestamp") != strconv.FormatInt(at.Unix(), 10) {
			t.Fatalf("case %d: headers %v", i, h)
		}
		if len(secrets) == 1 {
			one, err := client.Sign(secrets[0], id, at, body)
			if err != nil || one.Get("webhook-signature") != want {
				t.Fatalf("case %d: Sign %v (%v), want %q", i, one, err, want)
			}
		}
		for j, s := range secrets {
			if err := client.Verify(s, h, body); err != nil {
				t.Fatalf("case %d: Verify with secret %d of %d: %v", i, j+1, len(secrets), err)
			}
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(body, h); err != nil {
				t.Fatalf("case %d: the Standard Webhooks library with secret %d of %d: %v", i, j+1, len(secrets), err)
			}
		}
		other := delivery.NewSecret()
		if err := client.Verify(other, h, body); !errors.Is(err, client.ErrNoSignature) {
			t.Fatalf("case %d: Verify with a secret Sign did not use: %v", i, err)
		}
		wh, _ := standardwebhooks.NewWebhook(other)
		if err := wh.Verify(body, h); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			t.Fatalf("case %d: the library with a secret Sign did not use: %v", i, err)
		}
		if len(body) > 0 {
			flipped := append([]byte(nil), body...)
			flipped[rng.IntN(len(flipped))] ^= 1 << rng.UintN(8)
			if err := client.Verify(secrets[0], h, flipped); !errors.Is(err, client.ErrNoSignature) {
				t.Fatalf("case %d: Verify of a body with a bit flipped: %v", i, err)
			}
		}
	}
}

func TestSignRefuses(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, c := range []struct {
		name    string
		secrets []string
		id      string
	}{
		{"no secret", nil, "msg_1"},
		{"an empty secret", []string{"whsec_"}, "msg_1"},
		{"a secret that is not base64", []string{"whsec_not base64!"}, "msg_1"},
		{"a bad secret after a good one", []string{delivery.NewSecret(), "whsec_%"}, "msg_1"},
	} {
		if _, err := client.SignWith(c.secrets, c.id, now, []byte("{}")); !errors.Is(err, client.ErrInvalidSecret) {
			t.Errorf("%s: %v, want %v", c.name, err, client.ErrInvalidSecret)
		}
	}
	if _, err := client.Sign(delivery.NewSecret(), "", now, []byte("{}")); err == nil {
		t.Error("Sign without an id: no error")
	}
	// Without its whsec_ prefix, as Verify and the Standard Webhooks libraries take a secret.
	s := delivery.NewSecret()
	a, err1 := client.Sign(s, "msg_1", now, []byte("{}"))
	b, err2 := client.Sign(strings.TrimPrefix(s, "whsec_"), "msg_1", now, []byte("{}"))
	if err1 != nil || err2 != nil || a.Get("webhook-signature") != b.Get("webhook-signature") {
		t.Errorf("the secret with and without whsec_: %v %v, %v %v", a, err1, b, err2)
	}
}

// UserAgent is the server's.
func TestUserAgent(t *testing.T) {
	t.Parallel()
	if client.UserAgent != delivery.UserAgent {
		t.Errorf("client.UserAgent %q, the server sends %q", client.UserAgent, delivery.UserAgent)
	}
}

// EventBody builds, from the event's type, creation time and payload as published, the body a real server
// POSTs to a real receiver, byte for byte; Sign over it with the event id and the request's second gives
// the request's own signature. Payloads with keys out of order, spaces, HTML characters, escapes, line
// separators and an integer too large for a float64 (published with client.Publish, which must send them
// as given: a \u003c for a "<" is the same JSON but not the same bytes).
func TestEventBodyIsTheServers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, true)
	tenant := e.newTenant(ctx, "sdk-eventbody")
	type received struct {
		header http.Header
		body   []byte
	}
	got := make(chan received, 16)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Clone(), b}
	}))
	defer rc.Close()
	sub, err := e.admin.CreateSubscriptionWithResponse(ctx, tenant, nil, client.CreateSubscriptionJSONRequestBody{URL: new(rc.URL + "/hook")})
	if err != nil {
		t.Fatalf("create subscription: %v", err)
	}
	secret := sub.JSON201.Secret
	for _, payload := range []string{
		`{}`,
		`{"z": 1, "a": [1, 2,
			3], "m": {"y": null, "b": true}}`,
		`{"html": "<b>&amp;</b>", "u": "é ü 日本 \u2028 \u2029 \" \\ \/ \u003c", "raw": "` + "\u2028\u2029😀" + `"}`,
		`{"big": 12345678901234567890, "f": -1.5e10, "zero": 0.000}`,
	} {
		published, err := e.admin.Publish(ctx, tenant, "order.body", json.RawMessage(payload), client.PublishOptions{})
		if err != nil {
			t.Fatalf("publish %s: %v", payload, err)
		}
		var r received
		select {
		case r = <-got:
		case <-time.After(30 * time.Second):
			t.Fatal("no webhook within 30 s")
		}
		body, err := client.EventBody(published.EventType, published.CreatedAt, json.RawMessage(payload))
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != string(r.body) {
			t.Errorf("EventBody of %s:\n got %s\nwant %s (the server's)", payload, body, r.body)
		}
		at, err := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		h, err := client.Sign(secret, published.ID, time.Unix(at, 0), body)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			if h.Get(name) != r.header.Get(name) {
				t.Errorf("%s: Sign %q, the server sent %q", name, h.Get(name), r.header.Get(name))
			}
		}
		if r.header.Get("user-agent") != client.UserAgent {
			t.Errorf("user-agent %q, want client.UserAgent %q", r.header.Get("user-agent"), client.UserAgent)
		}
	}
	if _, err := client.EventBody("a.b", time.Now(), json.RawMessage(`{not json`)); err == nil {
		t.Error("EventBody of a payload that is not JSON: no error")
	}
}
