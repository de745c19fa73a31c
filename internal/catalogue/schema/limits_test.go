package schema

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/fault"
)

// allocated is what f allocates, in bytes (the heap's total, so it counts what was freed again too). It
// counts every goroutine's allocations: the tests that measure with it are not parallel (a parallel test
// waits until the package's serial ones have run, so none allocates meanwhile).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const mib = 1 << 20

// recursiveSchema is a tree of nodes, each with an optional child; threadSchema a comment thread, each
// comment with its replies.
const (
	recursiveSchema = `{"$defs":{"node":{"type":"object","properties":{"child":{"$ref":"#/$defs/node"},"v":{"type":"integer"}}}},"$ref":"#/$defs/node"}`
	threadSchema    = `{"type":"object","properties":{"text":{"type":"string"},"replies":{"type":"array","items":{"$ref":"#"}}}}`
)

// deepNode is a node payload n deep whose innermost v is a string, not the integer the schema wants.
func deepNode(n int) string {
	return strings.Repeat(`{"child":`, n) + `{"v":"x"}` + strings.Repeat(`}`, n)
}

// anyOfChain is a schema of n definitions, each a choice between two references to the next: checking a
// value against it evaluates 2ⁿ schemas.
func anyOfChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"integer"}},"$ref":"#/$defs/a0"}`, n)
	return b.String()
}

// nestedProperties is a schema whose properties nest n deep.
func nestedProperties(n int) string {
	return `{"type":"object"` + strings.Repeat(`,"properties":{"a":{"type":"object"`, n) + strings.Repeat(`}}`, n) + `}`
}

// A payload nested past MaxPayloadDepth is refused before it is parsed, whatever the schema: the one the
// issue found (9,990 deep, 100 KB, against a recursive schema) cost 0.9 GiB to refuse, as the validator
// clones the location of every error (n² strings).
func TestDeepPayloadsAreRefusedBeforeTheyAreChecked(t *testing.T) {
	sch, err := Compile([]byte(recursiveSchema))
	if err != nil {
		t.Fatal(err)
	}
	deep := []byte(deepNode(9990))
	var errCheck error
	if n := allocated(func() { _, errCheck = sch.Check(deep, "payload") }); n > mib {
		t.Errorf("refusing a payload 9,990 deep allocated %d KiB", n>>10)
	}
	fe := wantCode(t, "9,990 deep", errCheck, fault.InvalidRequest)
	if !strings.Contains(fe.Message, "nested more than 64 levels deep") {
		t.Errorf("message %q does not name the limit", fe.Message)
	}
	// At the limit, a payload is checked, and its problem is found where it is.
	d, err := sch.Check([]byte(deepNode(MaxPayloadDepth-1)), "payload")
	if err != nil {
		t.Fatalf("a payload %d deep: %v", MaxPayloadDepth, err)
	}
	if want := strings.Repeat("/child", MaxPayloadDepth-1) + "/v"; len(d) != 1 || d[0].Path != want {
		t.Errorf("details %+v, want one at %s", d, want)
	}
	if _, err := sch.Check([]byte(deepNode(MaxPayloadDepth)), "payload"); err == nil {
		t.Errorf("a payload %d deep was checked", MaxPayloadDepth+1)
	}
}

// A refusal's details stay small whatever the payload: a path too long names the deepest ancestor that
// fits, a message quoting a long value is cut.
func TestDetailsAreBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 600)
	sch, err := Compile([]byte(`{"type":"object","properties":{"s":{"pattern":"^a+$"},"n":{"type":"object","additionalProperties":{"type":"object","additionalProperties":{"type":"integer"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	payload := fmt.Sprintf(`{"s":%q,"n":{%q:{"x":"y"}}}`, strings.Repeat("b", 100_000), long)
	d, err := sch.Check([]byte(payload), "payload")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, x := range d {
		got[x.Path] = x.Message
		if len(x.Path) > maxDetailPath || len(x.Message) > maxDetailMessage+len("…") {
			t.Errorf("detail of %d + %d bytes: %.80s…", len(x.Path), len(x.Message), x.Path+" "+x.Message)
		}
	}
	if m, ok := got["/s"]; !ok || len(m) > 200 || !strings.Contains(m, "…") {
		t.Errorf("the pattern's problem at /s: %q (want the string cut)", m)
	}
	if m, ok := got["/n"]; !ok || !strings.HasPrefix(m, "below this point") {
		t.Errorf("the problem 600 bytes deep in a key: %v", got)
	}
}

// A property additionalProperties refuses is named: the problem is at /extra, not at its object.
func TestAnExtraPropertyIsNamed(t *testing.T) {
	t.Parallel()
	sch, err := Compile([]byte(`{"type":"object","properties":{"id":{"type":"string"},"a":{"type":"object","additionalProperties":false}},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	d := mustCheck(t, sch, []byte(`{"id":"x","extra":1,"a":{"b~/":2}}`))
	var paths []string
	for _, x := range d {
		paths = append(paths, x.Path)
		if !strings.Contains(x.Message, "not allowed") {
			t.Errorf("%s: %q", x.Path, x.Message)
		}
	}
	if strings.Join(paths, " ") != "/a/b~0~1 /extra" {
		t.Errorf("paths %v, want /a/b~0~1 /extra", paths)
	}
}

// Numbers are compared exactly, as fractions: 1e99999999 would take the validator minutes (and 1e9999999
// made it dereference nil); such numbers are refused, in payloads and in schemas.
func TestHugeNumbersAreRefused(t *testing.T) {
	t.Parallel()
	sch, err := Compile([]byte(`{"properties":{"v":{"type":"integer","minimum":0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, num := range []string{"1e9999999", "1E+401", "-2.5e-401", "1" + strings.Repeat("0", MaxNumberLength)} {
		_, err := sch.Check([]byte(`{"v":`+num+`}`), "payload")
		if fe := wantCode(t, num, err, fault.InvalidRequest); !strings.Contains(fe.Message, "number") {
			t.Errorf("%s: %q", num, fe.Message)
		}
	}
	if d := mustCheck(t, sch, []byte(`{"v":1e300}`)); len(d) != 0 {
		t.Errorf("1e300 refused: %v", d)
	}
	_, err = Compile([]byte(`{"properties":{"v":{"maximum":1e99999999}}}`))
	wantCode(t, "a schema's huge number", err, fault.InvalidRequest)
}

// Schemas whose cost is out of proportion to their size are refused when they are registered, each
// refusal naming its limit: the anyOf chains (2²⁰ and 2²⁴ evaluations of every value), properties
// nested 1,500 deep (14 s to compile), a $ref that comes back to itself, a pattern of a few bytes that
// compiles to megabytes, and many small subschemas (the compiler's work grows with their square).
func TestCostlySchemasAreRefused(t *testing.T) {
	var chains []string
	for i := range 20 {
		chains = append(chains, fmt.Sprintf(`"c%d":%s`, i, nestedProperties(62)))
	}
	for _, c := range []struct{ what, schema, want string }{
		{"anyOf chain 20", anyOfChain(20), "applies more than 1000 subschemas to one value"},
		{"anyOf chain 24", anyOfChain(24), "applies more than 1000 subschemas to one value"},
		{"properties 1,500 deep", nestedProperties(1500), "nested more than 128 levels deep"},
		{"doubling recursion", `{"$defs":{"n":{"type":"object","properties":{"c":{"anyOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}}},"$ref":"#/$defs/n"}`, "a value 9 levels below the payload's top"},
		{"self reference", `{"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"allOf":[{"$ref":"#/$defs/x"}]}}}`, "refers back to itself without going down"},
		{"pattern", `{"pattern":"^(abc|def|ghi){1000}$"}`, "compiles to about"},
		{"deep chains", `{"properties":{` + strings.Join(chains, ",") + `}}`, "too large to compile"},
		{"bytes", `{"description":"` + strings.Repeat("x", MaxBytes) + `"}`, "at most 64 KiB"},
	} {
		var err error
		if n := allocated(func() { _, err = Compile([]byte(c.schema)) }); n > 10*mib {
			t.Errorf("%s: refusing it allocated %d MiB", c.what, n/mib)
		}
		fe := wantCode(t, c.what, err, fault.InvalidRequest)
		if !strings.Contains(fe.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", c.what, fe.Message, c.want)
		}
		if len(fe.Message) > 600 {
			t.Errorf("%s: a message of %d bytes", c.what, len(fe.Message))
		}
	}
	// Recursive schemas as such are fine: a value meets each of their subschemas once.
	for _, ok := range []string{recursiveSchema, threadSchema, anyOfChain(8)[:0] + `{"anyOf":[{"type":"string"},{"type":"integer"}]}`} {
		if _, err := Compile([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// atLimit is a schema grown from head + parts + tail to just under the catalogue's size limits.
func atLimit(t *testing.T, head, tail string, part func(i int) string) string {
	t.Helper()
	var parts []string
	for i := 0; ; i++ {
		next := append(parts, part(i))
		s := head + strings.Join(next, ",") + tail
		sh, err := scanJSON([]byte(s), MaxDepth, "schema")
		if err != nil {
			t.Fatal(err)
		}
		if sh.weight > MaxWeight-50 || len(s) > MaxBytes {
			return head + strings.Join(parts, ",") + tail
		}
		parts = next
	}
}

// No schema the catalogue accepts makes a catalogue change (compiling it), a page (listing its fields) or
// a publish (checking a payload against it) cost more than 10 MiB: the largest schemas of each shape, and
// the costliest payloads the limits let through, are measured.
func TestWhatTheCatalogueAcceptsIsCheap(t *testing.T) {
	deepHead := nestedProperties(62)
	deepHead = deepHead[:len(deepHead)-len(strings.Repeat(`}}`, 62))-1] + `,"properties":{`
	deepTail := `}` + strings.Repeat(`}}`, 62) + `}`
	mid := nestedProperties(16)
	mid = mid[:len(mid)-len(strings.Repeat(`}}`, 16))-1] + `,"properties":{`
	midTail := `}` + strings.Repeat(`}}`, 16) + `}`
	ints := func(n int) string { return `{"v":[` + strings.Repeat(`0,`, n) + `0]}` }
	for _, c := range []struct {
		what   string
		schema string
		// payload makes a payload of about n values for the schema; the largest one the limits let
		// through is measured.
		payload func(n int) string
	}{
		{"empty subschemas", atLimit(t, `{"properties":{`, `}}`, func(i int) string { return fmt.Sprintf(`"%d":{}`, i) }), ints},
		{"string properties", atLimit(t, `{"properties":{`, `}}`, func(i int) string { return fmt.Sprintf(`"p%d":{"type":"string","maxLength":20}`, i) }), ints},
		{"references", atLimit(t, `{"$defs":{"x":{"type":"integer"}},"properties":{"v":{"items":{"$ref":"#/$defs/x"}},`, `}}`, func(i int) string { return fmt.Sprintf(`"%d":{"$ref":"#/$defs/x"}`, i) }), ints},
		{"deep, then wide", atLimit(t, deepHead, deepTail, func(i int) string { return fmt.Sprintf(`"%d":{}`, i) }), ints},
		{"16 deep, then wide", atLimit(t, mid, midTail, func(i int) string { return fmt.Sprintf(`"%d":{"type":"integer"}`, i) }), ints},
		{"long enum", atLimit(t, `{"properties":{"v":{"items":{"enum":[`, `]}}}}`, func(i int) string { return fmt.Sprintf(`"%d"`, i) }), ints},
		{"choices", `{"properties":{"v":{"items":{"anyOf":[{"type":"string"},{"type":"boolean"},{"type":"null"},{"type":"array"}]}}}}`, ints},
		{"numbers against bounds", `{"properties":{"v":{"items":{"minimum":1,"multipleOf":3}}}}`, ints},
		{"patterns", `{"properties":{"v":{"items":{"pattern":"^(a|b|c|d|e|f|g|h){1,50}$"}}}}`, func(n int) string { return `{"v":[` + strings.Repeat(`"x",`, n) + `"x"]}` }},
		{"comment thread", threadSchema, func(n int) string {
			return strings.Repeat(`{"replies":[`, 30) + `{"replies":[` + strings.Repeat(`{"text":1},`, n) + `{"text":1}]}` + strings.Repeat(`]}`, 30)
		}},
		{"recursion", recursiveSchema, func(n int) string { return deepNode(min(n, MaxPayloadDepth-1)) }},
	} {
		var sch *Schema
		var err error
		if n := allocated(func() { sch, err = Compile([]byte(c.schema)) }); n > 10*mib {
			t.Errorf("%s: compiling it allocated %.1f MiB", c.what, float64(n)/mib)
		}
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if n := allocated(func() { _, _, err = Fields(json.RawMessage(c.schema)) }); n > 10*mib || err != nil {
			t.Errorf("%s: listing its fields allocated %.1f MiB (%v)", c.what, float64(n)/mib, err)
		}
		// The largest payload of this shape the limits let through.
		lo, hi := 0, 200_000
		for lo < hi {
			n := (lo + hi + 1) / 2
			if _, err := sch.Check([]byte(c.payload(n)), "payload"); err == nil {
				lo = n
			} else {
				hi = n - 1
			}
		}
		payload := []byte(c.payload(lo))
		n := allocated(func() { _, err = sch.Check(payload, "payload") })
		if n > 10*mib || err != nil {
			t.Errorf("%s: checking a payload of %d KiB allocated %.1f MiB (%v)", c.what, len(payload)>>10, float64(n)/mib, err)
		}
		t.Logf("%s: a schema of %d KiB; the largest payload let through, %d KiB, allocated %.1f MiB to check", c.what, len(c.schema)>>10, len(payload)>>10, float64(n)/mib)
		// Twice that is refused, at no cost.
		payload = []byte(c.payload(2*lo + 2))
		if n := allocated(func() { _, err = sch.Check(payload, "payload") }); n > 10*mib {
			t.Errorf("%s: refusing a payload of %d KiB allocated %.1f MiB", c.what, len(payload)>>10, float64(n)/mib)
		}
	}
}

// Listing a schema's fields (the catalogue page) follows its $refs and branches within maxFieldSteps: a
// schema stored before the limits (the anyOf chain of 24: 16 s a page) is listed in part, and
// says so.
func TestFieldsOfAStoredCostlySchemaAreBounded(t *testing.T) {
	schema := strings.TrimSuffix(anyOfChain(24), `"$ref":"#/$defs/a0"}`) + `"type":"object","properties":{"a":{"type":"integer"},"b":{"$ref":"#/$defs/a0"}}}`
	var fields []Field
	var complete bool
	var err error
	if n := allocated(func() { fields, complete, err = Fields(json.RawMessage(schema)) }); n > 10*mib {
		t.Errorf("listing the fields allocated %d MiB", n/mib)
	}
	if err != nil || complete || len(fields) == 0 || fields[0].Path != "data.a" {
		t.Errorf("fields %v, complete %v, %v: want the first ones, and complete false", fields, complete, err)
	}
}
