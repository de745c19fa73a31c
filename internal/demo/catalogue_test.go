package demo_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/demo"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
)

// The demo registers every type it publishes, with a schema its payloads satisfy: with
// HOOKLINE_EVENT_TYPES=registered, not one demo event is refused.
func TestDemoEventsSatisfyTheDemoCatalogue(t *testing.T) {
	ctx := context.Background()
	cfg := servertest.Config(t, dbURL)
	cfg.EventTypes = config.EventTypesRegistered
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(ctx) })
	for range 2 { // a second start finds them
		if err := demo.RegisterEventTypes(ctx, srv); err != nil {
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
