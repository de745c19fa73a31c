package filter

import (
	"errors"
	"strings"
	"testing"
)

// nested is a filter whose objects nest depth deep: {"a":{"a":...{}}}.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// brief cuts a long filter for a failure message.
func brief(filter string) string {
	if len(filter) > 120 {
		return filter[:120] + "…"
	}
	return filter
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		filter  string
		pointer string
		message string // a part of the message
	}{
		{"too large", `{"data": "` + strings.Repeat("x", MaxBytes) + `"}`, "", "more than the 4096 a filter may have"},
		{"empty", ``, "", "is empty"},
		{"only spaces", "  \n", "", "is empty"},
		{"invalid JSON", `{"type": }`, "", "is not valid JSON"},
		{"cut short", `{"type": "a"`, "", "ends too soon"},
		{"trailing comma", `{"type": "a",}`, "", "is not valid JSON"},
		{"two objects", `{} {}`, "", "more follows"},
		{"garbage after", `{}x`, "", "is not valid JSON"},
		{"an array", `[{"type": "a"}]`, "", "must be a JSON object"},
		{"a string", `"invoice.paid"`, "", "must be a JSON object"},
		{"null", `null`, "", "must be a JSON object"},
		{"number too large", `{"data": {"n": 1e400}}`, "/data/n", "too large"},
		{"repeated key", `{"data": {"a": 1, "b": 2, "a": 3}}`, "/data/a", `"a" appears twice`},
		{"repeated operator", `{"data": {"n": {"$gt": 1, "$gt": 2}}}`, "/data/n/$gt", "appears twice"},
		{"too deep", nested(MaxDepth + 1), "/a/a/a/a/a/a/a/a", "more than 8 deep"},
		{"too deep in an array", `{"a":[[[[[[[[1]]]]]]]]}`, "/a/0/0/0/0/0/0/0", "more than 8 deep"},
		{"too deep inside $eq", `{"data":{"a":{"b":{"c":{"d":{"$eq":{"e":{"f":[]}}}}}}}}`, "/data/a/b/c/d/$eq/e/f", "more than 8 deep"},
		{"unknown operator", `{"data": {"amount": {"$gtt": 1}}}`, "/data/amount/$gtt", `"$gtt" is not an operator; the operators are $eq`},
		{"unknown operator at the top", `{"$ref": "x"}`, "/$ref", "is not an operator"},
		{"operator miscapitalised", `{"data": {"s": {"$startswith": "a"}}}`, "/data/s/$startswith", `did you mean "$startsWith"?`},
		{"bare dollar", `{"$": 1}`, "/$", "is not an operator"},
		{"unknown operator in $or", `{"$or": [{"type": "a"}, {"type": {"$like": "a%"}}]}`, "/$or/1/type/$like", "is not an operator"},
		{"unknown operator in $not", `{"$not": {"data": {"$size": 1}}}`, "/$not/data/$size", "is not an operator"},
		{"unknown operator in a plain array", `{"data": {"n": [1, {"$regex": "a"}]}}`, "/data/n/1/$regex", "is not an operator"},
		{"pointer escapes ~ and /", `{"data": {"a/b": {"c~d": {"$bad": 1}}}}`, "/data/a~1b/c~0d/$bad", "is not an operator"},
		{"$gt boolean", `{"data": {"amount": {"$gt": true}}}`, "/data/amount/$gt", "expects a number or a string"},
		{"$gte null", `{"data": {"amount": {"$gte": null}}}`, "/data/amount/$gte", "expects a number or a string"},
		{"$lt array", `{"data": {"amount": {"$lt": [1, 2, 3]}}}`, "/data/amount/$lt", "expects a number or a string"},
		{"$lte object", `{"data": {"amount": {"$lte": {"$ref": "x"}}}}`, "/data/amount/$lte", "expects a number or a string"},
		{"$in object", `{"type": {"$in": {"a": 1}}}`, "/type/$in", "expects an array of strings, numbers, booleans or nulls, or a single string or number"},
		{"$in boolean", `{"type": {"$in": true}}`, "/type/$in", "expects an array"},
		{"$in null", `{"type": {"$in": null}}`, "/type/$in", "expects an array"},
		{"$in with an object element", `{"type": {"$in": ["a", {"b": 1}]}}`, "/type/$in/1", "must be a string, number, boolean or null"},
		{"$nin with an array element", `{"type": {"$nin": [["a"]]}}`, "/type/$nin/0", "must be a string, number, boolean or null"},
		{"$startsWith number", `{"type": {"$startsWith": 1}}`, "/type/$startsWith", "expects a string or a non-empty array of strings"},
		{"$startsWith empty array", `{"type": {"$startsWith": []}}`, "/type/$startsWith", "non-empty array"},
		{"$endsWith with a number element", `{"type": {"$endsWith": ["a", 2]}}`, "/type/$endsWith/1", "must be a string"},
		{"$exist string", `{"data": {"x": {"$exist": "true"}}}`, "/data/x/$exist", "expects true or false"},
		{"$exist null", `{"data": {"x": {"$exist": null}}}`, "/data/x/$exist", "expects true or false"},
		{"$or object", `{"$or": {"type": "a"}}`, "/$or", "expects a non-empty array of conditions"},
		{"$or empty", `{"$or": []}`, "/$or", "expects a non-empty array of conditions"},
		{"$and string", `{"data": {"n": {"$and": "x"}}}`, "/data/n/$and", "expects a non-empty array of conditions"},
		{"$and empty", `{"$and": []}`, "/$and", "expects a non-empty array of conditions"},
		{"first problem in the text is reported", `{"data": {"b": {"$gt": null}, "a": {"$lt": null}}}`, "/data/b/$gt", "expects a number or a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse([]byte(c.filter))
			if err == nil {
				t.Fatalf("Parse(%s) accepted it: %+v", brief(c.filter), f)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%s) error %v (%T) is not *Error", brief(c.filter), err, err)
			}
			if e.Pointer != c.pointer {
				t.Errorf("Parse(%s) Pointer = %q, want %q (message %q)", brief(c.filter), e.Pointer, c.pointer, e.Message)
			}
			if !strings.Contains(e.Message, c.message) {
				t.Errorf("Parse(%s) Message = %q, want it to say %q", brief(c.filter), e.Message, c.message)
			}
		})
	}
}

