package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// row is a Field in one line, for comparing lists.
func row(f Field) string {
	req := ""
	if f.Required {
		req = " required"
	}
	s := fmt.Sprintf("%s %s%s", f.Path, f.Type, req)
	if f.Description != "" {
		s += " — " + f.Description
	}
	if len(f.Enum) > 0 {
		s += " [" + strings.Join(f.Enum, ",") + "]"
	}
	if len(f.Bounds) > 0 {
		s += " {" + strings.Join(f.Bounds, "; ") + "}"
	}
	return s
}

func fieldRows(t *testing.T, schema string) []string {
	t.Helper()
	fs, complete, err := Fields(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("Fields: %v", err)
	}
	if !complete {
		t.Errorf("Fields listed %d rows of the schema only", len(fs))
	}
	var out []string
	for _, f := range fs {
		out = append(out, row(f))
	}
	return out
}

func sameRows(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFieldsKeepsTheSchemasOrderAndNestsArrays(t *testing.T) {
	t.Parallel()
	got := fieldRows(t, `{
	  "type": "object", "required": ["order_id", "items"],
	  "properties": {
	    "order_id": {"type": "string", "description": "The order."},
	    "total": {"type": ["integer", "null"], "title": "Total in cents"},
	    "status": {"enum": ["placed", "paid", 3]},
	    "items": {"type": "array", "items": {"type": "object", "required": ["price"], "properties": {
	      "sku": {"type": "string"}, "price": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}}}},
	    "kind": {"const": "order"},
	    "meta": {"type": "object", "properties": {"source": {"type": "string"}}}
	  }}`)
	sameRows(t, got, []string{
		"data.order_id string required — The order.",
		"data.total integer | null — Total in cents",
		"data.status any [placed,paid,3]",
		"data.items array of object required",
		"data.items[].sku string",
		"data.items[].price number required",
		"data.items[].tags array of string [a,b]",
		"data.kind any [order]",
		"data.meta object",
		"data.meta.source string",
	})
}

func TestFieldsFollowsRefsAndComposition(t *testing.T) {
	t.Parallel()
	got := fieldRows(t, `{
	  "$defs": {
	    "Money": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "integer"}, "currency": {"type": "string"}}},
	    "Node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}, "parent": {"$ref": "#/$defs/Node"}}}
	  },
	  "allOf": [{"properties": {"id": {"type": "string"}}, "required": ["id"]}],
	  "oneOf": [{"properties": {"card": {"type": "string"}}, "required": ["card"]}, {"properties": {"iban": {"type": "string"}}}],
	  "properties": {"price": {"$ref": "#/$defs/Money", "description": "What it costs."}, "tree": {"$ref": "#/$defs/Node"}}
	}`)
	sameRows(t, got, []string{
		"data.price object — What it costs.",
		"data.price.amount integer required",
		"data.price.currency string",
		"data.tree object",
		"data.tree.name string",
		"data.tree.children array of recursive (#/$defs/Node)",
		"data.tree.parent recursive (#/$defs/Node)",
		"data.id string required",
		"data.card string",
		"data.iban string",
	})
}

func TestFieldsOfNothing(t *testing.T) {
	t.Parallel()
	for _, s := range []string{``, `null`, `true`, `{}`, `{"type": "object"}`} {
		if got := fieldRows(t, s); len(got) != 0 {
			t.Errorf("Fields(%s) = %v, want no rows", s, got)
		}
	}
	if _, _, err := Fields(json.RawMessage(`{"a":`)); err == nil {
		t.Error("Fields of broken JSON: no error")
	}
}
