package catalogue

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/catalogue/schema"
	"github.com/hookline/hookline/internal/fault"
)

// row is a field in one line, for comparing lists.
func row(f schema.Field) string {
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

func sameRows(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The imported document's schemas, once their refs are inlined, list as the page will show them.
func TestFieldsOfAnImportedSchema(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("testdata/shop-webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	entries, errs, err := parseWebhooks(doc)
	if err != nil || len(errs) > 0 {
		t.Fatalf("parse: %v %v", err, errs)
	}
	fs, _, err := schema.Fields(entries[0].in.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, row(f))
	}
	sameRows(t, got, []string{
		"data.id string required — The order's id.",
		"data.status string required [placed,cancelled,shipped]",
		"data.currency string [EUR,USD,GBP]",
		"data.customer object",
		"data.customer.id string required",
		"data.customer.email string",
		"data.items array of object required {at least 1 item}",
		"data.items[].sku string required",
		"data.items[].quantity integer required {≥ 1}",
		"data.items[].price object required",
		"data.items[].price.amount integer required — In the currency's smallest unit (cents). {≥ 0}",
		"data.items[].price.currency string required [EUR,USD,GBP]",
	})
}

func TestImportDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(connect(t), Options{})
	doc, err := os.ReadFile("testdata/shop-webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	types := []string{"customer.updated", "invoice.paid", "order.cancelled", "order.created"}
	dry, err := s.Import(ctx, doc, true)
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || strings.Join(sorted(dry.Created), ",") != strings.Join(types, ",") || len(dry.Errors) != 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	for _, n := range types {
		if _, err := s.Get(ctx, n); !fault.Is(err, fault.NotFound) {
			t.Errorf("dry run stored %s: %v", n, err)
		}
	}
	res, err := s.Import(ctx, doc, false)
	if err != nil || strings.Join(sorted(res.Created), ",") != strings.Join(types, ",") || len(res.Updated)+len(res.Unchanged)+len(res.Errors) != 0 {
		t.Fatalf("import: %+v %v", res, err)
	}
	importedAsTheDocumentSays(t, s)
	importAgain(t, s, doc)
}

// importedAsTheDocumentSays checks the types the shop document became, and that their schemas enforce
// what the document says.
func importedAsTheDocumentSays(t *testing.T, s *Service) {
	t.Helper()
	ctx := context.Background()
	created, _ := s.Get(ctx, "order.created")
	if created.Description != "An order was placed" || created.Group != "order" || !strings.Contains(string(created.Example), `"ord_1001"`) {
		t.Errorf("order.created: %+v", created)
	}
	if strings.Contains(string(created.Schema), "$ref") || !strings.Contains(string(created.Schema), `"enum":["EUR","USD","GBP"]`) {
		t.Errorf("order.created's schema kept a $ref or lost the nested one: %s", created.Schema)
	}
	cancelled, _ := s.Get(ctx, "order.cancelled")
	if !strings.HasPrefix(cancelled.Description, "The order was cancelled") || !strings.Contains(string(cancelled.Example), "ord_1002") {
		t.Errorf("order.cancelled (request body and example by ref): %+v", cancelled)
	}
	paid, _ := s.Get(ctx, "invoice.paid")
	if !strings.Contains(string(paid.Example), `"inv_1"`) {
		t.Errorf("invoice.paid: the first examples entry (a ref) is not the example: %s", paid.Example)
	}
	updated, _ := s.Get(ctx, "customer.updated")
	if !updated.Deprecated || updated.Description != "A customer's details changed" {
		t.Errorf("customer.updated: %+v", updated)
	}
	// The imported schemas enforce what the document says.
	if err := s.CheckEvent("order.created", []byte(`{"id":"o","status":"placed","items":[{"sku":"s","quantity":0,"price":{"amount":1,"currency":"XXX"}}]}`)); err == nil {
		t.Error("order.created accepts a payload its schema refuses")
	} else if fe := fault.As(err); len(fe.Details) != 2 || fe.Details[0].Path != "/items/0/price/currency" || fe.Details[1].Path != "/items/0/quantity" {
		t.Errorf("order.created details: %+v", fe.Details)
	}
}

// importAgain imports the shop document again: unchanged, with a group set by hand kept; then changed,
// which updates (and brings an archived type back), in a dry run first.
func importAgain(t *testing.T, s *Service, doc []byte) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Update(ctx, "order.created", Input{Group: ptr("Orders")}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Import(ctx, doc, false)
	if err != nil || len(res.Unchanged) != 4 || len(res.Created)+len(res.Updated) != 0 {
		t.Fatalf("second import: %+v %v", res, err)
	}
	if g, _ := s.Get(ctx, "order.created"); g.Group != "Orders" {
		t.Errorf("import reset the group to %q", g.Group)
	}
	if err := s.Archive(ctx, "invoice.paid"); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(doc), "An order was placed", "An order was placed online", 1)
	res, err = s.Import(ctx, []byte(changed), true)
	if err != nil || strings.Join(sorted(res.Updated), ",") != "invoice.paid,order.created" || len(res.Unchanged) != 2 {
		t.Fatalf("changed document, dry run: %+v %v", res, err)
	}
	if g, _ := s.Get(ctx, "order.created"); g.Description != "An order was placed" {
		t.Error("the dry run changed the description")
	}
	if g, _ := s.Get(ctx, "invoice.paid"); !g.Archived {
		t.Error("the dry run brought an archived type back")
	}
	if _, err := s.Import(ctx, []byte(changed), false); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.Get(ctx, "invoice.paid"); g.Archived {
		t.Error("the import did not bring the archived type back")
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestImportRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(connect(t), Options{})
	hook := func(body string) string {
		return "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nwebhooks:\n  imp.one:\n    post:\n      requestBody:\n        content:\n          application/json:\n" + body
	}
	for _, c := range []struct {
		what, doc string
		code      fault.Code
		want      string
	}{
		{"not YAML", "{{{", fault.InvalidRequest, "neither JSON nor YAML"},
		{"not an object", "[1, 2]", fault.InvalidRequest, "OpenAPI 3.1 object"},
		{"OpenAPI 3.0", `{"openapi": "3.0.3", "webhooks": {}}`, fault.InvalidRequest, `not "3.0.3"`},
		{"Swagger", `{"swagger": "2.0"}`, fault.InvalidRequest, "OpenAPI 3.1"},
		{"no webhooks", `{"openapi": "3.1.0", "paths": {}}`, fault.InvalidRequest, "no webhooks"},
		{"cycle", hook("            schema: {$ref: '#/components/schemas/Node'}\ncomponents:\n  schemas:\n    Node:\n      type: object\n      properties:\n        next: {$ref: '#/components/schemas/Next'}\n    Next:\n      properties:\n        back: {$ref: '#/components/schemas/Node'}\n"),
			fault.InvalidRequest, "$ref #/components/schemas/Node refers back to itself (#/components/schemas/Node → #/components/schemas/Next → #/components/schemas/Node)"},
		{"self ref", hook("            schema: {$ref: '#/components/schemas/A'}\ncomponents:\n  schemas:\n    A: {$ref: '#/components/schemas/A'}\n"),
			fault.InvalidRequest, "$ref #/components/schemas/A refers back to itself"},
		{"dangling ref", hook("            schema: {$ref: '#/components/schemas/Nope'}\n"), fault.InvalidRequest, "$ref #/components/schemas/Nope does not resolve"},
		{"external ref", hook("            schema: {$ref: 'https://example.com/s.json'}\n"), fault.InvalidRequest, "points outside the document"},
		{"too large", "openapi: 3.1.0\n#" + strings.Repeat("x", MaxImport), fault.PayloadTooLarge, "larger than 1024 KiB"},
		{"many aliases", "openapi: 3.1.0\n" + bomb() + "webhooks:\n" + manyHooks(300, "{x: *a3}"), fault.InvalidRequest, "expand to more than 8 MiB"},
	} {
		_, err := s.Import(ctx, []byte(c.doc), false)
		fe := fault.As(err)
		if fe == nil || fe.Code != c.code || !strings.Contains(fe.Message, c.want) {
			t.Errorf("%s: want %s with %q, got %v", c.what, c.code, c.want, err)
		}
	}
	if _, err := s.Get(ctx, "imp.one"); !fault.Is(err, fault.NotFound) {
		t.Errorf("a refused import stored something: %v", err)
	}

	// Webhooks that cannot become types are listed; the others are imported.
	res, err := s.Import(ctx, []byte(`{"openapi": "3.1.1", "webhooks": {
	  "imp.good": {"post": {"summary": "Good", "requestBody": {"content": {"application/json": {"schema": {"type": "object"}, "example": {"a": 1}}}}}},
	  "imp bad name": {"post": {}},
	  "imp.bad-schema": {"post": {"requestBody": {"content": {"application/json": {"schema": {"type": "nope"}}}}}},
	  "imp.bad-example": {"post": {"requestBody": {"content": {"application/json": {"schema": {"required": ["id"]}, "example": {"x": 1}}}}}},
	  "imp.xml": {"post": {"requestBody": {"content": {"application/xml": {}}}}},
	  "imp.no-op": {"parameters": []},
	  "imp.no-body": {"post": {"description": "Undescribed payload."}}
	}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sorted(res.Created), ",") != "imp.good,imp.no-body" {
		t.Errorf("created %v", res.Created)
	}
	msgs := map[string]string{}
	for _, e := range res.Errors {
		msgs[e.Name] = e.Message
	}
	for name, want := range map[string]string{"imp bad name": "name must be an event type", "imp.bad-schema": "schema is not a valid JSON Schema",
		"imp.bad-example": "example does not satisfy the schema", "imp.xml": "no application/json content", "imp.no-op": "no operation"} {
		if !strings.Contains(msgs[name], want) {
			t.Errorf("error of %q: %q, want %q", name, msgs[name], want)
		}
	}
	if len(res.Errors) != 5 {
		t.Errorf("%d errors: %+v", len(res.Errors), res.Errors)
	}
}

// manyHooks are n webhooks (imp.many0, imp.many1, ...) whose request bodies have this schema.
func manyHooks(n int, schema string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  imp.many%d:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema: %s\n", i, schema)
	}
	return b.String()
}

// bomb is YAML whose aliases expand a few hundred bytes into gigabytes.
func bomb() string {
	var b strings.Builder
	b.WriteString("components:\n  x:\n    a0: &a0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "    a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}
