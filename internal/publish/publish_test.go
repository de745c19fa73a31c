package publish_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestPublishFansOutToMatchingSubscriptionsOnly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	types := func(ts ...string) subscriptions.Input { return subscriptions.Input{EventTypes: &ts} }
	all, _ := e.subscribe("http://127.0.0.1:1/all", types())
	created, _ := e.subscribe("http://127.0.0.1:1/created", types("order.created", "order.paid"))
	_, _ = e.subscribe("http://127.0.0.1:1/paid", types("order.paid"))
	paused, _ := e.subscribe("http://127.0.0.1:1/paused", types("order.created"))
	disabled, _ := e.subscribe("http://127.0.0.1:1/disabled", types())
	deleted, _ := e.subscribe("http://127.0.0.1:1/deleted", types())
	if _, err := e.subs.Pause(e.ctx, e.tenant, paused.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, "UPDATE subscriptions SET state = 'disabled' WHERE id = $1", disabled.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.subs.Delete(e.ctx, e.tenant, deleted.ID); err != nil {
		t.Fatal(err)
	}
	// Another tenant's catch-all subscription must not get this tenant's events.
	other := setupOtherTenant(t, e)
	other.subscribe("http://127.0.0.1:1/other", types())

	p := e.publish("order.created", `{"order":1}`)
	got := map[string]string{}
	for _, d := range p.Deliveries {
		got[d.SubscriptionID] = d.State
	}
	want := map[string]string{all.ID.String(): "pending", created.ID.String(): "pending", paused.ID.String(): "pending"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("deliveries by subscription = %v, want %v", got, want)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE event_id = $1", p.ID); n != 3 {
		t.Errorf("stored %d deliveries, want 3", n)
	}

	p = e.publish("user.deleted", `{}`)
	if len(p.Deliveries) != 1 || p.Deliveries[0].SubscriptionID != all.ID.String() {
		t.Errorf("user.deleted went to %+v, want only the catch-all subscription", p.Deliveries)
	}
}

// setupOtherTenant returns an env sharing e's database and clock, for a second tenant.
func setupOtherTenant(t *testing.T, e *env) *env {
	o := *e
	var id string
	if err := e.pool.QueryRow(e.ctx, "INSERT INTO tenants (name) VALUES ('other') RETURNING id::text").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := o.tenant.UnmarshalText([]byte(id)); err != nil {
		t.Fatal(err)
	}
	return &o
}

func TestPublishIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	e.subscribe("http://127.0.0.1:1/b", subscriptions.Input{})
	in := publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(`{"n":1}`), IdempotencyKey: "key-1"}
	first, err := e.pub.Publish(e.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(1)
	again, err := e.pub.Publish(e.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, again) {
		t.Errorf("same key answered\n%+v\nthen\n%+v", first, again)
	}
	// Whitespace is not a different request.
	in.Payload = json.RawMessage(" { \"n\" : 1 } ")
	if again, err = e.pub.Publish(e.ctx, in); err != nil || again.ID != first.ID {
		t.Errorf("same payload with other whitespace: %v, %v", again.ID, err)
	}
	if n := e.count("SELECT count(*) FROM events"); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries"); n != 2 {
		t.Errorf("%d deliveries stored, want 2", n)
	}

	for name, change := range map[string]func(*publish.PublishInput){
		"other payload":    func(in *publish.PublishInput) { in.Payload = json.RawMessage(`{"n":2}`) },
		"other event type": func(in *publish.PublishInput) { in.EventType = "order.paid" },
	} {
		in2 := in
		change(&in2)
		_, err := e.pub.Publish(e.ctx, in2)
		if fe := wantFault(t, err, fault.InvalidRequest); !strings.Contains(fe.Message, "Idempotency-Key") {
			t.Errorf("%s: message %q does not name the key", name, fe.Message)
		}
	}

	// The same key from another tenant is another request.
	other := setupOtherTenant(t, e)
	in.TenantID = other.tenant
	if p, err := e.pub.Publish(e.ctx, in); err != nil || p.ID == first.ID {
		t.Errorf("other tenant, same key: %v, %v", p.ID, err)
	}

	// Concurrent publishes with one new key store one event and all get its answer.
	in.TenantID, in.IdempotencyKey = e.tenant, "key-concurrent"
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			p, err := e.pub.Publish(e.ctx, in)
			ids[i], errs[i] = p.ID, err
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("concurrent publish %d: id %s, err %v; first id %s", i, ids[i], errs[i], ids[0])
		}
	}
	if n := e.count("SELECT count(*) FROM events WHERE idempotency_key = 'key-concurrent'"); n != 1 {
		t.Errorf("concurrent publishes stored %d events, want 1", n)
	}
}

func TestPublishRejectsInvalidInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{})
	cases := []struct{ eventType, payload string }{
		{"", `{}`}, {" order", `{}`}, {"order created", `{}`}, {"-order", `{}`}, {".x", `{}`},
		{strings.Repeat("a", 129), `{}`}, {"order\n", `{}`}, {"ordér", `{}`},
		{"order.created", ``}, {"order.created", `[]`}, {"order.created", `[{"a":1}]`}, {"order.created", `"s"`},
		{"order.created", `1`}, {"order.created", `null`}, {"order.created", `true`}, {"order.created", `{`},
		{"order.created", `{"a":1} {"b":2}`}, {"order.created", `{"a":}`},
		{"order.created", "{\"a\":\"\xff\xfe\"}"}, {"order.created", "{\"\xc3\":1}"}, // invalid UTF-8 inside strings
	}
	for _, c := range cases {
		_, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: c.eventType, Payload: json.RawMessage(c.payload)})
		if fe := fault.As(err); fe == nil || fe.Code != fault.InvalidRequest {
			t.Errorf("Publish(%q, %q) = %v, want INVALID_REQUEST", c.eventType, c.payload, err)
		}
	}
	_, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "a", Payload: json.RawMessage(`{}`),
		IdempotencyKey: strings.Repeat("k", 256)})
	wantFault(t, err, fault.InvalidRequest)
	if n := e.count("SELECT count(*) FROM events"); n != 0 {
		t.Errorf("invalid publishes stored %d events", n)
	}
}

// Publishes that arrive together are stored by one statement: each gets its own event and fan-out (by
// tenant, type and only-subscription), a key reused within the batch stores nothing the second time, and
// one publish the database refuses (its tenant is gone) fails alone while the rest are stored.
func TestPublishBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	types := func(ts ...string) subscriptions.Input { return subscriptions.Input{EventTypes: &ts} }
	all, _ := e.subscribe("http://127.0.0.1:1/all", types())
	created, _ := e.subscribe("http://127.0.0.1:1/created", types("order.created"))
	other := setupOtherTenant(t, e)
	otherSub, _ := other.subscribe("http://127.0.0.1:1/other", types())
	in := func(tenant uuid.UUID, typ, key string) publish.PublishInput {
		return publish.PublishInput{TenantID: tenant, EventType: typ, Payload: json.RawMessage(`{"n":1}`), IdempotencyKey: key}
	}
	only := in(e.tenant, "order.created", "")
	only.OnlySubscription = &created.ID
	notMine := in(e.tenant, "order.created", "") // another tenant's subscription matches nothing
	notMine.OnlySubscription = &otherSub.ID
	test := in(e.tenant, "hookline.test", "") // to one subscription whatever its types, and to no other
	test.OnlySubscription = &created.ID

	got := e.pub.PublishTogether(
		in(e.tenant, "order.created", "k1"),
		in(other.tenant, "order.created", "k1"), // the same key in another tenant is another request
		in(e.tenant, "order.paid", ""),
		in(e.tenant, "order.created", "k1"), // reused within the batch
		only,
		notMine,
		test,
	)
	want := []struct {
		stored bool
		subs   []uuid.UUID
	}{
		{true, []uuid.UUID{all.ID, created.ID}},
		{true, []uuid.UUID{otherSub.ID}},
		{true, []uuid.UUID{all.ID}},
		{false, nil},
		{true, []uuid.UUID{created.ID}},
		{true, nil},
		{true, []uuid.UUID{created.ID}},
	}
	for i, w := range want {
		if got[i].Err != nil || got[i].Stored != w.stored || !reflect.DeepEqual(got[i].Deliveries, w.subs) {
			t.Errorf("publish %d: stored %v, deliveries %v, err %v; want stored %v, deliveries %v", i, got[i].Stored, got[i].Deliveries, got[i].Err, w.stored, w.subs)
		}
	}
	if n := e.count("SELECT count(*) FROM events"); n != 6 {
		t.Errorf("%d events stored, want 6", n)
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries"); n != 6 {
		t.Errorf("%d deliveries stored, want 6", n)
	}
	// The second use of k1 answers as the first did, through Publish.
	if p, err := e.pub.Publish(e.ctx, in(e.tenant, "order.created", "k1")); err != nil || p.ID != got[0].EventID.String() || len(p.Deliveries) != 2 {
		t.Errorf("k1 again: %+v, %v", p, err)
	}

	gone := uuid.Must(uuid.NewV7())
	got = e.pub.PublishTogether(in(e.tenant, "order.paid", ""), in(gone, "order.paid", ""), in(e.tenant, "order.paid", "k2"))
	if got[0].Err != nil || !got[0].Stored || got[2].Err != nil || !got[2].Stored {
		t.Errorf("the good publishes of a batch with a bad one: %+v, %+v", got[0], got[2])
	}
	if got[1].Err == nil {
		t.Errorf("a publish for a tenant that does not exist was stored")
	}
	if n := e.count("SELECT count(*) FROM events"); n != 8 {
		t.Errorf("%d events stored, want 8", n)
	}
}

