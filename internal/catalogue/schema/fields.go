package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Field is one row of a schema as a page lists it: where in the event the value is, what it is.
type Field struct {
	// Path is where the value sits in what a receiver gets: data.customer.email, data.items[].price
	// ([] is every element of an array).
	Path string `json:"path"`
	// Type is the schema's type ("string", "integer | null"; "array of object"); "any" when it says none.
	Type     string `json:"type"`
	Required bool   `json:"required"`
	// Description is the schema's description, or its title.
	Description string `json:"description"`
	// Enum are the allowed values (a const is one), strings as they are and others as JSON.
	Enum []string `json:"enum"`
	// Bounds are the other limits on the value that hold whichever branch of the schema applies, in words:
	// "≥ 1", "< 100", "multiple of 5", "at most 64 characters", "matches ^[a-z]+$", "at least 1 item";
	// "each ≥ 0" for an array's elements.
	Bounds []string `json:"bounds"`
}

// Limits of Fields: a schema deeper or wider than this is listed that far. maxFieldSteps bounds the work
// (each schema visited, $refs and branches followed, is a step): a schema whose $refs and branches
// multiply is listed that far, not at a cost out of proportion to its size.
const (
	maxFieldDepth = 32
	maxFields     = 1000
	maxFieldSteps = 20_000
)

// Fields flattens a JSON Schema into one row per property, depth first in the schema's own order,
// starting at "data" (the payload in the delivered body). It follows local $refs (#/$defs/...; a
// recursive one is listed once, as "recursive"), merges allOf, and lists what any branch of anyOf/oneOf
// has (required, and bounds, only where allOf or the object itself says so). It is meant for display:
// keywords it does not know are ignored. A schema that is not a JSON object lists nothing. complete is
// false when the schema is larger than Fields lists (maxFieldDepth, maxFields, maxFieldSteps): the rows
// are then the first ones only.
func Fields(schema json.RawMessage) (fields []Field, complete bool, err error) {
	if len(bytes.TrimSpace(schema)) == 0 || bytes.Equal(bytes.TrimSpace(schema), []byte("null")) {
		return []Field{}, true, nil
	}
	root, err := parseOrdered(schema)
	if err != nil {
		return nil, false, err
	}
	f := &flattener{root: root, out: []Field{}}
	if root.kind != kindObject {
		return f.out, true, nil
	}
	f.children(root, "data", nil, 0)
	return f.out, !f.cut, nil
}

// prop is a property with the $refs followed to reach it.
type prop struct {
	key   string
	val   *jvalue
	stack []string
}

type flattener struct {
	root  *jvalue
	out   []Field
	steps int
	cut   bool // a limit stopped the listing
}

// step counts one schema visited; false once maxFieldSteps are spent.
func (f *flattener) step() bool {
	f.steps++
	if f.steps > maxFieldSteps {
		f.cut = true
	}
	return !f.cut
}

// shape is what one schema (with its allOf, anyOf and oneOf) says about a value.
type shape struct {
	types    []string
	props    []prop
	propSeen map[string]bool
	required map[string]bool
	items    *jvalue
	// itemsStack is the $refs followed to reach items (a $ref back into one of them is a recursion).
	itemsStack  []string
	description string
	enum        []string
	bounds      []string
	recursive   string // the $ref that led back into itself
}

func newShape() *shape { return &shape{required: map[string]bool{}, propSeen: map[string]bool{}} }

