package demo_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/demo"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

// The demo registers every type it publishes, with a schema its payloads satisfy: with
// HOOKLINE_EVENT_TYPES=registered, not one demo event is refused.
func TestDemoEventsSatisfyTheDemoCatalogue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := servertest.Config(t, dbURL)
	cfg.EventTypes = config.EventTypesRegistered
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(ctx) })
	for range 2 { // a second start finds them
		if err := demo.RegisterEventTypes(ctx, srv.Catalogue); err != nil {
			t.Fatal(err)
		}
	}
	types, err := srv.Catalogue.List(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]string{}
	for _, ty := range types {
		groups[ty.Name] = ty.Group
		if ty.Description == "" || string(ty.Schema) == "null" || string(ty.Example) == "null" {
			t.Errorf("%s lacks a description, schema or example: %+v", ty.Name, ty)
		}
		// The example is what the catalogue page shows: it satisfies the schema (checked at create too).
		if err := srv.Catalogue.CheckEvent(ty.Name, ty.Example); err != nil {
			t.Errorf("%s's example: %v", ty.Name, err)
		}
	}
	for _, name := range []string{"order.created", "invoice.paid", "invoice.failed", "customer.updated", "shipment.created", "shipment.delivered"} {
		if groups[name] == "" {
			t.Errorf("demo type %s is not in the catalogue", name)
		}
	}
	seen := map[string]bool{}
	for i := range 300 {
		typ, payload := demo.TrickleEvent(i)
		seen[typ] = true
		if err := srv.Catalogue.CheckEvent(typ, payload); err != nil {
			t.Fatalf("trickle event %s %s: %v", typ, payload, err)
		}
	}
	if len(seen) != 4 {
		t.Errorf("the trickle published %d types in 300 events, want 4", len(seen))
	}
	// A payload the demo would never send is refused: the schemas check something.
	bad, _ := json.Marshal(map[string]any{"id": 1, "amount": -5, "currency": "XXX", "customer": map[string]any{}})
	if err := srv.Catalogue.CheckEvent("order.created", bad); err == nil {
		t.Error("order.created accepts a payload its schema should refuse")
	}
}

// customer.updated describes a customer, not an invoice: its schema, its example and the trickle's events
// of it carry a customer's fields and no amount or currency; a catalogue an earlier demo filled with the
// invoice-shaped schema gets the customer one at the next start.
func TestDemoCustomerUpdatedIsACustomerEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: it puts an earlier demo's customer.updated in the catalogue, which the other
	// tests' demo catalogue must never show.
	own, drop, err := testdb.Create(ctx, "demo_catalogue")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	cfg := servertest.Config(t, own)
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(ctx) })
	if err := demo.RegisterEventTypes(ctx, srv.Catalogue); err != nil {
		t.Fatal(err)
	}
	invoiceFields := func(what string, doc []byte) {
		t.Helper()
		for _, f := range []string{`"amount"`, `"currency"`} {
			if strings.Contains(string(doc), f) {
				t.Errorf("%s carries the invoice field %s: %s", what, f, doc)
			}
		}
	}
	check := func() {
		t.Helper()
		ty, err := srv.Catalogue.Get(ctx, "customer.updated")
		if err != nil {
			t.Fatal(err)
		}
		invoiceFields("customer.updated's schema", ty.Schema)
		invoiceFields("customer.updated's example", ty.Example)
		if !strings.Contains(string(ty.Example), `"email"`) {
			t.Errorf("customer.updated's example names no customer: %s", ty.Example)
		}
	}
	check()
	n := 0
	for i := 0; n < 5 && i < 1000; i++ {
		typ, payload := demo.TrickleEvent(i)
		if typ != "customer.updated" {
			continue
		}
		n++
		invoiceFields("a trickled customer.updated", payload)
		if err := srv.Catalogue.CheckEvent(typ, payload); err != nil {
			t.Errorf("trickled customer.updated %s: %v", payload, err)
		}
	}

	// An earlier demo's catalogue: the invoice-shaped schema and example, as it registered them.
	old := json.RawMessage(`{"type":"object","required":["id","amount","currency","customer"],"properties":{"id":{"type":"string","description":"The customer's id."},
	  "amount":{"type":"integer","minimum":0,"description":"In the currency's smallest unit (cents)."},"currency":{"type":"string","enum":["EUR","USD","GBP"],"description":"ISO 4217 code."},
	  "customer":{"type":"object","required":["email"],"properties":{"email":{"type":"string","format":"email","description":"Where the customer is reached."}}}}}`)
	if _, err := srv.Catalogue.Update(ctx, "customer.updated", catalogue.Input{Schema: old,
		Example: json.RawMessage(`{"id":"demo_1700000000_4","amount":0,"currency":"EUR","customer":{"email":"customer1@example.com"}}`)}); err != nil {
		t.Fatal(err)
	}
	if err := demo.RegisterEventTypes(ctx, srv.Catalogue); err != nil {
		t.Fatal(err)
	}
	check()
}