// A subscription's "<prefix>.*" takes every type that starts with "<prefix>." (and no other), alone or
// beside exact types, deeper patterns and other tenants' subscriptions alike, through a lone publish and
// through a batch.
func TestPublishFansOutToPrefixPatterns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	types := func(ts ...string) subscriptions.Input { return subscriptions.Input{EventTypes: &ts} }
	all, _ := e.subscribe("http://127.0.0.1:1/all", types())
	invoices, _ := e.subscribe("http://127.0.0.1:1/invoices", types("invoice.*"))
	mixed, _ := e.subscribe("http://127.0.0.1:1/mixed", types("invoice.paid", "customer.*"))
	created, _ := e.subscribe("http://127.0.0.1:1/created", types("invoice.created"))
	lines, _ := e.subscribe("http://127.0.0.1:1/lines", types("invoice.line.*", "other.thing"))
	other := setupOtherTenant(t, e)
	other.subscribe("http://127.0.0.1:1/other", types("invoice.*"))
	want := map[string][]uuid.UUID{ // by event type: the subscriptions it goes to, in creation order
		"invoice.paid":       {all.ID, invoices.ID, mixed.ID},
		"invoice.created":    {all.ID, invoices.ID, created.ID},
		"invoicex.paid":      {all.ID},
		"customer.created":   {all.ID, mixed.ID},
		"invoice.line.added": {all.ID, invoices.ID, lines.ID},
		"invoice":            {all.ID},
		"line.added":         {all.ID},
	}
	order := []string{"invoice.paid", "invoice.created", "invoicex.paid", "customer.created", "invoice.line.added", "invoice", "line.added"}

	for _, typ := range order {
		p := e.publish(typ, `{}`)
		var got []uuid.UUID
		for _, d := range p.Deliveries {
			got = append(got, uuid.MustParse(d.SubscriptionID))
		}
		if !reflect.DeepEqual(got, want[typ]) {
			t.Errorf("publish %s went to %v, want %v", typ, got, want[typ])
		}
	}

	var batch []publish.PublishInput
	for _, typ := range order {
		batch = append(batch, publish.PublishInput{TenantID: e.tenant, EventType: typ, Payload: json.RawMessage(`{}`)})
	}
	for i, got := range e.pub.PublishTogether(batch...) {
		if got.Err != nil || !got.Stored || !reflect.DeepEqual(got.Deliveries, want[order[i]]) {
			t.Errorf("batched publish %s: deliveries %v, err %v; want %v", order[i], got.Deliveries, got.Err, want[order[i]])
		}
	}
	if n := e.count("SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1", other.tenant); n != 0 {
		t.Errorf("another tenant's invoice.* subscription got %d deliveries", n)
	}
}