// gather merges s and the schemas it composes into one shape. stack holds the $refs being followed.
func (f *flattener) gather(s *jvalue, sh *shape, stack []string, optional bool) {
	if s == nil || s.kind != kindObject || len(stack) > maxFieldDepth || !f.step() {
		return
	}
	if ref, ok := s.get("$ref").str(); ok {
		if slices.Contains(stack, ref) {
			sh.recursive = ref
			return
		}
		if t := f.lookup(ref); t != nil {
			f.gather(t, sh, append(stack[:len(stack):len(stack)], ref), optional)
		}
	}
	if d, ok := s.get("description").str(); ok && sh.description == "" {
		sh.description = d
	} else if d, ok := s.get("title").str(); ok && sh.description == "" {
		sh.description = d
	}
	switch t := s.get("type"); {
	case t == nil:
	case t.kind == kindString:
		sh.addType(t.s)
	case t.kind == kindArray:
		for _, e := range t.arr {
			if e.kind == kindString {
				sh.addType(e.s)
			}
		}
	}
	if p := s.get("properties"); p != nil && p.kind == kindObject {
		for _, kv := range p.obj {
			if !sh.propSeen[kv.key] {
				sh.propSeen[kv.key] = true
				sh.props = append(sh.props, prop{key: kv.key, val: kv.val, stack: stack})
			}
		}
	}
	if !optional {
		sh.addBounds(s)
	}
	if r := s.get("required"); r != nil && r.kind == kindArray && !optional {
		for _, e := range r.arr {
			if e.kind == kindString {
				sh.required[e.s] = true
			}
		}
	}
	if it := s.get("items"); it != nil && it.kind == kindObject && sh.items == nil {
		sh.items, sh.itemsStack = it, stack
	}
	if e := s.get("enum"); e != nil && e.kind == kindArray && sh.enum == nil {
		for _, v := range e.arr {
			sh.enum = append(sh.enum, v.display())
		}
	}
	if c := s.get("const"); c != nil && sh.enum == nil {
		sh.enum = []string{c.display()}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if list := s.get(kw); list != nil && list.kind == kindArray {
			for _, sub := range list.arr {
				f.gather(sub, sh, stack, optional || kw != "allOf")
			}
		}
	}
}

// addBounds adds what s bounds its value by (numbers, lengths, a pattern, counts of items), in words.
func (sh *shape) addBounds(s *jvalue) {
	num := func(key string) (string, bool) {
		v := s.get(key)
		if v == nil || v.kind != kindOther || len(v.raw) == 0 || v.raw[0] == 't' || v.raw[0] == 'f' || v.raw[0] == 'n' {
			return "", false
		}
		return string(v.raw), true
	}
	// Draft 4 says exclusiveMinimum: true beside a minimum; later drafts give the bound itself.
	exclusive := func(key string) bool {
		v := s.get(key)
		return v != nil && v.kind == kindOther && string(v.raw) == "true"
	}
	add := func(b string) {
		if !slices.Contains(sh.bounds, b) {
			sh.bounds = append(sh.bounds, b)
		}
	}
	if n, ok := num("minimum"); ok {
		if exclusive("exclusiveMinimum") {
			add("> " + n)
		} else {
			add("≥ " + n)
		}
	}
	if n, ok := num("exclusiveMinimum"); ok {
		add("> " + n)
	}
	if n, ok := num("maximum"); ok {
		if exclusive("exclusiveMaximum") {
			add("< " + n)
		} else {
			add("≤ " + n)
		}
	}
	if n, ok := num("exclusiveMaximum"); ok {
		add("< " + n)
	}
	if n, ok := num("multipleOf"); ok {
		add("multiple of " + n)
	}
	count := func(minKey, maxKey, one, many string) {
		lo, hasLo := num(minKey)
		hi, hasHi := num(maxKey)
		unit := func(n string) string {
			if n == "1" {
				return n + " " + one
			}
			return n + " " + many
		}
		switch {
		case hasLo && hasHi && lo == hi:
			add("exactly " + unit(lo))
		case hasLo && hasHi:
			add(lo + " to " + unit(hi))
		case hasLo && lo != "0":
			add("at least " + unit(lo))
		case hasHi:
			add("at most " + unit(hi))
		}
	}
	count("minLength", "maxLength", "character", "characters")
	count("minItems", "maxItems", "item", "items")
	count("minProperties", "maxProperties", "property", "properties")
	if p, ok := s.get("pattern").str(); ok {
		add("matches " + p)
	}
}

func (sh *shape) addType(t string) {
	if !slices.Contains(sh.types, t) {
		sh.types = append(sh.types, t)
	}
}

func (sh *shape) typeName() string {
	types := slices.Clone(sh.types)
	if len(types) == 0 {
		switch {
		case len(sh.props) > 0:
			types = []string{"object"}
		case sh.items != nil:
			types = []string{"array"}
		}
	}
	if len(types) == 0 {
		return "any"
	}
	return strings.Join(types, " | ")
}

// children lists the properties (and array elements' properties) of the schema s at path.
func (f *flattener) children(s *jvalue, path string, stack []string, depth int) {
	sh := newShape()
	f.gather(s, sh, stack, false)
	f.childrenOf(sh, path, depth)
}

