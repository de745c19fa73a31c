// Package client is Hookline's Go SDK: a typed client of the JSON API and the verification of the webhooks
// Hookline sends.
//
//	c, err := client.New("https://hooks.example.com", os.Getenv("HOOKLINE_TOKEN"))
//	me, err := c.Me(ctx) // the token's tenant and scopes
//	published, err := c.Publish(ctx, *me.TenantID, "invoice.paid", map[string]any{"invoice_id": "inv_1"},
//		client.PublishOptions{IdempotencyKey: "inv_1-paid"})
//	for d, err := range c.Deliveries(ctx, *me.TenantID, &client.ListDeliveriesParams{}) { ... }
//
// and in a receiver:
//
//	if err := client.Verify(secret, r.Header, body); err != nil { http.Error(w, "bad signature", 400) }
//
// # Generated and hand-written
//
// openapi.gen.go is generated from api/openapi.yaml by oapi-codegen (configured by oapi-codegen.yaml beside
// it, run by `make generate`, and checked stale by `make check-generated`): a type for every schema
// (Delivery, Subscription, Published, ...) and a method for every operation, which Client carries
// (c.ListDeliveriesWithResponse, c.CreateSubscriptionWithResponse, ...). Every operation goes through
// Client's HTTP layer, so any of them answers an error status as an *APIError rather than a response to
// inspect. The rest is written by hand: New and its options, APIError, Publish, Me, the iterators over
// lists (All, Deliveries, Subscriptions, EventTypes, Activity, Replays, TenantReplays), Poll and Commit
// (a polling subscription's payloads kept as sent), Verify, and Sign, SignWith and EventBody (a webhook's
// headers and body as the server makes them).
//
// # Why oapi-codegen
//
// Two generators were weighed, both pinned as Go tools in tools/go.mod like sqlc: oapi-codegen
// (github.com/oapi-codegen/oapi-codegen/v2) and ogen (github.com/ogen-go/ogen). oapi-codegen was tried
// first, as the most used, and reads api/openapi.yaml, an OpenAPI 3.1 document, as it is: type arrays such
// as [string, 'null'] and a oneOf of an object and null become pointers, const fields are kept, and the
// spec needed no change for it (its one 3.0 leftover, a `nullable: true`, was fixed as a spec bug). Its
// output is plain encoding/json structs and net/http calls with one small runtime dependency
// (github.com/oapi-codegen/runtime, for parameter encoding), and it generates a client without any server
// code. ogen was kept as the fallback for a document oapi-codegen could not read; it brings its own JSON
// encoder and OpenTelemetry into every program that imports the SDK, which a client library need not.
package client