// TestParseAcceptsAtTheLimits: the limits are inclusive, so what a refusal says is allowed is allowed.
func TestParseAcceptsAtTheLimits(t *testing.T) {
	t.Parallel()
	prefix, suffix := `{"data": "`, `"}`
	largest := prefix + strings.Repeat("x", MaxBytes-len(prefix)-len(suffix)) + suffix
	for name, filter := range map[string]string{
		"MaxBytes exactly":            largest,
		"MaxDepth objects":            nested(MaxDepth),
		"MaxDepth arrays":             `{"a":[[[[[[[1]]]]]]]}`,
		"every operator":              `{"type": {"$eq": "a", "$neq": "b", "$gt": "0", "$gte": 0, "$lt": "z", "$lte": 9, "$in": ["a", 1, true, null], "$nin": "b", "$startsWith": "a", "$endsWith": ["a", "b"], "$exist": true, "$or": [1, "a", [], {}], "$and": [{}], "$not": null}}`,
		"$eq of anything":             `{"data": {"$eq": {"$gt": [{"$weird": null}]}}}`,
		"empty field name":            `{"data": {"": 1}}`,
		"same key in sibling objects": `{"data": {"a": 1}, "type": {"a": 1}}`,
	} {
		if _, err := Parse([]byte(filter)); err != nil {
			t.Errorf("%s: Parse refused it: %v", name, err)
		}
	}
	if len(largest) != MaxBytes {
		t.Fatalf("the largest filter is %d bytes, not %d", len(largest), MaxBytes)
	}
}
