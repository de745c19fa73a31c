// Package secretbox encrypts values at rest (signing secrets, custom header values) with AES-256-GCM under
// the keys of HOOKLINE_SECRET_KEY.
//
// A sealed value is text, so it fits the columns that held the plaintext:
//
//	enc:v1:<key id>:<base64 of nonce || ciphertext || tag>
//
// The key id is the first 8 hex digits of the key's SHA-256: it names the key without revealing it, so
// Open picks the right one of several keys and a value sealed under a key that is no longer configured is
// a clear error instead of a failed decryption. The "enc:v1:<key id>:" header is the GCM additional data,
// so it cannot be edited without Open noticing.
//
// Values without the prefix are plaintext (rows written before a key was configured) and Open returns them
// as they are. A plaintext that itself begins with "enc:" or "plain:" (a custom header could) is stored
// as "plain:<value>" while no key is configured, so it is never taken for a sealed value.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of one key: AES-256.
const KeySize = 32

const (
	sealedPrefix = "enc:v1:"
	plainPrefix  = "plain:"
	// anySealed is what every sealed value starts with, whatever its version.
	anySealed = "enc:"
)

// ErrNoKey is returned by Open for a sealed value when no key is configured at all.
var ErrNoKey = errors.New("value is encrypted but HOOKLINE_SECRET_KEY is empty")

type key struct {
	id   string
	aead cipher.AEAD
}

// Box holds the configured keys: the first seals, every one opens. A nil *Box is valid and means "no key":
// Seal stores plaintext, Open reads plaintext and refuses sealed values.
type Box struct {
	keys []key
}

// NewKey returns a fresh random key in the form HOOKLINE_SECRET_KEY takes (standard base64 of 32 bytes).
func NewKey() string {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.StdEncoding.EncodeToString(b)
}

// Parse reads HOOKLINE_SECRET_KEY: comma-separated base64 keys of 32 bytes each, the first one sealing.
// An empty (or blank) string is no key: a nil Box and no error.
func Parse(s string) (*Box, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	b := &Box{}
	seen := map[string]int{}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("key %d is empty (keys are comma-separated, e.g. NEW,OLD)", i+1)
		}
		raw, err := decodeKey(part)
		if err != nil {
			return nil, fmt.Errorf("key %d is not base64: generate one with `openssl rand -base64 32`", i+1)
		}
		if len(raw) != KeySize {
			return nil, fmt.Errorf("key %d is %d bytes, want %d (base64 of 32 random bytes: `openssl rand -base64 32`)", i+1, len(raw), KeySize)
		}
		k, err := newKey(raw)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if j, dup := seen[k.id]; dup {
			return nil, fmt.Errorf("key %d is the same as key %d", i+1, j)
		}
		seen[k.id] = i + 1
		b.keys = append(b.keys, k)
	}
	return b, nil
}

// decodeKey accepts standard and URL-safe base64, padded or not: keys are pasted from many tools.
func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil {
			return raw, nil
		}
	}
	return nil, errors.New("not base64")
}

func newKey(raw []byte) (key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, err
	}
	sum := sha256.Sum256(raw)
	return key{id: hex.EncodeToString(sum[:4]), aead: aead}, nil
}

// Enabled reports whether a key is configured (values are sealed).
func (b *Box) Enabled() bool { return b != nil && len(b.keys) > 0 }

// KeyIDs are the configured keys' ids, the sealing one first.
func (b *Box) KeyIDs() []string {
	if b == nil {
		return nil
	}
	ids := make([]string, len(b.keys))
	for i, k := range b.keys {
		ids[i] = k.id
	}
	return ids
}

// CurrentPrefix is what every value sealed under the first key starts with ("" without a key): a value
// without it needs (re-)sealing.
func (b *Box) CurrentPrefix() string {
	if !b.Enabled() {
		return ""
	}
	return sealedPrefix + b.keys[0].id + ":"
}

// Prefixes are what values sealed under each configured key start with: a sealed value that starts with
// none of them cannot be opened.
func (b *Box) Prefixes() []string {
	out := []string{}
	for _, id := range b.KeyIDs() {
		out = append(out, sealedPrefix+id+":")
	}
	return out
}

// IsSealed reports whether a stored value is sealed (under any key).
func IsSealed(stored string) bool { return strings.HasPrefix(stored, anySealed) }

// Seal returns the stored form of a plaintext: sealed under the first key, or, without a key, the
// plaintext itself (escaped when it could be mistaken for a sealed value).
func (b *Box) Seal(plain string) (string, error) {
	if !b.Enabled() {
		if strings.HasPrefix(plain, anySealed) || strings.HasPrefix(plain, plainPrefix) {
			return plainPrefix + plain, nil
		}
		return plain, nil
	}
	k := b.keys[0]
	header := sealedPrefix + k.id + ":"
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	out := k.aead.Seal(nonce, nonce, []byte(plain), []byte(header))
	return header + base64.StdEncoding.EncodeToString(out), nil
}

// Open returns the plaintext of a stored value: sealed values are decrypted with the key they name,
// plaintext ones returned as they are.
func (b *Box) Open(stored string) (string, error) {
	if v, ok := strings.CutPrefix(stored, plainPrefix); ok {
		return v, nil
	}
	if !IsSealed(stored) {
		return stored, nil
	}
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return "", errors.New("value is encrypted in an unknown format (not enc:v1)")
	}
	id, data, ok := strings.Cut(rest, ":")
	if !ok {
		return "", errors.New("encrypted value is malformed: no key id")
	}
	if !b.Enabled() {
		return "", fmt.Errorf("%w (sealed under key %s)", ErrNoKey, id)
	}
	var k *key
	for i := range b.keys {
		if b.keys[i].id == id {
			k = &b.keys[i]
			break
		}
	}
	if k == nil {
		return "", fmt.Errorf("value is encrypted under key %s, which is not among HOOKLINE_SECRET_KEY's keys (%s)",
			id, strings.Join(b.KeyIDs(), ", "))
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(raw) < k.aead.NonceSize()+k.aead.Overhead() {
		return "", fmt.Errorf("encrypted value under key %s is malformed", id)
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(sealedPrefix+id+":"))
	if err != nil {
		return "", fmt.Errorf("encrypted value under key %s does not decrypt: altered or corrupted", id)
	}
	return string(plain), nil
}

// Reseal returns stored re-sealed under the first key, and whether it changed: values already sealed
// under the first key are left alone (changed false).
func (b *Box) Reseal(stored string) (string, bool, error) {
	if b.Enabled() && strings.HasPrefix(stored, b.CurrentPrefix()) {
		return stored, false, nil
	}
	plain, err := b.Open(stored)
	if err != nil {
		return "", false, err
	}
	out, err := b.Seal(plain)
	if err != nil {
		return "", false, err
	}
	return out, out != stored, nil
}
