package publish_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
)

// subscribed lists the subscriptions a publish made deliveries for.
func subscribed(p publish.Published) []string {
	out := []string{}
	for _, d := range p.Deliveries {
		out = append(out, d.SubscriptionID)
	}
	slices.Sort(out)
	return out
}

func ids(subs ...subscriptions.Subscription) []string {
	out := []string{}
	for _, s := range subs {
		out = append(out, s.ID.String())
	}
	slices.Sort(out)
	return out
}

// A subscription with a filter gets the events that match it and no other; one without gets every event
// of its types; the type test and the filter both apply.
func TestFiltersChooseWhoGetsAnEvent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	plain, _ := e.subscribe("http://127.0.0.1:1/plain", subscriptions.Input{})
	big, _ := e.subscribe("http://127.0.0.1:1/big", subscriptions.Input{Filter: json.RawMessage(`{"data": {"amount": {"$gte": 100}}}`)})
	eu, _ := e.subscribe("http://127.0.0.1:1/eu", subscriptions.Input{
		EventTypes: &[]string{"invoice.*"}, Filter: json.RawMessage(`{"data": {"country": {"$in": ["DE", "FR"]}}}`)})
	for _, c := range []struct {
		eventType, payload string
		want               []string
	}{
		{"invoice.paid", `{"amount": 150, "country": "US"}`, ids(plain, big)},
		{"invoice.paid", `{"amount": 50, "country": "DE"}`, ids(plain, eu)},
		{"invoice.paid", `{"amount": 500, "country": "FR"}`, ids(plain, big, eu)},
		{"order.created", `{"amount": 500, "country": "FR"}`, ids(plain, big)}, // eu wants invoice.* only
		{"order.created", `{"country": "FR"}`, ids(plain)},
	} {
		if got := subscribed(e.publish(c.eventType, c.payload)); !slices.Equal(got, c.want) {
			t.Errorf("%s %s: delivered to %v, want %v", c.eventType, c.payload, got, c.want)
		}
	}
}

// A process keeps each tenant's filters; a change made anywhere (here: through another service, as
// another process would) is never applied late: the publish after it follows the new filters, also for a
// subscription created after the process read them and for one whose filter was removed.
func TestFiltersChangedElsewhereApplyAtOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	other := subscriptions.NewService(e.pool, e.clock.Now, true) // another process's view
	onlyBig, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{Filter: json.RawMessage(`{"data": {"amount": {"$gte": 100}}}`)})
	small := `{"amount": 5}`
	if got := subscribed(e.publish("order.created", small)); len(got) != 0 { // and the filters are now kept
		t.Fatalf("a small order went to %v", got)
	}
	// A subscription created after the filters were read, whose filter matches.
	smallOnes, _, err := other.Create(e.ctx, e.tenant, subscriptions.Input{URL: ptr("http://127.0.0.1:1/b"),
		Filter: json.RawMessage(`{"data": {"amount": {"$lt": 100}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := subscribed(e.publish("order.created", small)), ids(smallOnes); !slices.Equal(got, want) {
		t.Errorf("after a filtered subscription was added: %v, want %v", got, want)
	}
	// The first one's filter removed: it gets everything.
	if _, err := other.Update(e.ctx, e.tenant, onlyBig.ID, subscriptions.Input{ClearFilter: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := subscribed(e.publish("order.created", small)), ids(onlyBig, smallOnes); !slices.Equal(got, want) {
		t.Errorf("after a filter was removed: %v, want %v", got, want)
	}
	// Its types narrowed to another type: it no longer gets order.created, filtered or not.
	if _, err := other.Update(e.ctx, e.tenant, smallOnes.ID, subscriptions.Input{EventTypes: &[]string{"invoice.paid"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := subscribed(e.publish("order.created", small)), ids(onlyBig); !slices.Equal(got, want) {
		t.Errorf("after a filtered subscription's types changed: %v, want %v", got, want)
	}
	if got, want := subscribed(e.publish("invoice.paid", small)), ids(onlyBig, smallOnes); !slices.Equal(got, want) {
		t.Errorf("the type it now wants: %v, want %v", got, want)
	}
}

// The dashboard's test event goes to its one subscription whatever that subscription's filter says.
func TestTestEventIgnoresTheFilter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	s, _ := e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{Filter: json.RawMessage(`{"data": {"never": true}}`)})
	id := s.ID
	p, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "webhook.test", Payload: json.RawMessage(`{}`), OnlySubscription: &id})
	if err != nil {
		t.Fatal(err)
	}
	if got := subscribed(p); !slices.Equal(got, ids(s)) {
		t.Errorf("test event went to %v", got)
	}
	if got := subscribed(e.publish("order.created", `{}`)); len(got) != 0 {
		t.Errorf("an ordinary event the filter refuses went to %v", got)
	}
}

// A publish in a transaction (the outbox of incident steps) applies filters too, and a tenant that does
// not exist is NOT_FOUND rather than a stored event.
func TestPublishTxAppliesFilters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/a", subscriptions.Input{Filter: json.RawMessage(`{"data": {"x": 1}}`)})
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	for _, c := range []struct {
		payload string
		n       int
	}{{`{"x": 1}`, 1}, {`{"x": 2}`, 0}} {
		p, err := e.pub.PublishTx(e.ctx, tx, publish.PublishInput{TenantID: e.tenant, EventType: "a.b", Payload: json.RawMessage(c.payload)})
		if err != nil || len(p.Deliveries) != c.n {
			t.Errorf("%s: %d deliveries, %v; want %d", c.payload, len(p.Deliveries), err, c.n)
		}
	}
	if _, err := e.pub.Publish(e.ctx, publish.PublishInput{TenantID: uuid.Must(uuid.NewV7()), EventType: "a.b", Payload: json.RawMessage(`{}`)}); err == nil {
		t.Error("a publish for a tenant that does not exist was accepted")
	}
}

func ptr[T any](v T) *T { return &v }
