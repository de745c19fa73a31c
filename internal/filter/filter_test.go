package filter

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// matchCase is a filter, an event (type and payload) and whether it matches. Each operator has cases that
// match and cases that do not, so a matcher answering always true or always false fails here.
type matchCase struct {
	name    string
	filter  string
	typ     string
	payload string
	want    bool
}

var matchCases = []matchCase{
	// The whole filter.
	{"empty filter matches every event", `{}`, "a", `null`, true},
	{"type equal", `{"type": "invoice.paid"}`, "invoice.paid", `{}`, true},
	{"type different", `{"type": "invoice.paid"}`, "invoice.voided", `{}`, false},
	{"type and data both needed", `{"type": "invoice.paid", "data": {"x": 1}}`, "invoice.paid", `{"x": 2}`, false},

	// Plain values.
	{"string equal", `{"data": {"s": "a"}}`, "t", `{"s": "a"}`, true},
	{"string different", `{"data": {"s": "a"}}`, "t", `{"s": "b"}`, false},
	{"number equal, written differently", `{"data": {"n": 1.0}}`, "t", `{"n": 1e0}`, true},
	{"number different", `{"data": {"n": 1}}`, "t", `{"n": 2}`, false},
	{"number is not its string", `{"data": {"n": 1}}`, "t", `{"n": "1"}`, false},
	{"string is not its number", `{"data": {"n": "1"}}`, "t", `{"n": 1}`, false},
	{"true equal", `{"data": {"b": true}}`, "t", `{"b": true}`, true},
	{"true is not false", `{"data": {"b": true}}`, "t", `{"b": false}`, false},
	{"false is not null", `{"data": {"b": false}}`, "t", `{"b": null}`, false},
	{"null equal", `{"data": {"z": null}}`, "t", `{"z": null}`, true},
	{"null is not missing", `{"data": {"z": null}}`, "t", `{}`, false},
	{"null is not 0", `{"data": {"z": null}}`, "t", `{"z": 0}`, false},
	{"plain value on an object", `{"data": {"o": 1}}`, "t", `{"o": {"a": 1}}`, false},
	{"plain value, data itself", `{"data": 5}`, "t", `5`, true},

	// Arrays in the event contain plain values.
	{"array contains", `{"data": {"tags": "gift"}}`, "t", `{"tags": ["x", "gift"]}`, true},
	{"array lacks", `{"data": {"tags": "gift"}}`, "t", `{"tags": ["x", "y"]}`, false},
	{"empty array lacks", `{"data": {"tags": "gift"}}`, "t", `{"tags": []}`, false},
	{"array contains null", `{"data": {"tags": null}}`, "t", `{"tags": [1, null]}`, true},
	{"nested arrays are not looked into", `{"data": {"a": 1}}`, "t", `{"a": [[1]]}`, false},

	// Plain arrays in the filter: the event's array contains them all.
	{"array contains all", `{"data": {"tags": ["a", "b"]}}`, "t", `{"tags": ["b", "c", "a"]}`, true},
	{"array contains some only", `{"data": {"tags": ["a", "b"]}}`, "t", `{"tags": ["a", "c"]}`, false},
	{"filter array on a scalar", `{"data": {"tags": ["a"]}}`, "t", `{"tags": "a"}`, false},
	{"empty filter array on an array", `{"data": {"tags": []}}`, "t", `{"tags": ["a"]}`, true},
	{"empty filter array on a scalar", `{"data": {"tags": []}}`, "t", `{"tags": "a"}`, false},
	{"array of operators", `{"data": {"n": [{"$gt": 2}, {"$lt": 0}]}}`, "t", `{"n": [-1, 1, 3]}`, true},
	{"array of operators, one unmet", `{"data": {"n": [{"$gt": 2}, {"$lt": 0}]}}`, "t", `{"n": [1, 3]}`, false},
	{"array of arrays", `{"data": {"m": [[1, 2]]}}`, "t", `{"m": [[3], [2, 1]]}`, true},

	// Objects match field by field.
	{"nested object", `{"data": {"customer": {"tier": "gold"}}}`, "t", `{"customer": {"tier": "gold", "id": 7}}`, true},
	{"nested object, other value", `{"data": {"customer": {"tier": "gold"}}}`, "t", `{"customer": {"tier": "basic"}}`, false},
	{"nested object, every field needed", `{"data": {"c": {"a": 1, "b": 2}}}`, "t", `{"c": {"a": 1}}`, false},
	{"nested object on a scalar", `{"data": {"c": {"a": 1}}}`, "t", `{"c": "a"}`, false},
	{"nested object, missing", `{"data": {"c": {"a": 1}}}`, "t", `{}`, false},
	{"empty object on an object", `{"data": {"c": {}}}`, "t", `{"c": {"z": 1}}`, true},
	{"empty object on a scalar", `{"data": {"c": {}}}`, "t", `{"c": 1}`, false},
	{"object on an array: one element", `{"data": {"items": {"sku": "a", "qty": 2}}}`, "t", `{"items": [{"sku": "a", "qty": 1}, {"sku": "a", "qty": 2}]}`, true},
	{"object on an array: fields from two elements", `{"data": {"items": {"sku": "a", "qty": 2}}}`, "t", `{"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]}`, false},
	{"object with operator on an array element", `{"data": {"items": {"inventory": {"$lte": 10}}}}`, "t", `{"items": [{"inventory": 12}, {"inventory": 9}]}`, true},
	{"object with operator on an array, none", `{"data": {"items": {"inventory": {"$lte": 10}}}}`, "t", `{"items": [{"inventory": 12}, {"inventory": 11}]}`, false},
	{"object fields and operators together", `{"data": {"items": {"sku": "a", "$exist": true}}}`, "t", `{"items": [{"sku": "b"}]}`, false},
	{"a $ inside data is a field of the filter, not of the payload", `{"data": {"a": {"b": {"c": true}}}}`, "t", `{"a": {"b": {"c": true}}}`, true},

	// $eq and $neq compare whole values.
	{"$eq number", `{"data": {"n": {"$eq": 2}}}`, "t", `{"n": 2}`, true},
	{"$eq number, other", `{"data": {"n": {"$eq": 2}}}`, "t", `{"n": 3}`, false},
	{"$eq across types", `{"data": {"n": {"$eq": 2}}}`, "t", `{"n": "2"}`, false},
	{"$eq null", `{"data": {"n": {"$eq": null}}}`, "t", `{"n": null}`, true},
	{"$eq null, missing", `{"data": {"n": {"$eq": null}}}`, "t", `{}`, false},
	{"$eq array exactly", `{"data": {"t": {"$eq": ["a", "b"]}}}`, "t", `{"t": ["a", "b"]}`, true},
	{"$eq array, longer", `{"data": {"t": {"$eq": ["a", "b"]}}}`, "t", `{"t": ["a", "b", "c"]}`, false},
	{"$eq array, other order", `{"data": {"t": {"$eq": ["a", "b"]}}}`, "t", `{"t": ["b", "a"]}`, false},
	{"$eq scalar is not array-contains", `{"data": {"t": {"$eq": 3}}}`, "t", `{"t": [1, 2, 3]}`, false},
	{"$eq object, any key order", `{"data": {"o": {"$eq": {"a": 1, "b": [true]}}}}`, "t", `{"o": {"b": [true], "a": 1}}`, true},
	{"$eq object with an extra field", `{"data": {"o": {"$eq": {"a": 1}}}}`, "t", `{"o": {"a": 1, "b": 2}}`, false},
	{"$eq object with a $ key is data", `{"data": {"o": {"$eq": {"$gt": 1}}}}`, "t", `{"o": {"$gt": 1}}`, true},
	{"$neq different", `{"data": {"s": {"$neq": "created"}}}`, "t", `{"s": "updated"}`, true},
	{"$neq equal", `{"data": {"s": {"$neq": "created"}}}`, "t", `{"s": "created"}`, false},
	{"$neq across types", `{"data": {"s": {"$neq": 1}}}`, "t", `{"s": "1"}`, true},
	{"$neq missing", `{"data": {"s": {"$neq": "created"}}}`, "t", `{}`, false},
	{"$neq null: there and not null", `{"data": {"s": {"$neq": null}}}`, "t", `{"s": 0}`, true},
	{"$neq null on null", `{"data": {"s": {"$neq": null}}}`, "t", `{"s": null}`, false},

	// $gt $gte $lt $lte.
	{"$gt", `{"data": {"amount": {"$gt": 100}}}`, "t", `{"amount": 100.5}`, true},
	{"$gt equal", `{"data": {"amount": {"$gt": 100}}}`, "t", `{"amount": 100}`, false},
	{"$gte equal", `{"data": {"amount": {"$gte": 100}}}`, "t", `{"amount": 100}`, true},
	{"$gte below", `{"data": {"amount": {"$gte": 100}}}`, "t", `{"amount": 99}`, false},
	{"$lt", `{"data": {"amount": {"$lt": 0}}}`, "t", `{"amount": -1}`, true},
	{"$lt equal", `{"data": {"amount": {"$lt": 0}}}`, "t", `{"amount": 0}`, false},
	{"$lte equal", `{"data": {"amount": {"$lte": 0}}}`, "t", `{"amount": -0}`, true},
	{"$lte above", `{"data": {"amount": {"$lte": 0}}}`, "t", `{"amount": 1e-9}`, false},
	{"range inside", `{"data": {"n": {"$gt": 1, "$lt": 3}}}`, "t", `{"n": 2}`, true},
	{"range outside", `{"data": {"n": {"$gt": 1, "$lt": 3}}}`, "t", `{"n": 4}`, false},
	{"$gt strings", `{"data": {"s": {"$gt": "b"}}}`, "t", `{"s": "c"}`, true},
	{"$gt strings, below", `{"data": {"s": {"$gt": "b"}}}`, "t", `{"s": "a"}`, false},
	{"$lt timestamps", `{"data": {"at": {"$gte": "2025-01-01T00:00:00Z", "$lt": "2025-02-01T00:00:00Z"}}}`, "t", `{"at": "2025-01-31T23:59:59Z"}`, true},
	{"$lt timestamps, after", `{"data": {"at": {"$gte": "2025-01-01T00:00:00Z", "$lt": "2025-02-01T00:00:00Z"}}}`, "t", `{"at": "2025-02-01T00:00:00Z"}`, false},
	{"$gt number against a string", `{"data": {"n": {"$gt": 1}}}`, "t", `{"n": "5"}`, false},
	{"$gt string against a number", `{"data": {"n": {"$gt": "1"}}}`, "t", `{"n": 5}`, false},
	{"$gt on null", `{"data": {"n": {"$gt": 1}}}`, "t", `{"n": null}`, false},
	{"$gt on a boolean", `{"data": {"n": {"$lt": 1}}}`, "t", `{"n": false}`, false},
	{"$gt missing", `{"data": {"n": {"$lt": 1}}}`, "t", `{}`, false},
	{"$gt on an array, one element", `{"data": {"n": {"$gt": 5}}}`, "t", `{"n": [1, 10]}`, true},
	{"$gt on an array, none", `{"data": {"n": {"$gt": 5}}}`, "t", `{"n": [1, 5]}`, false},

	// $in and $nin.
	{"$in list", `{"type": {"$in": ["invoice.paid", "invoice.voided"]}}`, "invoice.voided", `{}`, true},
	{"$in list, absent", `{"type": {"$in": ["invoice.paid", "invoice.voided"]}}`, "invoice.created", `{}`, false},
	{"$in list of numbers", `{"data": {"id": {"$in": [123, 456]}}}`, "t", `{"id": 456}`, true},
	{"$in list across types", `{"data": {"id": {"$in": [123, 456]}}}`, "t", `{"id": "123"}`, false},
	{"$in list with null", `{"data": {"id": {"$in": [null, false]}}}`, "t", `{"id": null}`, true},
	{"$in list with false", `{"data": {"id": {"$in": [null, false]}}}`, "t", `{"id": false}`, true},
	{"$in list, true not in it", `{"data": {"id": {"$in": [null, false]}}}`, "t", `{"id": true}`, false},
	{"$in list on an array", `{"data": {"tags": {"$in": ["a", "z"]}}}`, "t", `{"tags": ["b", "a"]}`, true},
	{"$in list on an array, none", `{"data": {"tags": {"$in": ["a", "z"]}}}`, "t", `{"tags": ["b", "c"]}`, false},
	{"$in list on an object", `{"data": {"o": {"$in": ["a"]}}}`, "t", `{"o": {"a": 1}}`, false},
	{"$in empty list", `{"data": {"s": {"$in": []}}}`, "t", `{"s": "a"}`, false},
	{"$in substring", `{"data": {"s": {"$in": "text"}}}`, "t", `{"s": "some-text"}`, true},
	{"$in substring, absent", `{"data": {"s": {"$in": "nope"}}}`, "t", `{"s": "some-text"}`, false},
	{"$in string on an array: an element", `{"data": {"tags": {"$in": "gift"}}}`, "t", `{"tags": ["x", "gift"]}`, true},
	{"$in string on an array: not a substring", `{"data": {"tags": {"$in": "gift"}}}`, "t", `{"tags": ["gift card"]}`, false},
	{"$in number on an array", `{"data": {"ids": {"$in": 2}}}`, "t", `{"ids": [1, 2]}`, true},
	{"$in number on a number", `{"data": {"ids": {"$in": 2}}}`, "t", `{"ids": 2}`, false},
	{"$in missing", `{"data": {"s": {"$in": ["a"]}}}`, "t", `{}`, false},
	{"$nin list", `{"data": {"s": {"$nin": ["cancelled", "refunded"]}}}`, "t", `{"s": "paid"}`, true},
	{"$nin list, in it", `{"data": {"s": {"$nin": ["cancelled", "refunded"]}}}`, "t", `{"s": "refunded"}`, false},
	{"$nin list, other type", `{"data": {"s": {"$nin": ["1"]}}}`, "t", `{"s": 1}`, true},
	{"$nin on an array, one in it", `{"data": {"tags": {"$nin": ["a"]}}}`, "t", `{"tags": ["b", "a"]}`, false},
	{"$nin on an array, none in it", `{"data": {"tags": {"$nin": ["a"]}}}`, "t", `{"tags": ["b", "c"]}`, true},
	{"$nin substring", `{"data": {"s": {"$nin": "some"}}}`, "t", `{"s": "some-text"}`, false},
	{"$nin missing", `{"data": {"s": {"$nin": ["a"]}}}`, "t", `{}`, false},

	// $startsWith and $endsWith.
	{"$startsWith", `{"data": {"s": {"$startsWith": "some"}}}`, "t", `{"s": "some-text"}`, true},
	{"$startsWith, not", `{"data": {"s": {"$startsWith": "text"}}}`, "t", `{"s": "some-text"}`, false},
	{"$startsWith any of", `{"data": {"s": {"$startsWith": ["x", "some"]}}}`, "t", `{"s": "some-text"}`, true},
	{"$startsWith none of", `{"data": {"s": {"$startsWith": ["x", "y"]}}}`, "t", `{"s": "some-text"}`, false},
	{"$startsWith on a number", `{"data": {"s": {"$startsWith": "1"}}}`, "t", `{"s": 12}`, false},
	{"$startsWith on an object", `{"data": {"s": {"$startsWith": "a"}}}`, "t", `{"s": {"a": 1}}`, false},
	{"$startsWith on an array", `{"data": {"s": {"$startsWith": "refs/heads/"}}}`, "t", `{"s": ["v1", "refs/heads/main"]}`, true},
	{"$startsWith empty prefix", `{"data": {"s": {"$startsWith": ""}}}`, "t", `{"s": ""}`, true},
	{"$endsWith", `{"data": {"email": {"$endsWith": "@example.com"}}}`, "t", `{"email": "a@example.com"}`, true},
	{"$endsWith, not", `{"data": {"email": {"$endsWith": "@example.com"}}}`, "t", `{"email": "a@example.com.evil"}`, false},
	{"$endsWith any of", `{"data": {"s": {"$endsWith": ["else", "text"]}}}`, "t", `{"s": "some-text"}`, true},
	{"$endsWith none of", `{"data": {"s": {"$endsWith": ["some", "else"]}}}`, "t", `{"s": "some-text"}`, false},
	{"$endsWith missing", `{"data": {"s": {"$endsWith": ""}}}`, "t", `{}`, false},

	// $exist.
	{"$exist true, there", `{"data": {"x": {"$exist": true}}}`, "t", `{"x": 0}`, true},
	{"$exist true, null is there", `{"data": {"x": {"$exist": true}}}`, "t", `{"x": null}`, true},
	{"$exist true, missing", `{"data": {"x": {"$exist": true}}}`, "t", `{"y": 1}`, false},
	{"$exist false, missing", `{"data": {"x": {"$exist": false}}}`, "t", `{"y": 1}`, true},
	{"$exist false, there", `{"data": {"x": {"$exist": false}}}`, "t", `{"x": null}`, false},
	{"$exist false deep, missing", `{"data": {"a": {"b": {"c": {"$exist": false}}}}}`, "t", `{"a": {"b": {"d": 1}}}`, true},
	{"$exist false deep, parent missing", `{"data": {"a": {"b": {"c": {"$exist": false}}}}}`, "t", `{"a": {}}`, false},
	{"$exist false with another condition", `{"data": {"x": {"$exist": false, "$eq": 1}}}`, "t", `{}`, false},
	{"$exist true with another condition", `{"data": {"x": {"$exist": true, "$in": "el"}}}`, "t", `{"x": "else"}`, true},
	{"$exist true with another condition, unmet", `{"data": {"x": {"$exist": true, "$in": "no"}}}`, "t", `{"x": "else"}`, false},
	{"$exist on an array", `{"data": {"x": {"$exist": true}}}`, "t", `{"x": []}`, true},

	// $or.
	{"$or top level, first", `{"$or": [{"type": "a"}, {"data": {"x": 1}}]}`, "a", `{}`, true},
	{"$or top level, second", `{"$or": [{"type": "a"}, {"data": {"x": 1}}]}`, "b", `{"x": 1}`, true},
	{"$or top level, neither", `{"$or": [{"type": "a"}, {"data": {"x": 1}}]}`, "b", `{"x": 2}`, false},
	{"$or in a field", `{"data": {"n": {"$or": [{"$lt": 0}, {"$gt": 10}]}}}`, "t", `{"n": 11}`, true},
	{"$or in a field, neither", `{"data": {"n": {"$or": [{"$lt": 0}, {"$gt": 10}]}}}`, "t", `{"n": 5}`, false},
	{"$or of plain values", `{"data": {"n": {"$or": [1, 5]}}}`, "t", `{"n": 5}`, true},
	{"$or of plain values, neither", `{"data": {"n": {"$or": [1, 5]}}}`, "t", `{"n": 3}`, false},
	{"$or of objects on an object", `{"data": {"t": {"$or": [{"a": true}, {"a": {"$in": "lse"}}]}}}`, "t", `{"t": {"a": "else"}}`, true},
	{"$or with $exist false, missing", `{"$or": [{"data": {"x": {"$exist": false}}}, {"data": {"x": 1}}]}`, "t", `{}`, true},
	{"$or beside fields", `{"type": "a", "$or": [{"data": {"x": 1}}, {"data": {"y": 1}}]}`, "b", `{"x": 1}`, false},

	// $and.
	{"$and top level", `{"$and": [{"data": {"s": "active"}}, {"data": {"n": {"$gte": 100}}}]}`, "t", `{"s": "active", "n": 100}`, true},
	{"$and top level, one unmet", `{"$and": [{"data": {"s": "active"}}, {"data": {"n": {"$gte": 100}}}]}`, "t", `{"s": "active", "n": 99}`, false},
	{"$and in a field", `{"data": {"n": {"$and": [{"$gt": 1}, {"$lt": 9}]}}}`, "t", `{"n": 5}`, true},
	{"$and in a field, unmet", `{"data": {"n": {"$and": [{"$gt": 1}, {"$lt": 9}]}}}`, "t", `{"n": 9}`, false},
	{"$and of plain values", `{"data": {"n": {"$and": [1, 2]}}}`, "t", `{"n": 1}`, false},
	{"$and of plain values on an array", `{"data": {"n": {"$and": [1, 2]}}}`, "t", `{"n": [2, 1]}`, true},
	{"$and $neq null then $in", `{"data": {"t": {"$and": [{"a": {"$neq": null}}, {"a": {"$in": "else"}}]}}}`, "t", `{"t": {"a": null}}`, false},

	// $not.
	{"$not in a field", `{"data": {"s": {"$not": {"$in": ["cancelled", "refunded"]}}}}`, "t", `{"s": "paid"}`, true},
	{"$not in a field, negated", `{"data": {"s": {"$not": {"$in": ["cancelled", "refunded"]}}}}`, "t", `{"s": "cancelled"}`, false},
	{"$not of a plain value", `{"data": {"s": {"$not": "x"}}}`, "t", `{"s": "y"}`, true},
	{"$not of a plain value on an array containing it", `{"data": {"tags": {"$not": "x"}}}`, "t", `{"tags": ["y", "x"]}`, false},
	{"$not on a missing field", `{"data": {"s": {"$not": {"$eq": 1}}}}`, "t", `{}`, true},
	{"$not $exist true, missing", `{"data": {"s": {"$not": {"$exist": true}}}}`, "t", `{}`, true},
	{"$not $exist true, there", `{"data": {"s": {"$not": {"$exist": true}}}}`, "t", `{"s": 1}`, false},
	{"$not top level", `{"$not": {"type": "a"}}`, "b", `{}`, true},
	{"$not top level, negated", `{"$not": {"type": "a"}}`, "a", `{}`, false},
	{"$not beside $and", `{"$not": {"data": {"a": "x"}}, "$and": [{"data": {"b": 1}}]}`, "t", `{"a": "y", "b": 1}`, true},
	{"$not beside $and, negated", `{"$not": {"data": {"a": "x"}}, "$and": [{"data": {"b": 1}}]}`, "t", `{"a": "x", "b": 1}`, false},
	{"$not of $or", `{"$not": {"$or": [{"type": "a"}, {"type": "b"}]}}`, "c", `{}`, true},
	{"$not of $or, one", `{"$not": {"$or": [{"type": "a"}, {"type": "b"}]}}`, "b", `{}`, false},
	{"$not $not", `{"data": {"s": {"$not": {"$not": "x"}}}}`, "t", `{"s": "x"}`, true},

	// Combinations, as customers write them.
	{"stripe-like", `{"type": {"$startsWith": "invoice."}, "data": {"object": {"amount_paid": {"$gte": 1000}, "currency": "usd", "lines": {"data": {"price": {"recurring": {"interval": "month"}}}}}}}`,
		"invoice.paid", `{"object": {"amount_paid": 1500, "currency": "usd", "lines": {"data": [{"price": {"recurring": null}}, {"price": {"recurring": {"interval": "month"}}}]}}}`, true},
	{"stripe-like, yearly", `{"type": {"$startsWith": "invoice."}, "data": {"object": {"amount_paid": {"$gte": 1000}, "currency": "usd", "lines": {"data": {"price": {"recurring": {"interval": "month"}}}}}}}`,
		"invoice.paid", `{"object": {"amount_paid": 1500, "currency": "usd", "lines": {"data": [{"price": {"recurring": {"interval": "year"}}}]}}}`, false},
	{"github-like", `{"data": {"ref": {"$startsWith": ["refs/heads/release/", "refs/tags/"]}, "commits": {"author": {"email": {"$not": {"$endsWith": "[bot]@users.noreply.github.com"}}}}}}`,
		"push", `{"ref": "refs/tags/v1", "commits": [{"author": {"email": "dependabot[bot]@users.noreply.github.com"}}, {"author": {"email": "a@b.c"}}]}`, true},
	{"github-like, only bots", `{"data": {"ref": {"$startsWith": ["refs/heads/release/", "refs/tags/"]}, "commits": {"author": {"email": {"$not": {"$endsWith": "[bot]@users.noreply.github.com"}}}}}}`,
		"push", `{"ref": "refs/tags/v1", "commits": [{"author": {"email": "dependabot[bot]@users.noreply.github.com"}}]}`, false},
	{"data not an object", `{"data": {"x": 1}}`, "t", `[1, 2]`, false},
	{"data an array of objects", `{"data": {"x": 1}}`, "t", `[{"x": 2}, {"x": 1}]`, true},
	{"unicode field names", `{"data": {"prénom/nom~": "Zoë"}}`, "t", `{"prénom/nom~": "Zoë"}`, true},
}

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, c := range matchCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse([]byte(c.filter))
			if err != nil {
				t.Fatalf("Parse(%s): %v", c.filter, err)
			}
			event, err := Event(c.typ, []byte(c.payload))
			if err != nil {
				t.Fatalf("Event(%q, %s): %v", c.typ, c.payload, err)
			}
			if got := f.Match(event); got != c.want {
				t.Errorf("filter %s on type %q payload %s: Match = %v, want %v", c.filter, c.typ, c.payload, got, c.want)
			}
		})
	}
}

