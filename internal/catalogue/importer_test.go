package catalogue

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/catalogue/schema"
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
