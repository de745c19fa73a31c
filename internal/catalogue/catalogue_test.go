package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "catalogue", func(u string) { dbURL = u }) }

func connect(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect = pgxuuid.AfterConnect
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// uniq makes type names of one test distinct from the others' (the catalogue is global to the database).
func uniq(t *testing.T, name string) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + "." + name
}

func ptr[T any](v T) *T { return &v }

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

func TestCreateChangeArchive(t *testing.T) {
	ctx := context.Background()
	s := New(connect(t), Options{})
	name := uniq(t, "paid")
	ty, err := s.Create(ctx, Input{Name: name, Description: ptr("Paid."), Schema: json.RawMessage(orderSchema),
		Example: json.RawMessage(`{"id": "o1", "total": 3}`)})
	if err != nil {
		t.Fatal(err)
	}
	if ty.Group != DefaultGroup(name) || ty.Archived || string(ty.Example) != `{"id":"o1","total":3}` {
		t.Errorf("created %+v", ty)
	}
	_, err = s.Create(ctx, Input{Name: name})
	wantCode(t, "create twice", err, fault.InvalidState)

	// Bad inputs change nothing.
	for what, in := range map[string]Input{
		"bad name":          {Name: "no spaces"},
		"test type":         {Name: TestEventType},
		"branded test type": {Name: brand.NeutralTestEventType},
		"schema not JSON":   {Name: name + "x", Schema: json.RawMessage(`{`)},
		"schema array":      {Name: name + "x", Schema: json.RawMessage(`[]`)},
		"bad schema":        {Name: name + "x", Schema: json.RawMessage(`{"type": 1}`)},
		"example mismatch":  {Name: name + "x", Schema: json.RawMessage(orderSchema), Example: json.RawMessage(`{"id": 1}`)},
		"example array":     {Name: name + "x", Example: json.RawMessage(`[1]`)},
		"group control":     {Name: name + "x", Group: ptr("a\nb")},
	} {
		_, err := s.Create(ctx, in)
		wantCode(t, what, err, fault.InvalidRequest)
	}
	if _, err := s.Get(ctx, name+"x"); !fault.Is(err, fault.NotFound) {
		t.Errorf("a refused create stored something: %v", err)
	}
	_, err = s.Create(ctx, Input{Name: name + "x", Schema: json.RawMessage(orderSchema), Example: json.RawMessage(`{"id": 1}`)})
	if fe := fault.As(err); fe == nil || len(fe.Details) == 0 || fe.Details[0].Path == "" && len(fe.Details) == 1 {
		t.Errorf("example mismatch without details: %#v", err)
	}

	// A change of the example alone is checked against the stored schema; of the schema, the stored example.
	_, err = s.Update(ctx, name, Input{Example: json.RawMessage(`{"id": "o2"}`)})
	wantCode(t, "example against the stored schema", err, fault.InvalidRequest)
	_, err = s.Update(ctx, name, Input{Schema: json.RawMessage(`{"required": ["other"]}`)})
	wantCode(t, "schema against the stored example", err, fault.InvalidRequest)
	ty, err = s.Update(ctx, name, Input{Group: ptr("Billing"), Deprecated: ptr(true)})
	if err != nil || ty.Group != "Billing" || !ty.Deprecated || ty.Description != "Paid." || string(ty.Schema) == "null" {
		t.Fatalf("update: %+v %v", ty, err)
	}
	ty, err = s.Update(ctx, name, Input{Schema: json.RawMessage(`null`)})
	if err != nil || string(ty.Schema) != "null" || string(ty.Example) == "null" {
		t.Fatalf("schema removed: %+v %v", ty, err)
	}
	_, err = s.Update(ctx, name, Input{Name: "other"})
	wantCode(t, "rename", err, fault.InvalidRequest)
	_, err = s.Update(ctx, name+".missing", Input{})
	wantCode(t, "update unknown", err, fault.NotFound)

	// Archive: out of the list, still readable; twice is fine; unknown is NOT_FOUND; create brings it back.
	if err := s.Archive(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := s.Archive(ctx, name); err != nil {
		t.Errorf("archive twice: %v", err)
	}
	wantCode(t, "archive unknown", s.Archive(ctx, name+".missing"), fault.NotFound)
	listed := func(archived bool) bool {
		all, err := s.List(ctx, archived)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range all {
			if x.Name == name {
				return true
			}
		}
		return false
	}
	if listed(false) || !listed(true) {
		t.Errorf("archived type: listed %v, with archived %v", listed(false), listed(true))
	}
	if ty, err := s.Get(ctx, name); err != nil || !ty.Archived || ty.ArchivedAt == nil {
		t.Errorf("get archived: %+v %v", ty, err)
	}
	ty, err = s.Create(ctx, Input{Name: name, Description: ptr("Back.")})
	if err != nil || ty.Archived || ty.Description != "Back." || ty.Group != DefaultGroup(name) {
		t.Errorf("create over archived: %+v %v", ty, err)
	}
}

func TestCheckEventAndKnown(t *testing.T) {
	ctx := context.Background()
	pool := connect(t)
	any := New(pool, Options{})
	registered := New(pool, Options{RegisteredOnly: true})
	name := uniq(t, "created")
	if _, err := any.Create(ctx, Input{Name: name, Schema: json.RawMessage(orderSchema)}); err != nil {
		t.Fatal(err)
	}
	plain := uniq(t, "plain")
	if _, err := any.Create(ctx, Input{Name: plain}); err != nil {
		t.Fatal(err)
	}
	if err := registered.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Service{any, registered} {
		if err := s.CheckEvent(name, []byte(`{"id":"o","total":1}`)); err != nil {
			t.Errorf("valid event refused: %v", err)
		}
		fe := wantCode(t, "invalid payload", s.CheckEvent(name, []byte(`{"id":"o","total":"1"}`)), fault.InvalidRequest)
		if len(fe.Details) != 1 || fe.Details[0].Path != "/total" || !strings.Contains(fe.Message, "/total") {
			t.Errorf("details %+v, message %q", fe.Details, fe.Message)
		}
		if err := s.CheckEvent(plain, []byte(`{"anything":1}`)); err != nil {
			t.Errorf("type without schema refused: %v", err)
		}
		for _, tt := range []string{TestEventType, brand.NeutralTestEventType} {
			if err := s.CheckEvent(tt, []byte(`{}`)); err != nil {
				t.Errorf("test event %s refused: %v", tt, err)
			}
		}
	}
	if err := any.CheckEvent("unknown.type", []byte(`{}`)); err != nil {
		t.Errorf("any: unknown type refused: %v", err)
	}
	wantCode(t, "registered: unknown type", registered.CheckEvent("unknown.type", []byte(`{}`)), fault.InvalidRequest)

	prefix := strings.TrimSuffix(name, ".created")
	for v, want := range map[string]bool{name: true, plain: true, TestEventType: true, brand.NeutralTestEventType: true, prefix + ".*": true,
		"unknown.type": false, "unknown.*": false, prefix + ".created.*": false} {
		if got := registered.Known(v); got != want {
			t.Errorf("Known(%q) = %v, want %v", v, got, want)
		}
	}

	// Archived: refused when registered only, accepted unchecked otherwise.
	if err := any.Archive(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := registered.Load(ctx); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "registered: archived type", registered.CheckEvent(name, []byte(`{"id":"o","total":1}`)), fault.InvalidRequest)
	if err := any.CheckEvent(name, []byte(`{"total":"x"}`)); err != nil {
		t.Errorf("any: archived type's schema still enforced: %v", err)
	}
	if registered.Known(name) {
		t.Error("archived type still known")
	}
}

// Two processes on one database: a change made through one is in force in the other within its poll
// interval, and the poll reads only the version unless it moved.
func TestRefreshAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	a := New(connect(t), Options{PollInterval: 20 * time.Millisecond})
	b := New(connect(t), Options{PollInterval: 20 * time.Millisecond, RegisteredOnly: true})
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	name := uniq(t, "moved")
	bad := []byte(`{"id": 5, "total": 1}`)
	if err := b.CheckEvent(name, bad); err == nil {
		t.Fatal("b accepts an unregistered type in registered mode")
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5 s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := time.Now()
	if _, err := a.Create(ctx, Input{Name: name, Schema: json.RawMessage(orderSchema)}); err != nil {
		t.Fatal(err)
	}
	// a made the change: in force there at once.
	if err := a.CheckEvent(name, bad); err == nil {
		t.Error("a does not enforce its own change at once")
	}
	waitFor("b enforces the new schema", func() bool {
		err := b.CheckEvent(name, bad)
		return err != nil && strings.Contains(err.Error(), "does not satisfy")
	})
	t.Logf("b saw the new type after %s", time.Since(start).Round(time.Millisecond))
	if _, err := a.Update(ctx, name, Input{Schema: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
	waitFor("b drops the schema", func() bool { return b.CheckEvent(name, bad) == nil })
	if err := a.Archive(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitFor("b refuses the archived type", func() bool { return b.CheckEvent(name, bad) != nil && !b.Known(name) })

	// Without a change, a poll keeps the loaded snapshot (no reload). A poll is a Load: five of them, made
	// here rather than waited for.
	before := b.snap.Load()
	for range 5 {
		if err := b.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if b.snap.Load() != before {
		t.Error("b reloaded the catalogue without a change")
	}
}

func TestImportDocument(t *testing.T) {
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

	// Again: unchanged; with a group set by hand kept; a changed document updates.
	if _, err := s.Update(ctx, "order.created", Input{Group: ptr("Orders")}); err != nil {
		t.Fatal(err)
	}
	res, err = s.Import(ctx, doc, false)
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

// A group is one whatever its capitalisation, and is spelled one way: a type whose group is its default
// takes the spelling the group has, a change naming the group gives it to all of its types, and types
// stored in another spelling (before, or by hand) are listed and read in the group's.
func TestGroupsAreOneWhateverTheirCase(t *testing.T) {
	ctx := context.Background()
	pool := connect(t)
	s := New(pool, Options{})
	g := fmt.Sprintf("grp%d", time.Now().UnixNano()%1_000_000_000)
	spelled := strings.ToUpper(g[:1]) + g[1:] // Grp123
	if _, err := s.Create(ctx, Input{Name: g + ".a", Group: ptr(spelled)}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(ctx, Input{Name: g + ".b"}) // its default group is g, in lower case
	if err != nil {
		t.Fatal(err)
	}
	if b.Group != spelled {
		t.Errorf("a type in the default group %q is in %q, want the group's spelling %q", g, b.Group, spelled)
	}
	groups := func() []string {
		t.Helper()
		types, err := s.List(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ty := range types {
			if strings.HasPrefix(ty.Name, g+".") {
				out = append(out, ty.Name+" "+ty.Group)
			}
		}
		return out
	}
	// Stored by hand in another spelling, and changed before the others: listed and read in theirs.
	if _, err := pool.Exec(ctx, `INSERT INTO event_types (name, description, group_name, created_at, updated_at) VALUES ($1, '', $2, now() - interval '1 hour', now() - interval '1 hour')`, g+".c", g); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(groups(), ", "), fmt.Sprintf("%[1]s.a %[2]s, %[1]s.b %[2]s, %[1]s.c %[2]s", g, spelled); got != want {
		t.Errorf("listed %s, want %s", got, want)
	}
	if c, err := s.Get(ctx, g+".c"); err != nil || c.Group != spelled {
		t.Errorf("read %q (%v), want %q", c.Group, err, spelled)
	}
	// Naming the group in another spelling renames it for all of its types.
	upper := strings.ToUpper(g)
	if _, err := s.Update(ctx, g+".b", Input{Group: ptr(upper)}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(groups(), ", "), fmt.Sprintf("%[1]s.a %[2]s, %[1]s.b %[2]s, %[1]s.c %[2]s", g, upper); got != want {
		t.Errorf("after the rename, listed %s, want %s", got, want)
	}
}
