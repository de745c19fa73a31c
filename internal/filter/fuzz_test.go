package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// fallbackPayload is matched when the fuzzer's event bytes are not JSON, so Match still runs every time.
const fallbackPayload = `{"id": 1, "status": "paid", "tags": ["a", "b"], "items": [{"sku": "x", "qty": 2}], "note": null}`

// FuzzFilter parses arbitrary bytes as a filter and matches what it accepts against arbitrary JSON. Nothing
// may panic; a refusal is an *Error whose pointer, on valid JSON, names a place in the filter; what Parse
// accepts is valid JSON within MaxBytes and MaxDepth, parses again (also compacted) to a filter that answers
// the same, and obeys the algebra of $not, $or and $and.
func FuzzFilter(f *testing.F) {
	for _, c := range matchCases {
		f.Add([]byte(c.filter), []byte(c.payload))
	}
	for _, filter := range []string{
		`{"$not": {"$not": {"data": {"tags": {"$in": "a"}}}}}`,
		`{"data": {"items": {"qty": {"$gte": 2}, "sku": {"$startsWith": ["x", "y"]}}}}`,
		`{"data": {"$eq": {"id": 1}}}`, `{"data": {"a": {"$gtt": 1}}}`, `{"a": 1, "a": 2}`, nested(MaxDepth + 1),
		`{"a":[[[[[[[1]]]]]]]}`, `[]`, `{"a": 1e400}`, `{"a": "\ud800"}`, `{"~/": {"$or": []}}`,
	} {
		f.Add([]byte(filter), []byte(fallbackPayload))
	}
	f.Fuzz(func(t *testing.T, raw, payload []byte) {
		filter, err := Parse(raw)
		if err != nil {
			checkRefusal(t, raw, err)
			return
		}
		checkAccepted(t, raw)
		events := fuzzEvents(t, payload)

		again, err := Parse(raw)
		if err != nil {
			t.Fatalf("Parse accepted %q once, then refused it: %v", raw, err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			t.Fatalf("Parse accepted %q, which json.Compact refuses: %v", raw, err)
		}
		compacted, err := Parse(compact.Bytes())
		if err != nil {
			t.Fatalf("Parse accepted %q but refused it compacted to %q: %v", raw, compact.Bytes(), err)
		}
		wrap := func(prefix, suffix string) *Filter { // nil where the wrapping is too large or too deep
			wrapped := []byte(prefix + compact.String() + suffix)
			g, err := Parse(wrapped)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || !(strings.Contains(e.Message, "more than the") || strings.Contains(e.Message, "deep")) {
					t.Fatalf("Parse accepted %q but refused %q: %v", raw, wrapped, err)
				}
				return nil
			}
			return g
		}
		negated := wrap(`{"$not":`, `}`)
		either := wrap(`{"$or":[`, `]}`)
		both := wrap(`{"$and":[`, `,`+compact.String()+`]}`)

		for _, event := range events {
			want := filter.Match(event)
			if again.Match(event) != want || compacted.Match(event) != want {
				t.Fatalf("filter %q answers %v on %#v, but parsed again or compacted answers otherwise", raw, want, event)
			}
			if negated != nil && negated.Match(event) == want {
				t.Fatalf("filter %q answers %v on %#v and so does its $not", raw, want, event)
			}
			if either != nil && either.Match(event) != want {
				t.Fatalf("filter %q answers %v on %#v, $or of it alone does not", raw, want, event)
			}
			if both != nil && both.Match(event) != want {
				t.Fatalf("filter %q answers %v on %#v, $and of it twice does not", raw, want, event)
			}
		}
	})
}

// fuzzEvents is the documents to match: the payload as an event, and the payload's JSON itself as the
// whole document (so filters meet every shape of value, not only {"type", "data"}).
func fuzzEvents(t *testing.T, payload []byte) []any {
	event, err := Event("invoice.paid", payload)
	if err != nil {
		event, err = Event("invoice.paid", []byte(fallbackPayload))
		if err != nil {
			t.Fatal(err)
		}
		return []any{event}
	}
	var whole any
	if err := json.Unmarshal(payload, &whole); err != nil {
		t.Fatal(err)
	}
	return []any{event, whole}
}

// checkRefusal: an *Error whose pointer, when raw is JSON encoding/json reads, resolves in it.
func checkRefusal(t *testing.T, raw []byte, err error) {
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse(%q) refused it with %v (%T), not *Error", raw, err, err)
	}
	if e.Message == "" || e.Pointer != "" && !strings.HasPrefix(e.Pointer, "/") {
		t.Fatalf("Parse(%q): malformed refusal %+v", raw, e)
	}
	var doc any
	if len(raw) > MaxBytes || json.Unmarshal(raw, &doc) != nil {
		return
	}
	if _, ok := resolve(doc, e.Pointer); !ok {
		t.Fatalf("Parse(%q) refused it at %q, which names nothing in it (%s)", raw, e.Pointer, e.Message)
	}
	if depth(doc) > MaxDepth || duplicateKeys(raw) {
		return // refusals that need no further proof
	}
	if _, isObject := doc.(map[string]any); isObject && e.Pointer == "" {
		t.Fatalf("Parse(%q), a JSON object within the limits, refused as a whole: %s", raw, e.Message)
	}
}

// checkAccepted: valid JSON, an object, within MaxBytes and MaxDepth.
func checkAccepted(t *testing.T, raw []byte) {
	if len(raw) > MaxBytes {
		t.Fatalf("Parse accepted %d bytes, more than MaxBytes", len(raw))
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("Parse accepted %q, which encoding/json refuses: %v", raw, err)
	}
	if _, ok := doc.(map[string]any); !ok {
		t.Fatalf("Parse accepted %q, which is not an object", raw)
	}
	if d := depth(doc); d > MaxDepth {
		t.Fatalf("Parse accepted %q, nested %d deep", raw, d)
	}
}

// resolve follows an RFC 6901 pointer in doc.
func resolve(doc any, pointer string) (any, bool) {
	if pointer == "" {
		return doc, true
	}
	for _, token := range strings.Split(pointer, "/")[1:] {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		switch x := doc.(type) {
		case map[string]any:
			v, ok := x[token]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			doc = x[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// depth is the nesting of objects and arrays in doc; a scalar is 0.
func depth(doc any) int {
	deepest := 0
	switch x := doc.(type) {
	case map[string]any:
		for _, v := range x {
			deepest = max(deepest, depth(v))
		}
	case []any:
		for _, v := range x {
			deepest = max(deepest, depth(v))
		}
	default:
		return 0
	}
	return deepest + 1
}

// duplicateKeys reports whether some object in raw (valid JSON) repeats a key.
func duplicateKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object    bool
		keys      map[string]bool
		expectKey bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			top := &stack[len(stack)-1]
			if key, ok := tok.(string); ok && top.expectKey {
				if top.keys[key] {
					return true
				}
				top.keys[key] = true
				top.expectKey = false
				continue
			}
			top.expectKey = true // this token is the value (or the object's end)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, keys: map[string]bool{}, expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
