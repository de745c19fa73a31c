package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/tenants"
)

// The catalogue is global to the package's database, which other tests publish into: every type here has
// a prefix of its own, so no other test's events meet these schemas.

type eventType struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Group       string          `json:"group"`
	Schema      json.RawMessage `json:"schema"`
	Example     json.RawMessage `json:"example"`
	Deprecated  bool            `json:"deprecated"`
	Archived    bool            `json:"archived"`
	ArchivedAt  *time.Time      `json:"archived_at"`
}

type eventTypeList struct {
	Items []eventType `json:"items"`
}

type importResult struct {
	DryRun    bool     `json:"dry_run"`
	Created   []string `json:"created"`
	Updated   []string `json:"updated"`
	Unchanged []string `json:"unchanged"`
	Errors    []struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"errors"`
}

type errorWithDetails struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
		} `json:"details"`
	} `json:"error"`
}

func catPrefix() string { return "cat" + strings.ReplaceAll(uuid.NewString()[:8], "-", "") }

const invoiceSchema = `{"type": "object", "required": ["invoice_id", "amount"], "properties": {
  "invoice_id": {"type": "string"}, "amount": {"type": "integer", "minimum": 0},
  "lines": {"type": "array", "items": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}}}}`

func details(t *testing.T, r reply) errorWithDetails {
	t.Helper()
	var e errorWithDetails
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("decode %s: %v", r, err)
	}
	return e
}

func TestEventTypeRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	p := catPrefix()
	tid := e.newTenant("catalogue " + p)
	c := &catalogueRoutes{e: e, p: p, tid: tid, paid: p + ".invoice.paid",
		reader: e.newToken(tid, tenants.ScopeDeliveriesRead), // any scope reads the catalogue
		writer: e.newToken(tid, tenants.AllScopes...)}
	c.create(t)
	c.refuseCreates(t)
	c.read(t)
	c.change(t)
	c.archive(t)
}

// catalogueRoutes is TestEventTypeRoutes' world: its prefix p, a tenant with a token of one scope (reader)
// and one of all (writer), and the type paid.
type catalogueRoutes struct {
	e                            *env
	p, tid, paid, reader, writer string
}

// create makes three types: 201 with the type, the group defaulting to the name up to its first dot.
func (c *catalogueRoutes) create(t *testing.T) {
	e, p, paid := c.e, c.p, c.paid
	// Create: 201 with the type, the group defaulting to the name up to its first dot.
	created := must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{
		"name": paid, "description": "An invoice was paid.", "schema": json.RawMessage(invoiceSchema),
		"example": json.RawMessage(`{"invoice_id": "inv_1", "amount": 1250}`)})
	if created.Group != p || created.Archived || !strings.Contains(string(created.Schema), `"minimum":0`) {
		t.Errorf("created %+v", created)
	}
	must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": p + ".a/b:c", "group": "Zeta"})
	must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": p + ".customer.created", "group": "Alpha", "deprecated": true})
}

// refuseCreates: a duplicate, bad names and schemas, a non-admin and a body too large are refused.
func (cr *catalogueRoutes) refuseCreates(t *testing.T) {
	e, p, paid, writer := cr.e, cr.p, cr.paid, cr.writer
	for what, c := range map[string]struct {
		body any
		code string
		want string
	}{
		"duplicate":         {map[string]any{"name": paid}, "INVALID_STATE", "already exists"},
		"bad name":          {map[string]any{"name": p + " paid"}, "INVALID_REQUEST", "name must be an event type"},
		"reserved name":     {map[string]any{"name": "hookline.test"}, "INVALID_REQUEST", "test event"},
		"bad schema":        {map[string]any{"name": p + ".x", "schema": map[string]any{"type": "strin"}}, "INVALID_REQUEST", "schema is not a valid JSON Schema"},
		"remote ref":        {map[string]any{"name": p + ".x", "schema": map[string]any{"$ref": "http://169.254.169.254/latest"}}, "INVALID_REQUEST", "does not fetch"},
		"schema not object": {map[string]any{"name": p + ".x", "schema": "string"}, "INVALID_REQUEST", "schema must be a JSON object"},
		"unknown field":     {map[string]any{"name": p + ".x", "schemas": map[string]any{}}, "INVALID_REQUEST", "unknown field"},
		"bad example": {map[string]any{"name": p + ".x", "schema": json.RawMessage(invoiceSchema), "example": map[string]any{"invoice_id": 7}},
			"INVALID_REQUEST", "example does not satisfy the schema"},
	} {
		r := e.call("POST", "/event-types", adminToken, c.body)
		er := wantError(t, what, r, c.code)
		if !strings.Contains(er.Error.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", what, er.Error.Message, c.want)
		}
	}
	r := e.call("POST", "/event-types", adminToken, map[string]any{"name": p + ".x", "schema": json.RawMessage(invoiceSchema), "example": map[string]any{"invoice_id": 7}})
	if d := details(t, r).Error.Details; len(d) != 2 || d[0].Path != "" || d[1].Path != "/invoice_id" {
		t.Errorf("bad example's details: %+v", d)
	}
	wantError(t, "no token", e.call("POST", "/event-types", "", map[string]any{"name": p + ".y"}), "UNAUTHENTICATED")
	wantError(t, "tenant token creates", e.call("POST", "/event-types", writer, map[string]any{"name": p + ".y"}), "FORBIDDEN")
	wantError(t, "too large", e.call("POST", "/event-types", adminToken, `{"name": "`+p+`.big", "description": "`+strings.Repeat("x", 300<<10)+`"}`), "PAYLOAD_TOO_LARGE")
}

// mine lists this test's types, as group/name, by group then name.
func (c *catalogueRoutes) mine(token, query string) []string {
	var out []string
	for _, x := range must[eventTypeList](c.e, 200, "GET", "/event-types"+query, token, nil).Items {
		if strings.HasPrefix(x.Name, c.p) {
			out = append(out, x.Group+"/"+x.Name)
		}
	}
	return out
}

// read: any valid token reads a type and lists them.
func (c *catalogueRoutes) read(t *testing.T) {
	e, p, paid, reader := c.e, c.p, c.paid, c.reader
	// Read: any valid token; a slash in a name comes escaped.
	got := must[eventType](e, 200, "GET", "/event-types/"+paid, reader, nil)
	if got.Name != paid || string(got.Example) != `{"invoice_id":"inv_1","amount":1250}` {
		t.Errorf("get %+v", got)
	}
	if slash := must[eventType](e, 200, "GET", "/event-types/"+url.PathEscape(p+".a/b:c"), reader, nil); slash.Group != "Zeta" {
		t.Errorf("get a/b:c: %+v", slash)
	}
	wantError(t, "get unknown", e.call("GET", "/event-types/"+p+".nope", reader, nil), "NOT_FOUND")
	wantError(t, "get without token", e.call("GET", "/event-types/"+paid, "", nil), "UNAUTHENTICATED")

	// List: by group, then name; this test's types only.
	want := []string{"Alpha/" + p + ".customer.created", p + "/" + paid, "Zeta/" + p + ".a/b:c"} // groups case aside
	if got := c.mine(reader, ""); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("list: %v, want %v", got, want)
	}
	wantError(t, "list with a bad include_archived", e.call("GET", "/event-types?include_archived=maybe", reader, nil), "INVALID_REQUEST")
	wantError(t, "list with an unknown parameter", e.call("GET", "/event-types?group=x", reader, nil), "INVALID_REQUEST")
}

// change: the admin changes the fields given, with the same checks.
func (c *catalogueRoutes) change(t *testing.T) {
	e, p, paid, writer := c.e, c.p, c.paid, c.writer
	// Change: the fields given, with the same checks; admin only.
	changed := must[eventType](e, 200, "PATCH", "/event-types/"+paid, adminToken, map[string]any{"description": "Paid in full.", "deprecated": true})
	if changed.Description != "Paid in full." || !changed.Deprecated || string(changed.Schema) == "null" {
		t.Errorf("patched %+v", changed)
	}
	wantError(t, "patch: example against the stored schema", e.call("PATCH", "/event-types/"+paid, adminToken, map[string]any{"example": map[string]any{"amount": -1}}), "INVALID_REQUEST")
	wantError(t, "patch: bad schema", e.call("PATCH", "/event-types/"+paid, adminToken, map[string]any{"schema": map[string]any{"minimum": "x"}}), "INVALID_REQUEST")
	wantError(t, "patch: rename", e.call("PATCH", "/event-types/"+paid, adminToken, map[string]any{"name": p + ".other"}), "INVALID_REQUEST")
	wantError(t, "patch unknown", e.call("PATCH", "/event-types/"+p+".nope", adminToken, map[string]any{"description": "x"}), "NOT_FOUND")
	wantError(t, "tenant token patches", e.call("PATCH", "/event-types/"+paid, writer, map[string]any{"description": "x"}), "FORBIDDEN")
	if got := must[eventType](e, 200, "GET", "/event-types/"+paid, adminToken, nil); got.Description != "Paid in full." {
		t.Errorf("a refused PATCH changed the type: %+v", got)
	}
}

// archive: the admin archives a type, which stays readable and takes events.
func (c *catalogueRoutes) archive(t *testing.T) {
	e, p, paid, reader, writer := c.e, c.p, c.paid, c.reader, c.writer
	// Archive: 204, hidden from the list unless asked, still readable; twice 204; unknown 404; admin only.
	wantError(t, "tenant token archives", e.call("DELETE", "/event-types/"+paid, writer, nil), "FORBIDDEN")
	for range 2 {
		if r := e.call("DELETE", "/event-types/"+paid, adminToken, nil); r.status != 204 {
			t.Fatalf("archive: %s", r)
		}
	}
	wantError(t, "archive unknown", e.call("DELETE", "/event-types/"+p+".nope", adminToken, nil), "NOT_FOUND")
	if got := c.mine(reader, ""); len(got) != 2 {
		t.Errorf("archived type still listed: %v", got)
	}
	if got := c.mine(reader, "?include_archived=true"); len(got) != 3 {
		t.Errorf("include_archived=true: %v", got)
	}
	if got := must[eventType](e, 200, "GET", "/event-types/"+paid, reader, nil); !got.Archived || got.ArchivedAt == nil {
		t.Errorf("archived type read as %+v", got)
	}
	// Events of an archived type are still accepted (the server accepts any type), unchecked.
	e.publish(c.tid, paid, map[string]any{"invoice_id": 1})
}

func TestPublishIsCheckedAgainstTheSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	p := catPrefix()
	tid := e.newTenant("publish " + p)
	rc := newReceiver(t, nil)
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/all"})
	paid := p + ".invoice.paid"
	must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": paid, "schema": json.RawMessage(invoiceSchema)})
	token := e.newToken(tid, tenants.ScopeEventsWrite)

	events := func() int {
		var n int
		if err := e.srv.Pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE tenant_id = $1", tid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ok := must[published](e, 202, "POST", "/tenants/"+tid+"/events", token,
		map[string]any{"event_type": paid, "payload": map[string]any{"invoice_id": "inv_1", "amount": 5, "lines": []any{map[string]any{"sku": "a"}}}})
	if len(ok.Deliveries) != 1 {
		t.Fatalf("valid event: %+v", ok)
	}
	before := events()
	r := e.call("POST", "/tenants/"+tid+"/events", token, map[string]any{"event_type": paid,
		"payload": map[string]any{"amount": -3, "lines": []any{map[string]any{"sku": "a"}, map[string]any{"qty": "two"}}}}, "Idempotency-Key", "bad-1")
	er := wantError(t, "invalid payload", r, "INVALID_REQUEST")
	if !strings.Contains(er.Error.Message, `does not satisfy the schema of event type "`+paid+`"`) {
		t.Errorf("message %q", er.Error.Message)
	}
	got := map[string]bool{}
	for _, d := range details(t, r).Error.Details {
		got[d.Path] = d.Message != ""
	}
	for _, path := range []string{"", "/amount", "/lines/1", "/lines/1/qty"} {
		if !got[path] {
			t.Errorf("no detail with a message at %q: %s", path, r)
		}
	}
	if n := events(); n != before {
		t.Errorf("a refused publish stored %d events", n-before)
	}
	// The key of a refused publish was not spent: the corrected event goes through with it.
	must[published](e, 202, "POST", "/tenants/"+tid+"/events", token, map[string]any{"event_type": paid,
		"payload": map[string]any{"invoice_id": "inv_2", "amount": 3}}, "Idempotency-Key", "bad-1")

	// At most 10 details.
	wide := map[string]any{"type": "object", "properties": map[string]any{}}
	payload := map[string]any{}
	for i := range 14 {
		wide["properties"].(map[string]any)[fmt.Sprintf("f%02d", i)] = map[string]any{"type": "string"}
		payload[fmt.Sprintf("f%02d", i)] = i
	}
	must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": p + ".wide", "schema": wide})
	r = e.call("POST", "/tenants/"+tid+"/events", token, map[string]any{"event_type": p + ".wide", "payload": payload})
	wantError(t, "wide", r, "INVALID_REQUEST")
	if d := details(t, r).Error.Details; len(d) != 10 {
		t.Errorf("%d details, want 10", len(d))
	}
	// Types not in the catalogue are accepted as they are (HOOKLINE_EVENT_TYPES=any).
	e.publish(tid, p+".unregistered", map[string]any{"anything": true})
}

func TestRegisteredTypesOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly, func(c *config.Config) { c.EventTypes = config.EventTypesRegistered })
	p := catPrefix()
	tid := e.newTenant("registered " + p)
	rc := newReceiver(t, nil)
	known, old := p+".order.created", p+".order.legacy"
	for _, n := range []string{known, old} {
		must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": n})
	}
	if r := e.call("DELETE", "/event-types/"+old, adminToken, nil); r.status != 204 {
		t.Fatal(r)
	}
	e.newSubscription(tid, map[string]any{"url": rc.URL + "/all"})

	e.publish(tid, known, map[string]any{"n": 1})
	e.publish(tid, "hookline.test", map[string]any{"test": true})
	for what, typ := range map[string]string{"unknown": p + ".order.unknown", "archived": old} {
		r := e.call("POST", "/tenants/"+tid+"/events", adminToken, map[string]any{"event_type": typ, "payload": map[string]any{"n": 1}})
		er := wantError(t, what, r, "INVALID_REQUEST")
		if !strings.Contains(er.Error.Message, "HOOKLINE_EVENT_TYPES=registered") {
			t.Errorf("%s: message %q does not say why", what, er.Error.Message)
		}
	}

	// Subscriptions name registered types only: exact names, and patterns that cover one.
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL + "/some", "event_types": []string{known, p + ".order.*", "hookline.test"}})
	for what, types := range map[string][]string{
		"unknown type":       {known, p + ".order.unknown"},
		"archived type":      {old},
		"pattern of nothing": {p + ".invoice.*"},
	} {
		wantError(t, "create: "+what, e.call("POST", "/tenants/"+tid+"/subscriptions", adminToken,
			map[string]any{"url": rc.URL + "/x", "event_types": types}), "INVALID_REQUEST")
		wantError(t, "change: "+what, e.call("PATCH", "/tenants/"+tid+"/subscriptions/"+sub.ID, adminToken,
			map[string]any{"event_types": types}), "INVALID_REQUEST")
	}
	if s := must[subscription](e, 200, "GET", "/tenants/"+tid+"/subscriptions/"+sub.ID, adminToken, nil); len(s.EventTypes) != 3 {
		t.Errorf("a refused change stored event types %v", s.EventTypes)
	}
}

// Two server processes on one database: a type registered through one is enforced by the other within
// its poll (1 s), with no database read per publish.
func TestCatalogueChangeReachesAnotherProcess(t *testing.T) {
	t.Parallel()
	a := newEnv(t, httpOnly)
	b := newEnv(t, withBackground) // its catalogue poller brings in a's change
	p := catPrefix()
	tid := a.newTenant("two processes " + p)
	typ := p + ".invoice.paid"
	bad := map[string]any{"event_type": typ, "payload": map[string]any{"invoice_id": 1}}
	b.publish(tid, typ, bad["payload"]) // no schema yet
	start := time.Now()
	must[eventType](a, 201, "POST", "/event-types", adminToken, map[string]any{"name": typ, "schema": json.RawMessage(invoiceSchema)})
	wantError(t, "the process that made the change", a.call("POST", "/tenants/"+tid+"/events", adminToken, bad), "INVALID_REQUEST")
	var r reply
	if !eventually(5*time.Second, 50*time.Millisecond, func() bool {
		r = b.call("POST", "/tenants/"+tid+"/events", adminToken, bad)
		return r.status == 400
	}) {
		t.Fatalf("the other process still accepts the invalid payload after 5 s: %s", r)
	}
	wantError(t, "the other process", r, "INVALID_REQUEST")
	t.Logf("enforced by the other process after %s", time.Since(start).Round(time.Millisecond))
}

func TestImportEventTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	p := catPrefix()
	doc := shopDocument(p)
	created, shipped := p+".order.created", p+".order.shipped"
	wantError(t, "tenant token imports", e.call("POST", "/event-types/import", e.newToken(e.newTenant("imp "+p), tenants.AllScopes...), doc), "FORBIDDEN")

	dry := must[importResult](e, 200, "POST", "/event-types/import?dry_run=true", adminToken, doc)
	if !dry.DryRun || len(dry.Created) != 2 || len(dry.Errors) != 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	wantError(t, "after a dry run", e.call("GET", "/event-types/"+created, adminToken, nil), "NOT_FOUND")

	res := must[importResult](e, 200, "POST", "/event-types/import", adminToken, doc)
	if res.DryRun || strings.Join(res.Created, ",") != created+","+shipped || len(res.Updated)+len(res.Unchanged) != 0 {
		t.Fatalf("import: %+v", res)
	}
	ty := must[eventType](e, 200, "GET", "/event-types/"+created, adminToken, nil)
	if ty.Description != "An order was placed" || strings.Contains(string(ty.Schema), "$ref") || !strings.Contains(string(ty.Example), "ord_1") {
		t.Errorf("imported %+v", ty)
	}
	// The imported (nested, shared) schema is enforced, with pointers into the payload.
	tid := e.newTenant("imp publish " + p)
	r := e.call("POST", "/tenants/"+tid+"/events", adminToken, map[string]any{"event_type": shipped,
		"payload": map[string]any{"id": "o", "items": []any{map[string]any{"price": map[string]any{"amount": 1, "currency": "JPY"}}}}})
	wantError(t, "imported schema", r, "INVALID_REQUEST")
	if d := details(t, r).Error.Details; len(d) != 1 || d[0].Path != "/items/0/price/currency" {
		t.Errorf("details %+v", d)
	}

	again := must[importResult](e, 200, "POST", "/event-types/import", adminToken, doc)
	if len(again.Unchanged) != 2 || len(again.Created)+len(again.Updated) != 0 {
		t.Errorf("second import: %+v", again)
	}
	// JSON documents too; a changed description updates.
	var asJSON = fmt.Sprintf(`{"openapi": "3.1.0", "webhooks": {"%s": {"post": {"summary": "Placed"}}, "bad name here": {"post": {}}}}`, created)
	upd := must[importResult](e, 200, "POST", "/event-types/import", adminToken, asJSON)
	if strings.Join(upd.Updated, ",") != created || len(upd.Errors) != 1 || upd.Errors[0].Name != "bad name here" {
		t.Errorf("JSON import: %+v", upd)
	}
	refuseImports(t, e, p, doc)
}

// refuseImports: documents that are not OpenAPI 3.1 webhooks, hold a $ref cycle or are too large are
// refused, saying why, and import nothing.
func refuseImports(t *testing.T, e *env, p, doc string) {
	for what, c := range map[string]struct{ doc, code, want string }{
		"not OpenAPI 3.1": {`{"openapi": "3.0.0", "webhooks": {}}`, "INVALID_REQUEST", "OpenAPI 3.1"},
		"not a document":  {`<xml/>`, "INVALID_REQUEST", "OpenAPI 3.1 object"},
		"no webhooks":     {`{"openapi": "3.1.0"}`, "INVALID_REQUEST", "no webhooks"},
		"ref cycle": {`{"openapi": "3.1.0", "webhooks": {"` + p + `.loop": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}}}}},
		  "components": {"schemas": {"A": {"properties": {"b": {"$ref": "#/components/schemas/B"}}}, "B": {"items": {"$ref": "#/components/schemas/A"}}}}}`,
			"INVALID_REQUEST", "$ref #/components/schemas/A refers back to itself"},
		"huge": {"openapi: 3.1.0\n# " + strings.Repeat("x", 1<<20), "PAYLOAD_TOO_LARGE", "larger than 1024 KiB"},
	} {
		r := e.call("POST", "/event-types/import", adminToken, c.doc)
		er := wantError(t, what, r, c.code)
		if !strings.Contains(er.Error.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", what, er.Error.Message, c.want)
		}
	}
	wantError(t, "dry_run not a boolean", e.call("POST", "/event-types/import?dry_run=perhaps", adminToken, doc), "INVALID_REQUEST")
	wantError(t, "a loop imports nothing", e.call("GET", "/event-types/"+p+".loop", adminToken, nil), "NOT_FOUND")
}

// shopDocument is an OpenAPI 3.1 document of two webhooks, p.order.created and p.order.shipped, whose
// schemas share components through $ref.
func shopDocument(p string) string {
	return fmt.Sprintf(`openapi: 3.1.0
info: {title: Shop, version: "1"}
webhooks:
  %[1]s.order.created:
    post:
      summary: An order was placed
      requestBody:
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Order'}
            example: {id: ord_1, items: [{sku: a, price: {amount: 5, currency: EUR}}]}
  %[1]s.order.shipped:
    post:
      description: The order left the warehouse.
      requestBody: {$ref: '#/components/requestBodies/OrderEvent'}
components:
  schemas:
    Money:
      type: object
      required: [amount, currency]
      properties:
        amount: {type: integer}
        currency: {$ref: '#/components/schemas/Currency'}
    Currency: {type: string, enum: [EUR, USD]}
    Order:
      type: object
      required: [id, items]
      properties:
        id: {type: string}
        items:
          type: array
          items:
            type: object
            properties:
              sku: {type: string}
              price: {$ref: '#/components/schemas/Money'}
  requestBodies:
    OrderEvent:
      content:
        application/json:
          schema: {$ref: '#/components/schemas/Order'}
`, p)
}