// TestNotInvertsEveryCase checks $not as exact negation over every case of the table, as Outpost's own
// test suite does for its top level: {"$not": F} matches exactly when F does not.
func TestNotInvertsEveryCase(t *testing.T) {
	t.Parallel()
	for _, c := range matchCases {
		negated, err := Parse([]byte(`{"$not": ` + c.filter + `}`))
		if err != nil {
			t.Fatalf("Parse($not of %s): %v", c.filter, err)
		}
		event, err := Event(c.typ, []byte(c.payload))
		if err != nil {
			t.Fatal(err)
		}
		if got := negated.Match(event); got == c.want {
			t.Errorf("%s: {\"$not\": %s} Match = %v, want %v", c.name, c.filter, got, !c.want)
		}
	}
}

// TestMatchTakesOnlyJSONValues: values encoding/json never produces (an int, a struct) match nothing and
// never panic, since Match's argument is `any`.
func TestMatchTakesOnlyJSONValues(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"data": {"n": {"$or": [1, {"$gt": 0}, {"$in": [1]}, {"$eq": 1}, {"$startsWith": "1"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, odd := range []any{
		nil, 1, "x", []int{1},
		map[string]any{"data": map[string]any{"n": 1}},
		map[string]any{"data": map[string]any{"n": struct{}{}}},
		map[string]any{"data": map[string]int{"n": 1}},
	} {
		if f.Match(odd) {
			t.Errorf("Match(%#v) = true", odd)
		}
	}
	if !f.Match(map[string]any{"data": map[string]any{"n": 1.0}}) {
		t.Error("Match with a float64 1 = false")
	}
}

func TestNilFilterMatchesEverything(t *testing.T) {
	t.Parallel()
	var none *Filter
	event, err := Event("invoice.paid", []byte(`{"a": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !none.Match(event) || !none.Match(nil) {
		t.Error("a nil *Filter refused an event")
	}
}

func TestEvent(t *testing.T) {
	t.Parallel()
	event, err := Event("invoice.paid", []byte(`{"amount": 12, "tags": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(event)
	if want := `{"data":{"amount":12,"tags":["a"]},"type":"invoice.paid"}`; string(got) != want {
		t.Errorf("Event = %s, want %s", got, want)
	}
	for _, bad := range []string{``, `{`, `{"a": 1} x`, `1e999`} {
		if _, err := Event("t", []byte(bad)); err == nil {
			t.Errorf("Event(%q) accepted it", bad)
		}
	}
}

// TestConcurrentMatch runs one Filter from many goroutines; under -race it proves Match writes nothing.
func TestConcurrentMatch(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`{"type": {"$in": ["a", "b"]}, "data": {"items": {"sku": {"$startsWith": "x"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	yes, _ := Event("a", []byte(`{"items": [{"sku": "y"}, {"sku": "x1"}]}`))
	no, _ := Event("a", []byte(`{"items": [{"sku": "y"}]}`))
	var wg sync.WaitGroup
	failures := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if !f.Match(yes) || f.Match(no) {
					failures <- "a concurrent Match answered wrong"
					return
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for msg := range failures {
		t.Error(msg)
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"data": {"amount": {"$gt": true}}}`))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse error %v is not *Error", err)
	}
	if want := "filter at /data/amount/$gt: expects a number or a string"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	_, err = Parse([]byte(`[]`))
	if got := err.Error(); !strings.HasPrefix(got, "filter: must be a JSON object") {
		t.Errorf("Error() of a whole-filter refusal = %q", got)
	}
}
