package keyset_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/keyset"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// FuzzCursor decodes arbitrary cursors: never a panic; an error is INVALID_REQUEST; a cursor that decodes
// encodes back to one that decodes to the same position; encoding any position decodes to it.
func FuzzCursor(f *testing.F) {
	valid := keyset.Encode(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), uuid.MustParse("01a204a9-5a26-767f-afc7-b1079f5a67a5"))
	for _, s := range []string{valid, "", "e30", "bnVsbA", "eyJ0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJpIjoiMDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwIn0",
		"eyJ0Ijo1LCJpIjpbXX0", "%%%", valid + "=", valid[:len(valid)-1], strings.Repeat("A", 5000), "\xff"} {
		f.Add(s, int64(0), []byte{})
	}
	f.Add("", int64(-62135596800), []byte("0123456789abcdef"))
	f.Add("", int64(253402300799), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, s string, unix int64, id []byte) {
		if c, err := keyset.Parse(s); err != nil {
			if fe := fault.As(err); fe == nil || fe.Code != fault.InvalidRequest {
				t.Fatalf("keyset.Parse(%q): %v is not INVALID_REQUEST", s, err)
			}
		} else if c == nil {
			if s != "" {
				t.Fatalf("keyset.Parse(%q) gave no cursor and no error", s)
			}
		} else {
			if c.ID == uuid.Nil {
				t.Fatalf("keyset.Parse(%q) accepted the nil id", s)
			}
			back, err := keyset.Parse(keyset.Encode(c.At, c.ID))
			if err != nil || back.ID != c.ID || !back.At.Equal(c.At) {
				t.Fatalf("cursor %q = %+v re-encodes to %+v, %v", s, c, back, err)
			}
		}
		if !utf8.ValidString(keyset.Encode(time.Time{}, uuid.Nil)) {
			t.Fatal("cursor is not text")
		}

		// Any position the database can hold (years 1 to 9999, as JSON times allow) makes a cursor that
		// decodes to itself.
		var u uuid.UUID
		copy(u[:], id)
		at := time.Unix(unix, int64(len(id))*1000).UTC()
		if u == uuid.Nil || at.Year() < 1 || at.Year() > 9999 {
			return
		}
		enc := keyset.Encode(at, u)
		c, err := keyset.Parse(enc)
		if err != nil || c.ID != u || !c.At.Equal(at) {
			t.Fatalf("cursor of %v %v = %q decodes to %+v, %v", u, at, enc, c, err)
		}
	})
}
