package filter

import "strings"

// matcher is one compiled condition on the event's value at one position. present is false where the
// event has no such field (v is then nil and means nothing). Every matcher is immutable after Parse and
// looks at most one array level into v before handing elements to its children, so a match walks no
// deeper into the event than the filter is deep.
type matcher interface {
	match(v any, present bool) bool
}

// scalar is a plain filter value: a string, number, boolean or null.
type scalar struct {
	kind    jsonKind
	boolean bool
	number  float64
	text    string
}

// equals reports whether v (as encoding/json decodes into any) is this value: same JSON type, same value.
func (s scalar) equals(v any) bool {
	switch x := v.(type) {
	case nil:
		return s.kind == kindNull
	case bool:
		return s.kind == kindBool && s.boolean == x
	case float64:
		return s.kind == kindNumber && s.number == x
	case string:
		return s.kind == kindString && s.text == x
	}
	return false
}

// equalsMatcher is a plain value: an equal value, or an array with an equal element.
type equalsMatcher struct{ want scalar }

func (m equalsMatcher) match(v any, present bool) bool {
	if !present {
		return false
	}
	if m.want.equals(v) {
		return true
	}
	if elems, ok := v.([]any); ok {
		for _, e := range elems {
			if m.want.equals(e) {
				return true
			}
		}
	}
	return false
}

// containsAllMatcher is a plain array: an array with, for each of the filter's elements, an element
// matching it.
type containsAllMatcher struct{ elems []matcher }

func (m containsAllMatcher) match(v any, present bool) bool {
	values, ok := v.([]any)
	if !present || !ok {
		return false
	}
	for _, want := range m.elems {
		if !anyElement(values, want) {
			return false
		}
	}
	return true
}

func anyElement(values []any, m matcher) bool {
	for _, e := range values {
		if m.match(e, true) {
			return true
		}
	}
	return false
}

type field struct {
	name string
	m    matcher
}

// fieldsMatcher is an object's non-operator keys: an object whose fields all match, or an array with one
// such object.
type fieldsMatcher struct{ fields []field }

func (m fieldsMatcher) match(v any, present bool) bool {
	if !present {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		return m.matchObject(x)
	case []any:
		for _, e := range x {
			if object, ok := e.(map[string]any); ok && m.matchObject(object) {
				return true
			}
		}
	}
	return false
}

func (m fieldsMatcher) matchObject(object map[string]any) bool {
	for _, f := range m.fields {
		value, present := object[f.name]
		if !f.m.match(value, present) {
			return false
		}
	}
	return true
}

// allMatcher is $and, and an object's fields and operators together.
type allMatcher []matcher

func (m allMatcher) match(v any, present bool) bool {
	for _, c := range m {
		if !c.match(v, present) {
			return false
		}
	}
	return true
}

// anyMatcher is $or.
type anyMatcher []matcher

func (m anyMatcher) match(v any, present bool) bool {
	for _, c := range m {
		if c.match(v, present) {
			return true
		}
	}
	return false
}

// notMatcher is $not: exact negation, a missing field included.
type notMatcher struct{ m matcher }

func (m notMatcher) match(v any, present bool) bool { return !m.m.match(v, present) }

// existMatcher is $exist.
type existMatcher struct{ want bool }

func (m existMatcher) match(_ any, present bool) bool { return present == m.want }

// deepEqualMatcher is $eq (negate false) and $neq (negate true): the whole value against a literal, on a
// present field only.
type deepEqualMatcher struct {
	want   any
	negate bool
}

func (m deepEqualMatcher) match(v any, present bool) bool {
	return present && deepEqual(v, m.want) != m.negate
}

