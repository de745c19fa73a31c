package delivery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets of the pure code: the deliveries list's state filter and cursor, and the webhook signature.
// `go test -run '^$' -fuzz '^FuzzSignVerify$' ./internal/delivery/` explores one (make fuzz runs them all);
// a plain `go test` runs the seeds.

// verifySignature is a receiver's check, written from the Standard Webhooks spec independently of Sign:
// some space-separated "v1,<base64>" entry of header is the HMAC-SHA256, under the base64-decoded part of
// the whsec_ secret, of "msgID.timestamp.body".
func verifySignature(header, secret, msgID string, timestamp int64, body []byte) bool {
	raw, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, entry := range strings.Split(header, " ") {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// FuzzSignVerify signs arbitrary ids, timestamps and bodies under arbitrary keys: the header verifies, with
// each of several secrets; it fails once any one of the id, timestamp, body, key or signature is changed;
// and Sign never panics on an arbitrary secret string (a malformed one is an error, not a signature).
func FuzzSignVerify(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef"), "msg_p5jXN8AQM9LWM0D4loKWxJek", int64(1614265330), []byte(`{"test": 2432232314}`), uint(3), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	f.Add([]byte{}, "", int64(0), []byte{}, uint(0), "")
	f.Add([]byte{0}, ".", int64(-1), []byte("."), uint(1), "whsec_")
	f.Add([]byte(strings.Repeat("k", 200)), "01a20000-0000-7000-8000-000000000000", int64(math.MaxInt64), []byte(strings.Repeat("\x00", 70)), uint(69), "whsec_====")
	f.Add([]byte("k"), "id.1", int64(math.MinInt64), []byte("\xff\xfe"), uint(1<<40), "whsec_\xff")
	f.Add([]byte("key"), "a b", int64(9), []byte("1.body"), uint(7), "WHSEC_a2V5")
	f.Fuzz(func(t *testing.T, key []byte, msgID string, ts int64, body []byte, at uint, anySecret string) {
		secret := SecretPrefix + base64.StdEncoding.EncodeToString(key)
		sig, err := Sign([]string{secret}, msgID, ts, body)
		if err != nil {
			t.Fatalf("Sign(%q): %v", secret, err)
		}
		if !strings.HasPrefix(sig, "v1,") || strings.Count(sig, " ") != 0 {
			t.Fatalf("signature %q is not one v1,<base64> entry", sig)
		}
		if !verifySignature(sig, secret, msgID, ts, body) {
			t.Fatalf("signature %q does not verify", sig)
		}

		checkTamperingFails(t, sig, key, msgID, ts, body, at)
		k := flipBit(key, at)

		// Several secrets (a rotation): one entry each, in order, each verifying under its own secret.
		other := SecretPrefix + base64.StdEncoding.EncodeToString(k)
		both, err := Sign([]string{secret, other}, msgID, ts, body)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(both, " ")
		if len(parts) != 2 || parts[0] != sig || !verifySignature(both, other, msgID, ts, body) || !verifySignature(both, secret, msgID, ts, body) {
			t.Fatalf("two secrets: %q (one: %q)", both, sig)
		}

		// An arbitrary secret: an error, or a signature under exactly what it decodes to.
		got, err := Sign([]string{anySecret}, msgID, ts, body)
		switch {
		case err != nil && got != "":
			t.Fatalf("Sign(%q) returned %q with error %v", anySecret, got, err)
		case err == nil && !verifySignature(got, anySecret, msgID, ts, body):
			t.Fatalf("Sign(%q) = %q, which does not verify", anySecret, got)
		case err == nil && !strings.HasPrefix(anySecret, SecretPrefix):
			t.Fatalf("Sign accepted %q, which lacks the whsec_ prefix", anySecret)
		}
		if _, err := Sign([]string{secret, anySecret}, msgID, ts, body); (err == nil) != (got != "") {
			t.Fatalf("Sign with a valid secret and %q: %v, alone: %q", anySecret, err, got)
		}
	})
}

// checkTamperingFails checks that sig, made under key's secret, verifies with none of its parts changed:
// the message id, the timestamp, the body, the key, the signature or its version.
func checkTamperingFails(t *testing.T, sig string, key []byte, msgID string, ts int64, body []byte, at uint) {
	secret := SecretPrefix + base64.StdEncoding.EncodeToString(key)
	if verifySignature(sig, secret, msgID+"x", ts, body) {
		t.Fatal("verifies with another message id")
	}
	ts2 := ts + 1
	if ts == math.MaxInt64 {
		ts2 = ts - 1
	}
	if verifySignature(sig, secret, msgID, ts2, body) {
		t.Fatal("verifies with another timestamp")
	}
	if verifySignature(sig, secret, msgID, ts, append(slices.Clone(body), 'x')) {
		t.Fatal("verifies with a longer body")
	}
	if len(body) > 0 {
		b := slices.Clone(body)
		b[at%uint(len(b))] ^= 1 << (at % 8)
		if verifySignature(sig, secret, msgID, ts, b) {
			t.Fatal("verifies with a changed body")
		}
	}
	// Another key of the same length (HMAC pads keys with zeros, so a longer key ending in 0 would be
	// the same key): flip one bit.
	k := flipBit(key, at)
	if verifySignature(sig, SecretPrefix+base64.StdEncoding.EncodeToString(k), msgID, ts, body) {
		t.Fatal("verifies under another key")
	}
	mac, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(sig, "v1,"))
	mac[at%uint(len(mac))] ^= 1 << (at % 8)
	if verifySignature("v1,"+base64.StdEncoding.EncodeToString(mac), secret, msgID, ts, body) {
		t.Fatal("a changed signature verifies")
	}
	if verifySignature("v2,"+strings.TrimPrefix(sig, "v1,"), secret, msgID, ts, body) {
		t.Fatal("a signature of another version verifies")
	}

}

// flipBit is key with one bit flipped, chosen by at ({1} for an empty key).
func flipBit(key []byte, at uint) []byte {
	k := slices.Clone(key)
	if len(k) == 0 {
		return []byte{1}
	}
	k[at%uint(len(k))] ^= 1 << (at % 8)
	return k
}