// The fan-out finds the tenant's subscriptions through subscriptions_tenant_idx, patterns or not: a
// tenant's publish never reads the other tenants' subscriptions, and each subscription row costs one array
// overlap (the patterns an event type matches are worked out once per event, not per subscription).
func TestPublishFanOutUsesTenantIndex(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO tenants (name) SELECT 't' || g FROM generate_series(1, 2000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO subscriptions (tenant_id, url, event_types)
		SELECT t.id, 'https://example.com/' || g, ARRAY['invoice.*', 'customer.created']
		FROM tenants t CROSS JOIN generate_series(1, 5) g WHERE t.id <> $1`, e.tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, "ANALYZE tenants, subscriptions"); err != nil {
		t.Fatal(err)
	}
	e.subscribe("http://127.0.0.1:1/invoices", subscriptions.Input{EventTypes: &[]string{"invoice.*"}})

	tr := testdb.RecordStatements("PublishEvents")
	cfg := e.pool.Config()
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	pub := publish.NewPublisher(pool, e.policy, e.clock.Now)
	p, err := pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "invoice.line.added", Payload: json.RawMessage(`{}`)})
	if err != nil || len(p.Deliveries) != 1 {
		t.Fatalf("publish: %+v, %v", p, err)
	}
	sql, args := tr.Last(t, "PublishEvents")
	conn, err := pool.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	text := testdb.Explain(t, conn.Conn(), sql, args...)
	if !strings.Contains(text, "subscriptions_tenant_idx") || strings.Contains(text, "Seq Scan on subscriptions") ||
		!regexp.MustCompile(`event_types && i(_\d+)?\.wanted_by`).MatchString(text) {
		t.Errorf("the fan-out does not find the tenant's subscriptions by index:\n%s", text)
	}
	t.Logf("PublishEvents plan:\n%s", text)
}

// CheckEvent is asked about every publish before anything is stored: a refused event fails alone, even
// when it arrives among concurrent publishes that the publisher stores in one batch, and stores nothing;
// internal events (operator notifications) are not asked about.
func TestCheckEventRefusesBeforeTheBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/all", subscriptions.Input{})
	var mu sync.Mutex
	asked := map[string]string{}
	e.pub.CheckEvent = func(eventType string, payload []byte) error {
		mu.Lock()
		asked[eventType] = string(payload)
		mu.Unlock()
		if strings.Contains(string(payload), `"bad":true`) {
			return fault.Invalid("refused by the check")
		}
		return nil
	}
	before := e.count("SELECT count(*) FROM events WHERE tenant_id = $1", e.tenant.String())
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() {
			payload := fmt.Sprintf(`{"n": %d, "bad": %t}`, i, i%2 == 1)
			_, errs[i] = e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: fmt.Sprintf("batch.e%d", i), Payload: json.RawMessage(payload)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 1 && !fault.Is(err, fault.InvalidRequest) {
			t.Errorf("event %d (bad): %v, want INVALID_REQUEST", i, err)
		}
		if i%2 == 0 && err != nil {
			t.Errorf("event %d (good) failed with its batch: %v", i, err)
		}
	}
	if n := e.count("SELECT count(*) FROM events WHERE tenant_id = $1", e.tenant.String()); n-before != 20 {
		t.Errorf("stored %d events, want the 20 good ones", n-before)
	}
	if got := asked["batch.e3"]; got != `{"n":3,"bad":true}` {
		t.Errorf("the check got %q, want the compacted payload", got)
	}
	if _, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "subscription.failing",
		Payload: json.RawMessage(`{"bad": true}`), Internal: true}); err != nil {
		t.Errorf("an internal event was checked: %v", err)
	}
}

// stubLocal stands for a process's own worker (Publisher.Local): it counts wakes.
type stubLocal struct {
	wakes  atomic.Int32
	origin string
}

func (l *stubLocal) Wake()          { l.wakes.Add(1) }
func (l *stubLocal) Origin() string { return l.origin }

// A publish wakes this process's worker (Publisher.Local) when one of its deliveries can be sent now, and
// not when every one waits on a paused subscription: a claim then would find nothing.
func TestPublishWakesTheLocalWorkerOnlyForSendableDeliveries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	paused, _ := e.subscribe("http://127.0.0.1:1/paused", subscriptions.Input{EventTypes: &[]string{"wake.paused", "wake.both"}})
	if _, err := e.subs.Pause(e.ctx, e.tenant, paused.ID); err != nil {
		t.Fatal(err)
	}
	e.subscribe("http://127.0.0.1:1/active", subscriptions.Input{EventTypes: &[]string{"wake.active", "wake.both"}})
	local := &stubLocal{}
	e.pub.Local = local
	wakes := &local.wakes
	for _, c := range []struct {
		eventType string
		wake      bool
	}{{"wake.paused", false}, {"wake.active", true}, {"wake.both", true}, {"wake.nobody", false}} {
		before := wakes.Load()
		p := e.publish(c.eventType, `{}`)
		if woke := wakes.Load() > before; woke != c.wake {
			t.Errorf("%s (%d deliveries): woke the worker %t, want %t", c.eventType, len(p.Deliveries), woke, c.wake)
		}
	}
}
