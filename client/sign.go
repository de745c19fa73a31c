package client

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// UserAgent is the User-Agent of the webhooks Hookline sends (and of those `hookline listen` forwards).
const UserAgent = "Hookline-Webhooks/1.0 (+https://github.com/hookline/hookline)"

// Sign returns the Standard Webhooks headers of a webhook request carrying body, signed with secret (a
// subscription's whsec_... signing secret) at the moment at: webhook-id (msgID: Hookline sends the event's
// id), webhook-timestamp (at in Unix seconds) and webhook-signature ("v1,<base64 HMAC-SHA256 of
// "msgID.timestamp.body">"). They are the bytes Hookline's server sends for the same id, second and body,
// so a receiver that verifies Hookline's webhooks (with Verify or any Standard Webhooks library) verifies
// these: for tests of a receiver, or to forward a pulled delivery (what `hookline listen` does).
func Sign(secret, msgID string, at time.Time, body []byte) (http.Header, error) {
	return SignWith([]string{secret}, msgID, at, body)
}

// SignWith is Sign with several secrets, as the server signs while a rotated-out secret is still valid:
// one "v1," signature per secret, space-separated, in the order given (the API lists them newest first).
func SignWith(secrets []string, msgID string, at time.Time, body []byte) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, ErrInvalidSecret
	}
	if msgID == "" {
		return nil, errors.New("client: a webhook needs an id (webhook-id)")
	}
	stamp := strconv.FormatInt(at.Unix(), 10)
	var sig strings.Builder
	for i, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(key) == 0 {
			return nil, ErrInvalidSecret
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(msgID))
		mac.Write([]byte{'.'})
		mac.Write([]byte(stamp))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			sig.WriteByte(' ')
		}
		sig.WriteString("v1,")
		sig.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	h := http.Header{}
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", stamp)
	h.Set("webhook-signature", sig.String())
	return h, nil
}

// EventBody is the body of the webhook Hookline POSTs for an event, byte for byte:
//
//	{"type":"<event type>","timestamp":"<when it was published, RFC 3339 in UTC>","data":<payload>}
//
// in that order, without spaces, the payload compacted but otherwise as published (its keys in their
// order, its strings and numbers as written: "<" stays "<", 12345678901234567890 is not made a float).
// timestamp is the event's creation (PolledDelivery.Timestamp, Event.CreatedAt), which the server keeps to
// the microsecond.
func EventBody(eventType string, timestamp time.Time, payload json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// The server writes the payload as it was published; encoding/json's default would turn <, > and &
	// into \u003c, \u003e and \u0026, and the receiver's signature check is over these exact bytes.
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{eventType, timestamp.UTC().Format(time.RFC3339Nano), payload})
	if err != nil {
		return nil, fmt.Errorf("client: the payload is not JSON: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
