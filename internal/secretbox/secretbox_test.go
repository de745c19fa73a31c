package secretbox

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustParse(t *testing.T, s string) *Box {
	t.Helper()
	b, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	b := mustParse(t, NewKey())
	for _, plain := range []string{"whsec_abc", "", "Bearer ünïcode", "enc:v1:looks:sealed", strings.Repeat("x", 5000)} {
		sealed, err := b.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, b.CurrentPrefix()) || strings.Contains(sealed, "whsec_") {
			t.Errorf("sealed %q as %q", plain, sealed)
		}
		got, err := b.Open(sealed)
		if err != nil || got != plain {
			t.Errorf("Open(Seal(%q)) = %q, %v", plain, got, err)
		}
	}
	s1, _ := b.Seal("same")
	s2, _ := b.Seal("same")
	if s1 == s2 {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
}

func TestStoredFormatNamesTheKey(t *testing.T) {
	t.Parallel()
	k := NewKey()
	b := mustParse(t, k)
	sealed, _ := b.Seal("v")
	parts := strings.SplitN(sealed, ":", 4)
	if len(parts) != 4 || parts[0] != "enc" || parts[1] != "v1" || len(parts[2]) != 8 || parts[2] != b.KeyIDs()[0] {
		t.Fatalf("format: %q", sealed)
	}
	if _, err := base64.StdEncoding.DecodeString(parts[3]); err != nil {
		t.Fatalf("payload is not base64: %q", parts[3])
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := NewKey(), NewKey()
	old := mustParse(t, oldKey)
	sealedOld, _ := old.Seal("whsec_old")

	both := mustParse(t, newKey+", "+oldKey)
	if got, err := both.Open(sealedOld); err != nil || got != "whsec_old" {
		t.Fatalf("old key (second) does not open: %q, %v", got, err)
	}
	sealedNew, _ := both.Seal("whsec_new")
	if !strings.HasPrefix(sealedNew, mustParse(t, newKey).CurrentPrefix()) {
		t.Fatalf("the first key should seal: %q", sealedNew)
	}
	resealed, changed, err := both.Reseal(sealedOld)
	if err != nil || !changed || !strings.HasPrefix(resealed, both.CurrentPrefix()) {
		t.Fatalf("Reseal: %q %v %v", resealed, changed, err)
	}
	if _, changed, _ := both.Reseal(resealed); changed {
		t.Error("Reseal changed a value already under the first key")
	}
	onlyNew := mustParse(t, newKey)
	if got, err := onlyNew.Open(resealed); err != nil || got != "whsec_old" {
		t.Fatalf("after reseal, the new key alone does not open: %q, %v", got, err)
	}
	_, err = onlyNew.Open(sealedOld)
	if err == nil || !strings.Contains(err.Error(), old.KeyIDs()[0]) || !strings.Contains(err.Error(), "not among") {
		t.Fatalf("value under a dropped key: %v", err)
	}
}

func TestWrongKeyAndNoKeyRefused(t *testing.T) {
	t.Parallel()
	sealed, _ := mustParse(t, NewKey()).Seal("whsec_x")
	if _, err := mustParse(t, NewKey()).Open(sealed); err == nil {
		t.Fatal("opened with the wrong key")
	}
	var none *Box
	if _, err := none.Open(sealed); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key: %v", err)
	}
}

func TestTamperingRefused(t *testing.T) {
	t.Parallel()
	b := mustParse(t, NewKey())
	sealed, _ := b.Seal("whsec_secret")
	header := sealed[:strings.LastIndex(sealed, ":")+1]
	raw, _ := base64.StdEncoding.DecodeString(sealed[len(header):])
	for i := range raw {
		c := append([]byte(nil), raw...)
		c[i] ^= 1
		if _, err := b.Open(header + base64.StdEncoding.EncodeToString(c)); err == nil {
			t.Fatalf("byte %d flipped: opened", i)
		}
	}
	if _, err := b.Open(header + base64.StdEncoding.EncodeToString(raw[:10])); err == nil {
		t.Fatal("truncated value opened")
	}
	if _, err := b.Open(header + "!!notbase64"); err == nil {
		t.Fatal("garbage opened")
	}
	if _, err := b.Open("enc:v2:abcd:xyz"); err == nil {
		t.Fatal("unknown version opened")
	}
}

func TestPlaintextPassthrough(t *testing.T) {
	t.Parallel()
	var none *Box
	b := mustParse(t, NewKey())
	for _, box := range []*Box{none, b} {
		if got, err := box.Open("whsec_plain"); err != nil || got != "whsec_plain" {
			t.Errorf("plaintext: %q, %v", got, err)
		}
	}
	// Without a key, values are stored as they are, except ones that would look sealed.
	for _, plain := range []string{"whsec_x", "token", "enc:v1:aaaa:bbbb", "plain:x", "encore"} {
		stored, err := none.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if (stored == plain) != !(strings.HasPrefix(plain, "enc:") || strings.HasPrefix(plain, "plain:")) {
			t.Errorf("Seal without key of %q stored %q", plain, stored)
		}
		for _, box := range []*Box{none, b} {
			if got, err := box.Open(stored); err != nil || got != plain {
				t.Errorf("Open(%q) = %q, %v; want %q", stored, got, err, plain)
			}
		}
		// A key configured later seals them, with the escape removed.
		resealed, _, err := b.Reseal(stored)
		if err != nil || !strings.HasPrefix(resealed, b.CurrentPrefix()) {
			t.Fatalf("Reseal(%q): %q, %v", stored, resealed, err)
		}
		if got, _ := b.Open(resealed); got != plain {
			t.Errorf("resealed %q opens to %q", plain, got)
		}
	}
	if none.Enabled() || none.CurrentPrefix() != "" || !b.Enabled() {
		t.Error("Enabled")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	if b, err := Parse("  "); b != nil || err != nil {
		t.Fatalf("blank: %v %v", b, err)
	}
	k := NewKey()
	for _, tc := range []struct{ in, want string }{
		{"not base64!!", "not base64"},
		{base64.StdEncoding.EncodeToString(make([]byte, 16)), "16 bytes, want 32"},
		{k + ",", "key 2 is empty"},
		{k + "," + k, "key 2 is the same as key 1"},
		{NewKey() + ",%%%", "key 2 is not base64"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), k) {
			t.Errorf("error reveals the key: %v", err)
		}
	}
	raw, _ := base64.StdEncoding.DecodeString(k)
	if b, err := Parse(base64.RawURLEncoding.EncodeToString(raw)); err != nil || b.KeyIDs()[0] != mustParse(t, k).KeyIDs()[0] {
		t.Errorf("URL-safe unpadded form of a key: %v", err)
	}
}
