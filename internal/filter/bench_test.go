package filter

import "testing"

// invoicePaid is a realistic 2 KB payload: a Stripe-like invoice with customer, lines and metadata.
const invoicePaid = `{
  "id": "evt_1PqRstUvWxYz0123456789ab",
  "object": {
    "id": "in_1PqRstUvWxYz0123456789ab",
    "object": "invoice",
    "account_country": "GB",
    "account_name": "Example Ltd",
    "amount_due": 4900,
    "amount_paid": 4900,
    "amount_remaining": 0,
    "attempt_count": 1,
    "attempted": true,
    "billing_reason": "subscription_cycle",
    "collection_method": "charge_automatically",
    "created": 1767225600,
    "currency": "usd",
    "customer": "cus_Q1w2E3r4T5y6U7",
    "customer_email": "billing@customer.example.com",
    "customer_name": "Customer Inc",
    "customer_address": {"city": "London", "country": "GB", "line1": "1 High Street", "line2": null, "postal_code": "EC1A 1AA", "state": null},
    "lines": {
      "object": "list",
      "data": [
        {"id": "il_1", "amount": 2900, "currency": "usd", "description": "1 × Pro (at $29.00 / month)", "quantity": 1,
         "period": {"start": 1767225600, "end": 1769904000},
         "price": {"id": "price_pro_monthly", "product": "prod_pro", "unit_amount": 2900, "recurring": {"interval": "month", "interval_count": 1}}},
        {"id": "il_2", "amount": 2000, "currency": "usd", "description": "2 × Seats (at $10.00 / month)", "quantity": 2,
         "period": {"start": 1767225600, "end": 1769904000},
         "price": {"id": "price_seat_monthly", "product": "prod_seat", "unit_amount": 1000, "recurring": {"interval": "month", "interval_count": 1}}}
      ],
      "has_more": false,
      "total_count": 2
    },
    "livemode": true,
    "metadata": {"plan": "pro", "region": "eu-west", "team": "platform", "source": "api"},
    "number": "EX-0042-0017",
    "paid": true,
    "period_end": 1767225600,
    "period_start": 1764547200,
    "status": "paid",
    "subscription": "sub_1PqRstUvWxYz0123",
    "subtotal": 4900,
    "tax": 0,
    "total": 4900,
    "tags": ["renewal", "card", "monthly"],
    "status_transitions": {"finalized_at": 1767225600, "paid_at": 1767229200, "voided_at": null},
    "hosted_invoice_url": "https://invoice.example.com/i/acct_1Example/test_YWNjdF8xRXhhbXBsZSxfUXdFcnRZdWlPcA0200"
  }
}`

// fiveConditions is what a customer writes to receive paid monthly invoices over $10 from the API for
// business addresses: five conditions of five kinds.
const fiveConditions = `{
  "type": {"$in": ["invoice.paid", "invoice.payment_succeeded"]},
  "data": {"object": {
    "amount_paid": {"$gte": 1000},
    "customer_email": {"$not": {"$endsWith": ["@gmail.com", "@outlook.com"]}},
    "lines": {"data": {"price": {"recurring": {"interval": "month"}}}},
    "metadata": {"source": "api"}
  }}
}`

func BenchmarkMatch(b *testing.B) {
	if n := len(invoicePaid); n < 1948 || n > 2148 {
		b.Fatalf("the payload is %d bytes, not about 2 KB", n)
	}
	f, err := Parse([]byte(fiveConditions))
	if err != nil {
		b.Fatal(err)
	}
	event, err := Event("invoice.paid", []byte(invoicePaid))
	if err != nil {
		b.Fatal(err)
	}
	if !f.Match(event) {
		b.Fatal("the benchmark's filter does not match its event")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !f.Match(event) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkEvent is the json.Unmarshal a delivery pays once per event before any subscription's Match.
func BenchmarkEvent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Event("invoice.paid", []byte(invoicePaid)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(fiveConditions)); err != nil {
			b.Fatal(err)
		}
	}
}
