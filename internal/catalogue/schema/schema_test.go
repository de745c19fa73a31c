package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/fault"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func wantCode(t *testing.T, what string, err error, code fault.Code) *fault.Error {
	t.Helper()
	fe := fault.As(err)
	if fe == nil || fe.Code != code {
		t.Fatalf("%s: want %s, got %v", what, code, err)
	}
	return fe
}

const orderSchema = `{"type":"object","required":["id","total"],"properties":{"id":{"type":"string"},"total":{"type":"integer","minimum":0},
 "items":{"type":"array","items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"},"a/b~c":{"type":"string"}}}}}}`

// mustCheck is sch.check of a payload within the limits of a check.
func mustCheck(t *testing.T, sch *Schema, payload []byte) []fault.Detail {
	t.Helper()
	d, err := sch.Check(payload, "payload")
	if err != nil {
		t.Fatalf("check %.100s: %v", payload, err)
	}
	return d
}

func TestSchemaChecksWithJSONPointers(t *testing.T) {
	t.Parallel()
	sch, err := Compile([]byte(orderSchema))
	if err != nil {
		t.Fatal(err)
	}
	if d := mustCheck(t, sch, []byte(`{"id":"o1","total":5,"items":[{"sku":"a"}]}`)); d != nil {
		t.Fatalf("valid payload refused: %v", d)
	}
	d := mustCheck(t, sch, []byte(`{"total":-1,"items":[{"sku":"a"},{"a/b~c":7}]}`))
	got := map[string]bool{}
	for _, x := range d {
		got[x.Path] = true
		if x.Message == "" {
			t.Errorf("detail %q without a message", x.Path)
		}
	}
	for _, p := range []string{"", "/total", "/items/1", "/items/1/a~1b~0c"} {
		if !got[p] {
			t.Errorf("no detail at %q: %+v", p, d)
		}
	}
	// At most maxDetails.
	many := `{"type":"object","properties":{` + strings.Repeat(`"x":{},`, 0)
	var props, vals []string
	for i := range 15 {
		props = append(props, fmt.Sprintf(`"f%d":{"type":"string"}`, i))
		vals = append(vals, fmt.Sprintf(`"f%d":%d`, i, i))
	}
	wide, err := Compile([]byte(many + strings.Join(props, ",") + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := mustCheck(t, wide, []byte(`{`+strings.Join(vals, ",")+`}`)); len(d) != maxDetails {
		t.Errorf("%d details, want %d", len(d), maxDetails)
	}
}

func TestSchemaCompileErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ schema, want string }{
		{`{"type": 5}`, "schema is not a valid JSON Schema"},
		{`{"type": "strin"}`, "schema is not a valid JSON Schema"},
		{`{"pattern": "(?<=a)b"}`, "schema is not a valid JSON Schema"},
		{`{"$ref": "#/$defs/missing"}`, "schema is not a valid JSON Schema"},
		{`{"$ref": "https://example.com/order.json"}`, "does not fetch https://example.com/order.json"},
		{`{"$ref": "file:///etc/passwd"}`, "does not fetch file:///etc/passwd"},
		{`{"$schema": "https://example.com/my-draft"}`, "does not fetch"},
	} {
		_, err := Compile([]byte(c.schema))
		fe := wantCode(t, c.schema, err, fault.InvalidRequest)
		if !strings.Contains(fe.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", c.schema, fe.Message, c.want)
		}
		if strings.Contains(fe.Message, schemaURL) {
			t.Errorf("%s: message quotes the placeholder URL: %q", c.schema, fe.Message)
		}
	}
	// An older draft named by $schema is honoured: draft-07's items as an array is a tuple.
	sch, err := Compile([]byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
		"properties": {"pair": {"items": [{"type": "string"}, {"type": "integer"}]}}}`))
	if err != nil {
		t.Fatalf("draft-07 schema: %v", err)
	}
	if d := mustCheck(t, sch, []byte(`{"pair": ["a", "b"]}`)); len(d) == 0 || d[0].Path != "/pair/1" {
		t.Errorf("draft-07 tuple not checked: %+v", d)
	}
	// Draft 2020-12 is the default: prefixItems is known.
	sch, err = Compile([]byte(`{"properties": {"pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := mustCheck(t, sch, []byte(`{"pair": ["a", "b"]}`)); len(d) == 0 {
		t.Error("prefixItems not checked: the default draft is not 2020-12")
	}
}