func (f *flattener) childrenOf(sh *shape, path string, depth int) {
	if depth >= maxFieldDepth {
		f.cut = f.cut || len(sh.props) > 0
		return
	}
	for _, p := range sh.props {
		if len(f.out) >= maxFields || f.cut {
			f.cut = true
			return
		}
		child := newShape()
		f.gather(p.val, child, p.stack, false)
		row := Field{Path: path + "." + p.key, Type: child.typeName(), Required: sh.required[p.key],
			Description: child.description, Enum: child.enum, Bounds: child.bounds}
		if row.Enum == nil {
			row.Enum = []string{}
		}
		if row.Bounds == nil {
			row.Bounds = []string{}
		}
		if child.recursive != "" {
			row.Type = "recursive (" + child.recursive + ")"
			f.out = append(f.out, row)
			continue
		}
		var elem *shape
		if child.items != nil {
			elem = newShape()
			f.gather(child.items, elem, child.itemsStack, false)
			if row.Type == "array" || row.Type == "any" {
				row.Type = "array of " + elem.typeName()
			}
			if len(row.Enum) == 0 && len(elem.enum) > 0 {
				row.Enum = elem.enum
			}
			for _, b := range elem.bounds {
				row.Bounds = append(row.Bounds, "each "+b)
			}
			if elem.recursive != "" {
				row.Type = "array of recursive (" + elem.recursive + ")"
			}
		}
		f.out = append(f.out, row)
		f.childrenOf(child, row.Path, depth+1)
		if elem != nil && elem.recursive == "" {
			f.childrenOf(elem, row.Path+"[]", depth+1)
		}
	}
}

// lookup resolves a local $ref ("#/$defs/Item") in the schema; nil when it is not one.
func (f *flattener) lookup(ref string) *jvalue {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	cur := f.root
	if frag == "" {
		return cur
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch {
		case cur == nil:
			return nil
		case cur.kind == kindObject:
			cur = cur.get(tok)
		case cur.kind == kindArray:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.arr) {
				return nil
			}
			cur = cur.arr[i]
		default:
			return nil
		}
	}
	return cur
}

// jvalue is a JSON value that keeps its objects' key order (encoding/json's maps would not).
type jvalue struct {
	kind jkind
	obj  []jkv
	arr  []*jvalue
	s    string          // kindString
	raw  json.RawMessage // numbers, booleans, null
}

type jkv struct {
	key string
	val *jvalue
}

type jkind int

const (
	kindOther jkind = iota
	kindObject
	kindArray
	kindString
)

func (v *jvalue) get(key string) *jvalue {
	if v == nil || v.kind != kindObject {
		return nil
	}
	for _, kv := range v.obj {
		if kv.key == key {
			return kv.val
		}
	}
	return nil
}

func (v *jvalue) str() (string, bool) {
	if v == nil || v.kind != kindString {
		return "", false
	}
	return v.s, true
}

// display is a value as a page shows it: a string as it is, anything else as compact JSON.
func (v *jvalue) display() string {
	switch v.kind {
	case kindString:
		return v.s
	case kindOther:
		return string(v.raw)
	}
	var b bytes.Buffer
	v.write(&b)
	return b.String()
}

func (v *jvalue) write(b *bytes.Buffer) {
	switch v.kind {
	case kindString:
		writeString(b, v.s)
	case kindOther:
		b.Write(v.raw)
	case kindArray:
		b.WriteByte('[')
		for i, e := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			e.write(b)
		}
		b.WriteByte(']')
	case kindObject:
		b.WriteByte('{')
		for i, kv := range v.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, kv.key)
			b.WriteByte(':')
			kv.val.write(b)
		}
		b.WriteByte('}')
	}
}

// writeString writes s as a JSON string, with <, > and & as they are (the importer writes the same way).
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

func parseOrdered(raw []byte) (*jvalue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("schema: more than one JSON value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, depth int) (*jvalue, error) {
	if depth > 256 {
		return nil, errors.New("schema: nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jvalue{kind: kindObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				val, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.obj = append(v.obj, jkv{key: key, val: val})
			}
			_, err := dec.Token()
			return v, err
		case '[':
			v := &jvalue{kind: kindArray}
			for dec.More() {
				e, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
			}
			_, err := dec.Token()
			return v, err
		}
		return nil, errors.New("schema: unexpected " + t.String())
	case string:
		return &jvalue{kind: kindString, s: t}, nil
	case json.Number:
		return &jvalue{raw: json.RawMessage(t.String())}, nil
	case bool:
		return &jvalue{raw: json.RawMessage(strconv.FormatBool(t))}, nil
	default:
		return &jvalue{raw: json.RawMessage("null")}, nil
	}
}
