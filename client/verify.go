package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a webhook's timestamp may be from the receiver's clock, either way, as the
// Standard Webhooks libraries allow: an older request may be a replay of a captured one.
const Tolerance = 5 * time.Minute

// Why Verify refuses a request (errors.Is).
var (
	ErrMissingHeaders   = errors.New("the request lacks webhook-id, webhook-timestamp or webhook-signature")
	ErrInvalidTimestamp = errors.New("webhook-timestamp is not a Unix time in seconds")
	ErrTimestampTooOld  = errors.New("webhook-timestamp is more than 5 minutes old")
	ErrTimestampTooNew  = errors.New("webhook-timestamp is more than 5 minutes in the future")
	ErrNoSignature      = errors.New("no signature of webhook-signature matches the secret")
	ErrInvalidSecret    = errors.New("the signing secret is not whsec_ and base64")
)

// Verify checks that a webhook request came from Hookline, signed with secret (the subscription's
// whsec_... signing secret), as the Standard Webhooks specification says: body is the request body as
// received, byte for byte, and headers its header. It returns nil for a genuine request, else an error
// wrapping one of the Err values.
func Verify(secret string, headers http.Header, body []byte) error {
	return VerifyAt(secret, headers, body, time.Now())
}

// VerifyAt is Verify with now as the receiver's clock (for tests, or a receiver with a clock of its own).
//
// The signed content is "<webhook-id>.<webhook-timestamp>.<body>", its HMAC-SHA256 under the secret's
// key sent base64 as "v1,<signature>"; webhook-signature may hold several space-separated (a rotated-out
// secret still signs for a while, and other schemes such as v1a may be listed), and any one "v1" that
// matches will do. Signatures are compared in constant time. The secret may be given without its whsec_
// prefix, as the Standard Webhooks libraries accept it.
func VerifyAt(secret string, headers http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return ErrInvalidSecret
	}
	id, stamp, signatures := headers.Get("webhook-id"), headers.Get("webhook-timestamp"), headers.Get("webhook-signature")
	if id == "" || stamp == "" || signatures == "" {
		return ErrMissingHeaders
	}
	// Digits only: ParseInt alone would take "+1614265330", which the signer never sends.
	if strings.TrimLeft(stamp, "0123456789") != "" {
		return fmt.Errorf("%w: %q", ErrInvalidTimestamp, stamp)
	}
	seconds, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrInvalidTimestamp, stamp)
	}
	sent := time.Unix(seconds, 0)
	switch {
	case now.Sub(sent) > Tolerance:
		return ErrTimestampTooOld
	case sent.Sub(now) > Tolerance:
		return ErrTimestampTooNew
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(stamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	for _, entry := range strings.Fields(signatures) {
		scheme, sig, ok := strings.Cut(entry, ",")
		if !ok || scheme != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrNoSignature
}
