package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
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

// The catalogue's limits apply to what is stored too: a schema stored before them (by hand, or by an
// older release) is not compiled at every change, and publishes of its type are accepted unchecked (as
// for a schema that no longer compiles) rather than costing seconds each.
//
// Not parallel: it measures allocations.
func TestStoredSchemasPastTheLimitsAreNotCompiled(t *testing.T) {
	ctx := context.Background()
	pool := connect(t)
	s := New(pool, Options{})
	deep, chain := uniq(t, "deep"), uniq(t, "chain")
	for name, schema := range map[string]string{deep: nestedProperties(1500), chain: anyOfChain(24)} {
		if _, err := pool.Exec(ctx, `INSERT INTO event_types (name, description, group_name, schema, created_at, updated_at) VALUES ($1, '', 'x', $2, now(), now())`, name, schema); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE event_type_catalogue SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if n := allocated(func() {
		if err := s.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}); n > 20*mib {
		t.Errorf("loading the catalogue allocated %d MiB", n/mib)
	}
	if n := allocated(func() {
		if err := s.CheckEvent(chain, []byte(`{"x":"not an integer"}`)); err != nil {
			t.Errorf("a publish of the chain type: %v", err)
		}
	}); n > mib {
		t.Errorf("a publish of the chain type allocated %d KiB", n>>10)
	}
}

// A change to the catalogue compiles the schema it changed, not every stored one, in the process that
// made it and in every other that reloads.
func TestAChangeCompilesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := connectTo(t, ownDatabase(t)) // counts compiles: no other test's changes
	s, other := New(pool, Options{}), New(pool, Options{})
	for i := range 3 {
		if _, err := s.Create(ctx, Input{Name: uniq(t, fmt.Sprint("t", i)), Schema: json.RawMessage(orderSchema)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Load(ctx); err != nil {
		t.Fatal(err)
	}
	before, otherBefore := s.compiles.Load(), other.compiles.Load()
	if _, err := s.Update(ctx, uniq(t, "t1"), Input{Schema: json.RawMessage(`{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, Input{Name: uniq(t, "unrelated")}); err != nil {
		t.Fatal(err)
	}
	if err := other.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.compiles.Load() - before; n != 1 {
		t.Errorf("the changing process compiled %d schemas for one changed schema", n)
	}
	if n := other.compiles.Load() - otherBefore; n != 1 {
		t.Errorf("another process compiled %d schemas for one changed schema", n)
	}
	// The change holds.
	if err := other.CheckEvent(uniq(t, "t1"), []byte(`{"total":"anything"}`)); err != nil {
		t.Errorf("the changed schema is not the one checked: %v", err)
	}
	if err := other.CheckEvent(uniq(t, "t0"), []byte(`{"total":"anything"}`)); err == nil {
		t.Error("an unchanged schema is no longer checked")
	}
}
