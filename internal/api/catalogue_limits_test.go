package api_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hookline/hookline/internal/tenants"
)

const mib = 1 << 20

// heapAllocated is what f allocates in this process, the server's handlers included (the heap's total,
// so it counts what was freed again too).
func heapAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// anyOfChain is a schema of n definitions, each a choice between two references to the next: a value is
// checked against 2ⁿ schemas.
func anyOfChain(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"integer"}},"$ref":"#/$defs/a0"}`, n)
	return json.RawMessage(b.String())
}

// nestedProperties is a schema whose properties nest n deep.
func nestedProperties(n int) string {
	return `{"type":"object"` + strings.Repeat(`,"properties":{"a":{"type":"object"`, n) + strings.Repeat(`}}`, n) + `}`
}

// Hostile publishes against recursive schemas (the issue's: any events:write token could make one
// publish cost 0.9 GiB, kept until restart) are refused before they are checked: sixteen at once
// allocate less than 100 MiB in all, and each answer is a clear, small 400.
func TestHostilePublishesAgainstRecursiveSchemasStayCheap(t *testing.T) {
	// Not parallel: heapAllocated counts what the whole process allocates, other tests' servers included.
	e := newEnv(t, httpOnly)
	p := catPrefix()
	tid := e.newTenant("hostile " + p)
	token := e.newToken(tid, tenants.ScopeEventsWrite)
	tree, thread := p+".tree", p+".thread"
	must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": tree,
		"schema": json.RawMessage(`{"$defs":{"node":{"type":"object","properties":{"child":{"$ref":"#/$defs/node"},"v":{"type":"integer"}}}},"$ref":"#/$defs/node"}`)})
	must[eventType](e, 201, "POST", "/event-types", adminToken, map[string]any{"name": thread,
		"schema": json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"replies":{"type":"array","items":{"$ref":"#"}}}}`)})

	// 100 KB nested 9,990 deep with a wrong leaf; a 122 KB thread of replies 4,500 deep, the innermost
	// text a number.
	deep := strings.Repeat(`{"child":`, 9990) + `{"v":"x"}` + strings.Repeat(`}`, 9990)
	replies := strings.Repeat(`{"text":"hello","replies":[`, 4500) + `{"text":1}` + strings.Repeat(`]}`, 4500)
	bodies := make([][]byte, 16)
	for i := range bodies {
		typ, payload := tree, deep
		if i%2 == 1 {
			typ, payload = thread, replies
		}
		bodies[i] = []byte(`{"event_type":"` + typ + `","payload":` + payload + `}`)
	}
	answers := make([]reply, len(bodies))
	n := heapAllocated(func() {
		var wg sync.WaitGroup
		for i, body := range bodies {
			wg.Go(func() { answers[i] = e.call("POST", "/tenants/"+tid+"/events", token, body) })
		}
		wg.Wait()
	})
	if n > 100*mib {
		t.Errorf("16 hostile publishes at once allocated %d MiB", n/mib)
	}
	t.Logf("16 hostile publishes at once allocated %.1f MiB", float64(n)/mib)
	for i, r := range answers {
		er := wantError(t, fmt.Sprint("hostile publish ", i), r, "INVALID_REQUEST")
		if !strings.Contains(er.Error.Message, "nested more than 64 levels deep") {
			t.Errorf("publish %d: message %q does not name the limit", i, er.Error.Message)
		}
		if len(r.body) > 4<<10 {
			t.Errorf("publish %d: an answer of %d KiB", i, len(r.body)>>10)
		}
	}
}

// Schemas whose cost is out of proportion to their size are refused by the API, saying which limit, and
// cheaply: the anyOf chains, properties 1,500 deep, an OpenAPI document 2,500 deep (27 s and
// +355 MiB, even as a dry run) and 7 KB of YAML aliases that stored a 6.5 MB schema.
func TestCostlySchemasAreRefused(t *testing.T) {
	// Not parallel: heapAllocated counts what the whole process allocates, other tests' servers included.
	e := newEnv(t, httpOnly)
	p := catPrefix()
	for _, c := range []struct {
		what   string
		schema json.RawMessage
		want   string
	}{
		{"anyOf chain 20", anyOfChain(20), "more than 1000 subschemas to one value"},
		{"anyOf chain 24", anyOfChain(24), "more than 1000 subschemas to one value"},
		{"properties 1,500 deep", json.RawMessage(nestedProperties(1500)), "nested more than 128 levels deep"},
	} {
		var r reply
		if n := heapAllocated(func() {
			r = e.call("POST", "/event-types", adminToken, map[string]any{"name": p + ".costly", "schema": c.schema})
		}); n > 20*mib {
			t.Errorf("%s: refusing it allocated %d MiB", c.what, n/mib)
		}
		if er := wantError(t, c.what, r, "INVALID_REQUEST"); !strings.Contains(er.Error.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", c.what, er.Error.Message, c.want)
		}
	}

	// 47 KB of OpenAPI, its webhook's schema 2,500 deep: listed in errors, in a dry run and not.
	deepDoc := `{"openapi":"3.1.0","webhooks":{"` + p + `.deep":{"post":{"requestBody":{"content":{"application/json":{"schema":` +
		strings.Repeat(`{"properties":{"a":`, 2500) + `{}` + strings.Repeat(`}}`, 2500) + `}}}}}}}`
	for _, dry := range []string{"?dry_run=true", ""} {
		var res importResult
		if n := heapAllocated(func() {
			res = must[importResult](e, 200, "POST", "/event-types/import"+dry, adminToken, deepDoc)
		}); n > 20*mib {
			t.Errorf("import%s of a document 2,500 deep allocated %d MiB", dry, n/mib)
		}
		if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "nested more than 128 levels deep") || len(res.Created) != 0 {
			t.Errorf("import%s of a document 2,500 deep: %+v", dry, res)
		}
	}

	// 7 KB of YAML whose aliases expand to 6.5 MB.
	var yaml strings.Builder
	yaml.WriteString("openapi: 3.1.0\ncomponents:\n  x:\n    a0: &a0 [" + strings.TrimSuffix(strings.Repeat(`"lollollollol", `, 9), ", ") + "]\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&yaml, "    a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	fmt.Fprintf(&yaml, "webhooks:\n  %s.bomb:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema: {x: *a5}\n", p)
	yaml.WriteString(strings.Repeat("# padding to the issue's 7 KB\n", 200))
	var res importResult
	if n := heapAllocated(func() {
		res = must[importResult](e, 200, "POST", "/event-types/import", adminToken, yaml.String())
	}); n > 20*mib {
		t.Errorf("importing %d KB of aliases allocated %d MiB", yaml.Len()>>10, n/mib)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "expands to more than 64 KiB") {
		t.Errorf("import of an alias bomb: %+v", res)
	}
	wantError(t, "the bomb's type", e.call("GET", "/event-types/"+p+".bomb", adminToken, nil), "NOT_FOUND")
}
