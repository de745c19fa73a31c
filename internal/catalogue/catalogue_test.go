package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
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

// connect is a pool on the package's database, which the package's parallel tests share: each names its
// types with uniq.
func connect(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return connectTo(t, dbURL)
}

// ownDatabase is the URL of a database of the test's own (a copy of the migrated template), for a test
// that counts what the whole catalogue does (its reloads, its compiles) and so cannot share it with the
// package's parallel tests. It is dropped when the test ends.
func ownDatabase(t *testing.T) string {
	t.Helper()
	u, drop, err := testdb.Create(context.Background(), "catalogue")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return u
}

func connectTo(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
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

// eventually waits until ok holds, checking every 10 ms, and fails the test after 5 s.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !ok() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}

// start starts s's poll and stops it when the test ends.
func start(t *testing.T, s *Service) {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

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
	t.Parallel()
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

	refusedCreatesChangeNothing(t, s, name)

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

	archiveAndBringBack(t, s, name)
}

// refusedCreatesChangeNothing: a create with a bad input (name is a stored type's) is refused and stores
// nothing; an example its schema refuses is refused with details saying where.
func refusedCreatesChangeNothing(t *testing.T, s *Service, name string) {
	t.Helper()
	ctx := context.Background()
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
	_, err := s.Create(ctx, Input{Name: name + "x", Schema: json.RawMessage(orderSchema), Example: json.RawMessage(`{"id": 1}`)})
	if fe := fault.As(err); fe == nil || len(fe.Details) == 0 || fe.Details[0].Path == "" && len(fe.Details) == 1 {
		t.Errorf("example mismatch without details: %#v", err)
	}
}

// archiveAndBringBack: an archived type is out of the list, still readable; archiving twice is fine,
// an unknown type is NOT_FOUND; creating it again brings it back.
func archiveAndBringBack(t *testing.T, s *Service, name string) {
	t.Helper()
	ctx := context.Background()
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
	ty, err := s.Create(ctx, Input{Name: name, Description: ptr("Back.")})
	if err != nil || ty.Archived || ty.Description != "Back." || ty.Group != DefaultGroup(name) {
		t.Errorf("create over archived: %+v %v", ty, err)
	}
}

func TestCheckEventAndKnown(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	ctx := context.Background()
	u := ownDatabase(t) // the poll is seen not to reload without a change: no other test's changes
	a := New(connectTo(t, u), Options{PollInterval: 20 * time.Millisecond})
	b := New(connectTo(t, u), Options{PollInterval: 20 * time.Millisecond, RegisteredOnly: true})
	start(t, a)
	start(t, b)
	name := uniq(t, "moved")
	bad := []byte(`{"id": 5, "total": 1}`)
	if err := b.CheckEvent(name, bad); err == nil {
		t.Fatal("b accepts an unregistered type in registered mode")
	}
	began := time.Now()
	if _, err := a.Create(ctx, Input{Name: name, Schema: json.RawMessage(orderSchema)}); err != nil {
		t.Fatal(err)
	}
	// a made the change: in force there at once.
	if err := a.CheckEvent(name, bad); err == nil {
		t.Error("a does not enforce its own change at once")
	}
	eventually(t, "b enforces the new schema", func() bool {
		err := b.CheckEvent(name, bad)
		return err != nil && strings.Contains(err.Error(), "does not satisfy")
	})
	t.Logf("b saw the new type after %s", time.Since(began).Round(time.Millisecond))
	if _, err := a.Update(ctx, name, Input{Schema: json.RawMessage(`null`)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b drops the schema", func() bool { return b.CheckEvent(name, bad) == nil })
	if err := a.Archive(ctx, name); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b refuses the archived type", func() bool { return b.CheckEvent(name, bad) != nil && !b.Known(name) })

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

// A group is one whatever its capitalisation, and is spelled one way: a type whose group is its default
// takes the spelling the group has, a change naming the group gives it to all of its types, and types
// stored in another spelling (before, or by hand) are listed and read in the group's.
func TestGroupsAreOneWhateverTheirCase(t *testing.T) {
	t.Parallel()
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
