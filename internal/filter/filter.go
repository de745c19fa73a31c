package filter

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MaxBytes bounds a filter's JSON text.
const MaxBytes = 4096

// MaxDepth bounds the nesting of objects and arrays in a filter; the top-level object is depth 1.
const MaxDepth = 8

// Filter is a parsed, validated filter; safe for concurrent use by many goroutines (nothing in it changes
// after Parse).
type Filter struct {
	root matcher
}

// Error is a refused filter. Pointer is the RFC 6901 JSON pointer into the filter ("" for the whole,
// "/data/amount/$gte"); Message says what is wrong in plain words for a customer.
type Error struct {
	Pointer string
	Message string
}

func (e *Error) Error() string {
	if e.Pointer == "" {
		return "filter: " + e.Message
	}
	return "filter at " + e.Pointer + ": " + e.Message
}

// Parse validates raw (a JSON object) and compiles it. Refusals are *Error.
func Parse(raw []byte) (*Filter, error) {
	if len(raw) > MaxBytes {
		return nil, &Error{Message: fmt.Sprintf("is %d bytes, more than the %d a filter may have", len(raw), MaxBytes)}
	}
	doc, err := readDocument(raw)
	if err != nil {
		return nil, err
	}
	root, err := compile(doc)
	if err != nil {
		return nil, err
	}
	return &Filter{root: root}, nil
}

// Match reports whether the event matches. event is what encoding/json.Unmarshal produces into `any`
// (numbers float64) for {"type": <event type>, "data": <payload>}; values of other Go types match nothing.
// A nil *Filter is a subscription without a filter and matches every event.
func (f *Filter) Match(event any) bool {
	if f == nil {
		return true
	}
	return f.root.match(event, true)
}

// Event builds the document Match takes from an event type and its raw JSON payload (one json.Unmarshal).
func Event(eventType string, payload []byte) (any, error) {
	var data any
	if err := json.Unmarshal(payload, &data); err != nil {
		return nil, fmt.Errorf("filter: the payload is not valid JSON: %w", err)
	}
	return map[string]any{"type": eventType, "data": data}, nil
}

// pointerTo appends one reference token to a JSON pointer, escaped as RFC 6901 §3 says.
func pointerTo(pointer, token string) string {
	if strings.ContainsAny(token, "~/") {
		token = strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
	}
	return pointer + "/" + token
}

func pointerToIndex(pointer string, i int) string {
	return fmt.Sprintf("%s/%d", pointer, i)
}
