package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/fault"
)

// The demo's event catalogue: the types the demo publishes (Trickle and the played-back outage), each with
// a group, a description, a schema its payloads satisfy and an example, so `make run` shows a catalogue
// that is not empty and publishes that are checked against it.

// moneyEvent is the shape of the trickle's events: an id, an amount in cents, a currency and a customer.
func moneyEvent(what string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "required": ["id", "amount", "currency", "customer"],
  "properties": {
    "id": {"type": "string", "description": "The %s's id."},
    "amount": {"type": "integer", "minimum": 0, "description": "In the currency's smallest unit (cents)."},
    "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"], "description": "ISO 4217 code."},
    "customer": {
      "type": "object",
      "required": ["email"],
      "properties": {"email": {"type": "string", "format": "email", "description": "Where the customer is reached."}}
    }
  }
}`, what))
}

// customerSchema is customer.updated's: who the customer is now and which of their details changed.
const customerSchema = `{
  "type": "object",
  "required": ["id", "email", "changed"],
  "properties": {
    "id": {"type": "string", "description": "The customer's id."},
    "email": {"type": "string", "format": "email", "description": "Where the customer is reached."},
    "name": {"type": "string", "description": "The customer's name."},
    "changed": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["email", "name", "address"]}, "description": "Which of the customer's details changed."}
  },
  "additionalProperties": false
}`

const shipmentSchema = `{
  "type": "object",
  "required": ["shipment", "carrier", "status"],
  "properties": {
    "shipment": {"type": "string", "description": "The shipment's id."},
    "carrier": {"type": "string", "description": "Who carries it."},
    "status": {"type": "string", "enum": ["label_created", "in_transit", "delivered"]}
  }
}`

// demoCatalogue is every type the demo publishes.
var demoCatalogue = []catalogue.Input{
	{Name: "order.created", Group: ptr("Orders"), Description: ptr("A customer placed an order; sent once, after payment was authorised."),
		Schema: moneyEvent("order"), Example: json.RawMessage(`{"id":"demo_1700000000_1","amount":4200,"currency":"EUR","customer":{"email":"customer7@example.com"}}`)},
	{Name: "invoice.paid", Group: ptr("Billing"), Description: ptr("An invoice was paid in full."),
		Schema: moneyEvent("invoice"), Example: json.RawMessage(`{"id":"demo_1700000000_2","amount":1250,"currency":"EUR","customer":{"email":"customer3@example.com"}}`)},
	{Name: "invoice.failed", Group: ptr("Billing"), Description: ptr("Collecting an invoice failed; it is retried by the billing system."),
		Schema: moneyEvent("invoice"), Example: json.RawMessage(`{"id":"demo_1700000000_3","amount":990,"currency":"EUR","customer":{"email":"customer12@example.com"}}`)},
	{Name: "customer.updated", Group: ptr("Customers"), Description: ptr("A customer's details changed."),
		Schema: json.RawMessage(customerSchema), Example: json.RawMessage(`{"id":"cus_1","email":"customer1@example.com","name":"Customer 1","changed":["email"]}`)},
	{Name: "shipment.created", Group: ptr("Shipping"), Description: ptr("A shipping label was created for an order."),
		Schema: json.RawMessage(shipmentSchema), Example: json.RawMessage(`{"shipment":"shp_0_1","carrier":"DHL","status":"label_created"}`)},
	{Name: "shipment.delivered", Group: ptr("Shipping"), Description: ptr("The carrier delivered a shipment."),
		Schema: json.RawMessage(shipmentSchema), Example: json.RawMessage(`{"shipment":"shp_0_back","carrier":"DHL","status":"delivered"}`)},
}

func ptr[T any](v T) *T { return &v }

// outdated are schemas earlier demos registered that the demo no longer publishes to: a type that still has
// one is given the demo's current fields (customer.updated once had an invoice's amount and currency).
var outdated = map[string]json.RawMessage{
	"customer.updated": moneyEvent("customer"),
}

// RegisterEventTypes adds the demo's types to the catalogue when they are missing, and replaces an earlier
// demo's outdated ones (an admin's changes to them, and archived ones, are left alone).
func RegisterEventTypes(ctx context.Context, cat *catalogue.Service) error {
	for _, in := range demoCatalogue {
		if t, err := cat.Get(ctx, in.Name); !fault.Is(err, fault.NotFound) {
			if err != nil {
				return err
			}
			if old, ok := outdated[in.Name]; ok && !t.Archived && sameJSON(t.Schema, old) {
				if _, err := cat.Update(ctx, in.Name, catalogue.Input{Description: in.Description, Schema: in.Schema, Example: in.Example}); err != nil {
					return fmt.Errorf("demo event type %s: %w", in.Name, err)
				}
			}
			continue
		}
		if _, err := cat.Create(ctx, in); err != nil && !fault.Is(err, fault.InvalidState) {
			return fmt.Errorf("demo event type %s: %w", in.Name, err)
		}
	}
	return nil
}

// sameJSON says whether two JSON documents are the same value, whatever their spacing and key order.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

var demoTypes = []string{"order.created", "order.created", "invoice.paid", "invoice.failed", "customer.updated"}

// trickleEvent is the trickle's nth event: a type and its payload, in the shape its type's schema says.
func trickleEvent(n int) (string, []byte) {
	typ := demoTypes[rand.IntN(len(demoTypes))]
	customer := rand.IntN(50)
	if typ == "customer.updated" {
		changed := []string{"email", "name", "address"}[rand.IntN(3)]
		payload, _ := json.Marshal(map[string]any{
			"id": fmt.Sprintf("cus_%d", customer), "email": fmt.Sprintf("customer%d@example.com", customer),
			"name": fmt.Sprintf("Customer %d", customer), "changed": []string{changed},
		})
		return typ, payload
	}
	payload, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("demo_%d_%d", time.Now().Unix(), n), "amount": 100 + rand.IntN(9900), "currency": "EUR",
		"customer": map[string]string{"email": fmt.Sprintf("customer%d@example.com", customer)},
	})
	return typ, payload
}
