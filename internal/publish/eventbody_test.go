package publish

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// eventBody writes by hand what encoding/json wrote before it (an Encoder without HTML escaping over
// {type, timestamp, data: RawMessage}); receivers verify signatures over these bytes, so they must not change.
func TestEventBodyMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 23, 13, 4, 5, 120000000, time.FixedZone("x", 3600))
	for _, payload := range []string{
		`{}`, `{"a":1}`, "{ \"a\" : [1, 2,\n 3], \"b\": {\"c\": null} }", `{"html":"<b>&amp;</b>","u":"é ü 日本 \u2028 \u2029 \" \\ \/"}`,
		"{\"raw\":\"\u2028\u2029\",\"emoji\":\"😀\"}", `{"n":-1.5e10,"t":true,"f":false}`,
	} {
		for _, typ := range []string{"order.created", "a", "x:y/z-1_2"} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(struct {
				Type      string          `json:"type"`
				Timestamp string          `json:"timestamp"`
				Data      json.RawMessage `json:"data"`
			}{typ, created.UTC().Format(time.RFC3339Nano), json.RawMessage(payload)}); err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(payload)); err != nil {
				t.Fatal(err)
			}
			got := eventBody(typ, created, compact.Bytes())
			if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
				t.Errorf("eventBody(%q, %s):\n got %s\nwant %s", typ, payload, got, w)
			}
		}
	}
}
