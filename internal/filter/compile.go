package filter

import (
	"fmt"
	"strings"
)

// operators are the "$" keys a filter may use, in the order the refusal of an unknown one lists them.
var operators = []string{
	"$eq", "$neq", "$gt", "$gte", "$lt", "$lte", "$in", "$nin",
	"$startsWith", "$endsWith", "$exist", "$or", "$and", "$not",
}

// compile turns a filter value read by readDocument into its matcher, refusing what Parse refuses. Its
// recursion follows the value, which readDocument bounded to MaxDepth.
func compile(v jsonValue) (matcher, error) {
	switch v.kind {
	case kindArray:
		elems := make([]matcher, len(v.elems))
		for i, e := range v.elems {
			m, err := compile(e)
			if err != nil {
				return nil, err
			}
			elems[i] = m
		}
		return containsAllMatcher{elems: elems}, nil
	case kindObject:
		return compileObject(v)
	}
	return equalsMatcher{want: v.scalar()}, nil
}

// compileObject is an object's fields, matched together as one fieldsMatcher (so on an array they must hold
// for the same element), and each of its operators.
func compileObject(v jsonValue) (matcher, error) {
	var fields []field
	var conditions []matcher
	for _, member := range v.members {
		if !strings.HasPrefix(member.key, "$") {
			m, err := compile(member.value)
			if err != nil {
				return nil, err
			}
			fields = append(fields, field{name: member.key, m: m})
			continue
		}
		m, err := compileOperator(member.key, member.value)
		if err != nil {
			return nil, err
		}
		conditions = append(conditions, m)
	}
	if len(fields) > 0 || len(conditions) == 0 { // {} matches any object, as in Outpost
		conditions = append([]matcher{fieldsMatcher{fields: fields}}, conditions...)
	}
	if len(conditions) == 1 {
		return conditions[0], nil
	}
	return allMatcher(conditions), nil
}

func compileOperator(op string, operand jsonValue) (matcher, error) {
	refuse := func(message string) (matcher, error) {
		return nil, &Error{Pointer: operand.pointer, Message: message}
	}
	switch op {
	case "$eq", "$neq":
		return deepEqualMatcher{want: operand.literal(), negate: op == "$neq"}, nil
	case "$gt", "$gte", "$lt", "$lte":
		m := compareMatcher{op: map[string]compareOp{"$gt": opGt, "$gte": opGte, "$lt": opLt, "$lte": opLte}[op]}
		switch operand.kind {
		case kindNumber:
			m.number = operand.number
		case kindString:
			m.isText, m.text = true, operand.text
		default:
			return refuse("expects a number or a string")
		}
		return m, nil
	case "$in", "$nin":
		in, err := compileIn(operand)
		if err != nil {
			return nil, err
		}
		if op == "$nin" {
			return notInMatcher{in: in}, nil
		}
		return in, nil
	case "$startsWith", "$endsWith":
		affixes, err := compileAffixes(operand)
		if err != nil {
			return nil, err
		}
		return affixMatcher{affixes: affixes, suffix: op == "$endsWith"}, nil
	case "$exist":
		if operand.kind != kindBool {
			return refuse("expects true or false")
		}
		return existMatcher{want: operand.boolean}, nil
	case "$or", "$and":
		if operand.kind != kindArray || len(operand.elems) == 0 {
			return refuse("expects a non-empty array of conditions")
		}
		members := make([]matcher, len(operand.elems))
		for i, e := range operand.elems {
			m, err := compile(e)
			if err != nil {
				return nil, err
			}
			members[i] = m
		}
		if op == "$or" {
			return anyMatcher(members), nil
		}
		return allMatcher(members), nil
	case "$not":
		m, err := compile(operand)
		if err != nil {
			return nil, err
		}
		return notMatcher{m: m}, nil
	}
	return refuse(unknownOperator(op))
}

func compileIn(operand jsonValue) (inMatcher, error) {
	switch operand.kind {
	case kindString, kindNumber:
		return inMatcher{needle: operand.scalar()}, nil
	case kindArray:
		set := &scalarSet{}
		for _, e := range operand.elems {
			if e.kind == kindArray || e.kind == kindObject {
				return inMatcher{}, &Error{Pointer: e.pointer, Message: "must be a string, number, boolean or null"}
			}
			set.add(e.scalar())
		}
		return inMatcher{list: true, set: set}, nil
	}
	return inMatcher{}, &Error{Pointer: operand.pointer, Message: "expects an array of strings, numbers, booleans or nulls, or a single string or number"}
}

func compileAffixes(operand jsonValue) ([]string, error) {
	switch operand.kind {
	case kindString:
		return []string{operand.text}, nil
	case kindArray:
		if len(operand.elems) == 0 {
			break
		}
		affixes := make([]string, len(operand.elems))
		for i, e := range operand.elems {
			if e.kind != kindString {
				return nil, &Error{Pointer: e.pointer, Message: "must be a string"}
			}
			affixes[i] = e.text
		}
		return affixes, nil
	}
	return nil, &Error{Pointer: operand.pointer, Message: "expects a string or a non-empty array of strings"}
}

// unknownOperator words the refusal of a "$" key that is no operator, suggesting the one it miscapitalises.
func unknownOperator(op string) string {
	for _, known := range operators {
		if strings.EqualFold(op, known) {
			return fmt.Sprintf("%q is not an operator; did you mean %q?", op, known)
		}
	}
	return fmt.Sprintf("%q is not an operator; the operators are %s (a field name cannot start with \"$\")", op, strings.Join(operators, " "))
}

func (v jsonValue) scalar() scalar {
	return scalar{kind: v.kind, boolean: v.boolean, number: v.number, text: v.text}
}

// literal is v as encoding/json would decode it into any: $eq's operand, compared as data (a "$" key in it
// is a field name, not an operator).
func (v jsonValue) literal() any {
	switch v.kind {
	case kindBool:
		return v.boolean
	case kindNumber:
		return v.number
	case kindString:
		return v.text
	case kindArray:
		elems := make([]any, len(v.elems))
		for i, e := range v.elems {
			elems[i] = e.literal()
		}
		return elems
	case kindObject:
		members := make(map[string]any, len(v.members))
		for _, m := range v.members {
			members[m.key] = m.value.literal()
		}
		return members
	}
	return nil
}
