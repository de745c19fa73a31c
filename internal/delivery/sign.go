package delivery

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret, as in the Standard Webhooks spec and Svix.
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: whsec_ and 32 random bytes in base64.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails on supported platforms
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// secretKey decodes the HMAC key of a whsec_ secret.
func secretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("signing secret lacks the whsec_ prefix")
	}
	return base64.StdEncoding.DecodeString(raw)
}

// Sign returns the webhook-signature header value for one request: "v1,<base64 HMAC-SHA256>" of
// "msgID.timestamp.body" under each secret, space-separated, so a receiver still holding a rotated-out
// secret verifies too.
func Sign(secrets []string, msgID string, timestamp int64, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("no valid signing secret")
	}
	// The signed prefix and the header value are each built in one buffer: this runs for every attempt.
	prefix := make([]byte, 0, len(msgID)+22)
	prefix = append(prefix, msgID...)
	prefix = append(prefix, '.')
	prefix = strconv.AppendInt(prefix, timestamp, 10)
	prefix = append(prefix, '.')
	out := make([]byte, 0, len(secrets)*48)
	var sum [sha256.Size]byte
	for i, s := range secrets {
		key, err := secretKey(s)
		if err != nil {
			return "", err
		}
		mac := hmac.New(sha256.New, key)
		mac.Write(prefix)
		mac.Write(body)
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, "v1,"...)
		out = base64.StdEncoding.AppendEncode(out, mac.Sum(sum[:0]))
	}
	return string(out), nil
}
