package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// jsonKind is the JSON type of a jsonValue.
type jsonKind uint8

const (
	kindNull jsonKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// jsonValue is a filter's JSON as read token by token: objects keep their members in the order written, so
// the first problem in the text is the one reported, and repeated keys are seen (encoding/json's maps would
// keep the last silently). Each value knows its pointer for the refusals compile makes.
type jsonValue struct {
	kind    jsonKind
	pointer string
	boolean bool
	number  float64
	text    string
	elems   []jsonValue
	members []jsonMember
}

type jsonMember struct {
	key   string
	value jsonValue
}

// readDocument reads raw as exactly one JSON object nested at most MaxDepth deep.
func readDocument(raw []byte) (jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	first, err := dec.Token()
	if err != nil {
		return jsonValue{}, syntaxError(dec, err)
	}
	if delim, ok := first.(json.Delim); !ok || delim != '{' {
		return jsonValue{}, &Error{Message: `must be a JSON object, such as {"type": "invoice.paid"}`}
	}
	doc, err := readValue(dec, first, "", 1)
	if err != nil {
		return jsonValue{}, err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return jsonValue{}, &Error{Message: fmt.Sprintf("is not valid JSON: more follows the object that ends at offset %d", end)}
		}
		return jsonValue{}, syntaxError(dec, err)
	}
	return doc, nil
}

// readValue reads the value that starts with tok at pointer, depth levels deep (the top-level object is
// 1). Its recursion stops at MaxDepth+1, where it refuses.
func readValue(dec *json.Decoder, tok json.Token, pointer string, depth int) (jsonValue, error) {
	switch t := tok.(type) {
	case nil:
		return jsonValue{kind: kindNull, pointer: pointer}, nil
	case bool:
		return jsonValue{kind: kindBool, pointer: pointer, boolean: t}, nil
	case string:
		return jsonValue{kind: kindString, pointer: pointer, text: t}, nil
	case json.Number:
		n, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return jsonValue{}, &Error{Pointer: pointer, Message: fmt.Sprintf("the number %s is too large", t)}
		}
		return jsonValue{kind: kindNumber, pointer: pointer, number: n}, nil
	case json.Delim:
		if depth > MaxDepth {
			return jsonValue{}, &Error{Pointer: pointer, Message: fmt.Sprintf("nests objects and arrays more than %d deep", MaxDepth)}
		}
		if t == '[' {
			return readArray(dec, pointer, depth)
		}
		return readObject(dec, pointer, depth)
	}
	return jsonValue{}, &Error{Pointer: pointer, Message: "is not valid JSON"}
}

func readArray(dec *json.Decoder, pointer string, depth int) (jsonValue, error) {
	v := jsonValue{kind: kindArray, pointer: pointer}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonValue{}, syntaxError(dec, err)
		}
		elem, err := readValue(dec, tok, pointerToIndex(pointer, len(v.elems)), depth+1)
		if err != nil {
			return jsonValue{}, err
		}
		v.elems = append(v.elems, elem)
	}
	if _, err := dec.Token(); err != nil { // the closing ]
		return jsonValue{}, syntaxError(dec, err)
	}
	return v, nil
}

func readObject(dec *json.Decoder, pointer string, depth int) (jsonValue, error) {
	v := jsonValue{kind: kindObject, pointer: pointer}
	seen := map[string]bool{}
	for dec.More() {
		keyTok, err := dec.Token()
		if err != nil {
			return jsonValue{}, syntaxError(dec, err)
		}
		key, ok := keyTok.(string)
		if !ok { // the decoder refuses anything else where a key goes; this only keeps a panic impossible
			return jsonValue{}, &Error{Pointer: pointer, Message: "is not valid JSON: an object key must be a string"}
		}
		memberPointer := pointerTo(pointer, key)
		if seen[key] {
			return jsonValue{}, &Error{Pointer: memberPointer, Message: fmt.Sprintf("the key %q appears twice in one object", key)}
		}
		seen[key] = true
		tok, err := dec.Token()
		if err != nil {
			return jsonValue{}, syntaxError(dec, err)
		}
		member, err := readValue(dec, tok, memberPointer, depth+1)
		if err != nil {
			return jsonValue{}, err
		}
		v.members = append(v.members, jsonMember{key: key, value: member})
	}
	if _, err := dec.Token(); err != nil { // the closing }
		return jsonValue{}, syntaxError(dec, err)
	}
	return v, nil
}

// syntaxError words a decoder's error for a customer, with where in the text it is.
func syntaxError(dec *json.Decoder, err error) error {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		// A decoder's SyntaxError.Offset can count from the start of the token it was reading rather than of
		// the text; InputOffset is where in the text the decoder stopped.
		return &Error{Message: fmt.Sprintf("is not valid JSON: %s (at offset %d)", syntax.Error(), dec.InputOffset())}
	case errors.Is(err, io.EOF) && dec.InputOffset() == 0:
		return &Error{Message: "is empty; a filter is a JSON object"}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Message: "is not valid JSON: it ends too soon"}
	}
	return &Error{Message: "is not valid JSON: " + err.Error()}
}
