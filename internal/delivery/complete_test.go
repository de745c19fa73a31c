package delivery

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

// headersJSON stands in for json.Marshal of the stored request headers: it must write the same bytes for
// every map, the ones it handles itself and the ones it hands on.
func TestHeadersJSONIsJSONMarshal(t *testing.T) {
	t.Parallel()
	maps := []map[string]string{
		nil,
		{},
		{"content-type": "application/json", "user-agent": UserAgent, "webhook-id": "0190c2a5-0000-7000-8000-000000000000",
			"webhook-timestamp": "1767225600", "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,abc+/="},
		{"a": `quote " inside`, "b": `back\slash`},
		{"html": "<b>&amp;</b>", "ctl": "tab\there", "del": "\x7f", "nl": "a\nb"},
		{"é": "non-ASCII name", "u2028": "line\u2028separator", "bad": "\xff invalid UTF-8"},
		{"k0": "0", "k1": "1", "k2": "2", "k3": "3", "k4": "4", "k5": "5", "k6": "6", "k7": "7", "k8": "8", "k9": "9"},
		{"": ""},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		m := map[string]string{}
		for range rng.IntN(10) {
			k := make([]byte, rng.IntN(6))
			v := make([]byte, rng.IntN(12))
			for i := range k {
				k[i] = byte(rng.IntN(128))
			}
			for i := range v {
				v[i] = byte(0x1c + rng.IntN(0x66)) // mostly printable, some control and DEL
			}
			m[string(k)] = string(v)
		}
		maps = append(maps, m)
	}
	for i, m := range maps {
		got, err := headersJSON(m)
		want, werr := json.Marshal(m)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("map %d %q:\n got %s (%v)\nwant %s (%v)", i, m, got, err, want, werr)
		}
	}
}

func BenchmarkHeadersJSON(b *testing.B) {
	h := map[string]string{"content-type": "application/json", "user-agent": UserAgent,
		"webhook-id": "0190c2a5-0000-7000-8000-000000000000", "webhook-timestamp": strconv.Itoa(1767225600),
		"webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="}
	b.Run("headersJSON", func(b *testing.B) {
		for b.Loop() {
			_, _ = headersJSON(h)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(h)
		}
	})
}