// deepEqual compares v with want, a literal from the filter; its recursion follows want, so it is bounded by
// MaxDepth.
func deepEqual(v, want any) bool {
	switch w := want.(type) {
	case nil:
		return v == nil
	case bool:
		x, ok := v.(bool)
		return ok && x == w
	case float64:
		x, ok := v.(float64)
		return ok && x == w
	case string:
		x, ok := v.(string)
		return ok && x == w
	case []any:
		x, ok := v.([]any)
		if !ok || len(x) != len(w) {
			return false
		}
		for i := range w {
			if !deepEqual(x[i], w[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		x, ok := v.(map[string]any)
		if !ok || len(x) != len(w) {
			return false
		}
		for k, wv := range w {
			xv, ok := x[k]
			if !ok || !deepEqual(xv, wv) {
				return false
			}
		}
		return true
	}
	return false
}

type compareOp uint8

const (
	opGt compareOp = iota
	opGte
	opLt
	opLte
)

// compareMatcher is $gt, $gte, $lt and $lte against a number or a string: a value of the operand's type
// that compares, or an array with such an element.
type compareMatcher struct {
	op     compareOp
	isText bool
	number float64
	text   string
}

func (m compareMatcher) match(v any, present bool) bool {
	if !present {
		return false
	}
	if m.compares(v) {
		return true
	}
	if elems, ok := v.([]any); ok {
		for _, e := range elems {
			if m.compares(e) {
				return true
			}
		}
	}
	return false
}

func (m compareMatcher) compares(v any) bool {
	c := 0
	switch x := v.(type) {
	case float64:
		if m.isText {
			return false
		}
		switch {
		case x < m.number:
			c = -1
		case x > m.number:
			c = 1
		}
	case string:
		if !m.isText {
			return false
		}
		c = strings.Compare(x, m.text)
	default:
		return false
	}
	switch m.op {
	case opGt:
		return c > 0
	case opGte:
		return c >= 0
	case opLt:
		return c < 0
	default:
		return c <= 0
	}
}

// scalarSet is $in's array operand, hashed so a long list against a long array stays linear.
type scalarSet struct {
	texts             map[string]struct{}
	numbers           map[float64]struct{}
	hasTrue, hasFalse bool
	hasNull           bool
}

func (s *scalarSet) add(v scalar) {
	switch v.kind {
	case kindString:
		if s.texts == nil {
			s.texts = map[string]struct{}{}
		}
		s.texts[v.text] = struct{}{}
	case kindNumber:
		if s.numbers == nil {
			s.numbers = map[float64]struct{}{}
		}
		s.numbers[v.number] = struct{}{}
	case kindBool:
		if v.boolean {
			s.hasTrue = true
		} else {
			s.hasFalse = true
		}
	case kindNull:
		s.hasNull = true
	}
}

func (s *scalarSet) has(v any) bool {
	switch x := v.(type) {
	case nil:
		return s.hasNull
	case bool:
		return x && s.hasTrue || !x && s.hasFalse
	case float64:
		_, ok := s.numbers[x]
		return ok
	case string:
		_, ok := s.texts[x]
		return ok
	}
	return false
}

// inMatcher is $in. With a list: the value, or an element of an array value, is in it. With a single
// string or number (needle): a string value contains it, an array value has it as an element.
type inMatcher struct {
	list   bool
	set    *scalarSet
	needle scalar
}

func (m inMatcher) match(v any, present bool) bool {
	if !present {
		return false
	}
	elems, isArray := v.([]any)
	if m.list {
		if isArray {
			for _, e := range elems {
				if m.set.has(e) {
					return true
				}
			}
			return false
		}
		return m.set.has(v)
	}
	if isArray {
		for _, e := range elems {
			if m.needle.equals(e) {
				return true
			}
		}
		return false
	}
	text, ok := v.(string)
	return ok && m.needle.kind == kindString && strings.Contains(text, m.needle.text)
}

// notInMatcher is $nin: present, and $in does not match.
type notInMatcher struct{ in inMatcher }

func (m notInMatcher) match(v any, present bool) bool { return present && !m.in.match(v, true) }

// affixMatcher is $startsWith (suffix false) and $endsWith (suffix true): a string with one of the affixes,
// or an array with such a string.
type affixMatcher struct {
	affixes []string
	suffix  bool
}

func (m affixMatcher) match(v any, present bool) bool {
	if !present {
		return false
	}
	if m.has(v) {
		return true
	}
	if elems, ok := v.([]any); ok {
		for _, e := range elems {
			if m.has(e) {
				return true
			}
		}
	}
	return false
}

func (m affixMatcher) has(v any) bool {
	text, ok := v.(string)
	if !ok {
		return false
	}
	for _, a := range m.affixes {
		if m.suffix && strings.HasSuffix(text, a) || !m.suffix && strings.HasPrefix(text, a) {
			return true
		}
	}
	return false
}
