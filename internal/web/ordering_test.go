package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

// orderReceiver is an endpoint for ordered delivery: it answers 422 (a permanent error: the delivery
// dies at once) to an event whose payload says "refuse": true, 200 to the others, and keeps the payloads'
// "n" in the order they arrived, per ordering key ("key" in the payload).
type orderReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got map[string][]int
}

func newOrderReceiver(t *testing.T) *orderReceiver {
	rc := &orderReceiver{got: map[string][]int{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Data struct {
				Key    string `json:"key"`
				N      int    `json:"n"`
				Refuse bool   `json:"refuse"`
			} `json:"data"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		rc.mu.Lock()
		rc.got[body.Data.Key] = append(rc.got[body.Data.Key], body.Data.N)
		rc.mu.Unlock()
		if body.Data.Refuse {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"error":"order cannot be shipped"}`)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(rc.Close)
	return rc
}

// arrived is the n of each request for key, in the order they arrived.
func (rc *orderReceiver) arrived(key string) []int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got[key])
}

// orderedSubscription adds an ordered subscription to url with onDead.
func (e *env) orderedSubscription(tn tenant, u, description, onDead string) subscriptions.Subscription {
	e.t.Helper()
	ordered, types := true, []string{}
	s, _, err := e.srv.Subscriptions.Create(setupCtx(), tn.ID, subscriptions.Input{
		URL: &u, Description: &description, EventTypes: &types, Ordered: &ordered, OnDead: &onDead,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// publishKeyed publishes an event of key (payload {"key", "n", "refuse"}) to subID only and returns its
// delivery.
func (e *env) publishKeyed(tn tenant, subID uuid.UUID, key string, n int, refuse bool) uuid.UUID {
	e.t.Helper()
	b, _ := json.Marshal(map[string]any{"key": key, "n": n, "refuse": refuse})
	p, err := e.srv.Publisher.Publish(context.Background(), publish.PublishInput{
		TenantID: tn.ID, EventType: "order.updated", Payload: b, OrderingKey: key, OnlySubscription: &subID,
	})
	if err != nil || len(p.Deliveries) != 1 {
		e.t.Fatalf("publish %s #%d: %v, %d deliveries", key, n, err, len(p.Deliveries))
	}
	return uuid.MustParse(p.Deliveries[0].ID)
}

// The endpoint form's Ordering section: a new endpoint starts unordered, skipping; saving "ordered" with
// "block" stores both (and the activity log names them), the edit form shows them, unticking saves
// unordered; an on_dead the form never offers is refused beside the section, nothing saved.
func TestEndpointFormOrdering(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("ordering form")
	c := e.client()
	c.login(tn.Email)

	p := c.get("/subscriptions/new")
	section := one(t, p.Doc, "ordering-section")
	if got := text(section); !strings.Contains(got, "Deliver events with the same ordering key one at a time, in order") ||
		!strings.Contains(got, "Skip it and send the next") || !strings.Contains(got, "Hold the key until it is resent or skipped") {
		t.Errorf("the Ordering section says %q", got)
	}
	if checked(one(t, p.Doc, "ordered")) || !checked(one(t, p.Doc, "on-dead-skip")) || checked(one(t, p.Doc, "on-dead-block")) {
		t.Error("a new endpoint's form does not start unordered, skipping")
	}

	u := e.recv.URL + "/ordered-form/" + uuid.NewString()[:8]
	p = c.post("/subscriptions", url.Values{"url": {u}, "description": {"Orders in order"}, "event_types": {"*"},
		"ordered": {"1"}, "on_dead": {"block"}})
	if p.Status != http.StatusOK || !strings.HasPrefix(p.URL.Path, "/subscriptions/") {
		t.Fatalf("create: %s: %s", p, p.text())
	}
	id := uuid.MustParse(strings.TrimPrefix(p.URL.Path, "/subscriptions/"))
	s, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if err != nil || !s.Ordered || s.OnDead != subscriptions.OnDeadBlock {
		t.Fatalf("stored: %v ordered=%v on_dead=%q, want ordered, block", err, s.Ordered, s.OnDead)
	}
	line := one(t, p.Doc, "ordering-line")
	if got := text(line); !strings.Contains(got, "one at a time, in order") || !strings.Contains(got, "holds its key until it is resent or skipped") {
		t.Errorf("the endpoint page's ordering line %q", got)
	}
	if got := text(one(t, p.Doc, "contract")); !strings.Contains(got, "On this endpoint, events with the same ordering key are sent one at a time") {
		t.Errorf("the contract does not tell the endpoint's ordering: %q", got)
	}

	edit := c.get("/subscriptions/" + id.String() + "/edit")
	if !checked(one(t, edit.Doc, "ordered")) || !checked(one(t, edit.Doc, "on-dead-block")) || checked(one(t, edit.Doc, "on-dead-skip")) {
		t.Error("the edit form does not show ordered, block")
	}

	// A value no form offers: refused beside the section, nothing saved.
	p = c.post("/subscriptions/"+id.String(), url.Values{"url": {u}, "description": {"Orders in order"}, "event_types": {"*"},
		"ordered": {"1"}, "on_dead": {"sometimes"}})
	if p.Status != http.StatusBadRequest {
		t.Fatalf("on_dead=sometimes: %s, want 400", p)
	}
	if got := text(one(t, p.Doc, "ordering-error")); !strings.Contains(got, "skip it, or block the key") {
		t.Errorf("the refusal says %q", got)
	}
	if s, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, id); s.OnDead != subscriptions.OnDeadBlock {
		t.Errorf("a refused form changed on_dead to %q", s.OnDead)
	}

	// Unticked (a checkbox posts nothing then), skip: saved unordered, skipping; the log names both.
	p = c.post("/subscriptions/"+id.String(), url.Values{"url": {u}, "description": {"Orders in order"}, "event_types": {"*"},
		"on_dead": {"skip"}})
	if p.Status != http.StatusOK {
		t.Fatalf("save unordered: %s: %s", p, p.text())
	}
	if s, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, id); s.Ordered || s.OnDead != subscriptions.OnDeadSkip {
		t.Errorf("stored ordered=%v on_dead=%q, want unordered, skip", s.Ordered, s.OnDead)
	}
	if got := text(one(t, p.Doc, "ordering-line")); !strings.HasPrefix(got, "not ordered") {
		t.Errorf("the ordering line of an unordered endpoint %q", got)
	}
	if len(byTestID(p.Doc, "blocked-keys")) != 0 {
		t.Error("an unordered endpoint's page has a Blocked keys card")
	}
	changed := e.changedFields(id)
	if len(changed) != 1 || !slices.Contains(changed[0], "ordered") || !slices.Contains(changed[0], "on_dead") {
		t.Errorf("the activity log's changes %v, want one naming ordered and on_dead", changed)
	}

	// A form without the section (posted before it existed) leaves ordering as it is.
	ordered, block := true, subscriptions.OnDeadBlock
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, id, subscriptions.Input{Ordered: &ordered, OnDead: &block}); err != nil {
		t.Fatal(err)
	}
	p = c.post("/subscriptions/"+id.String(), url.Values{"url": {u}, "description": {"Renamed"}, "event_types": {"*"}})
	if s, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, id); p.Status != http.StatusOK || !s.Ordered || s.OnDead != block {
		t.Errorf("a post without the section: %s, stored ordered=%v on_dead=%q", p, s.Ordered, s.OnDead)
	}
}

func checked(n *html.Node) bool { return hasAttr(n, "checked") }

// An ordered endpoint that blocks: the key whose first event the endpoint refuses is listed under Blocked
// keys with its dead delivery, since when and how many wait; the waiting deliveries' pages say which
// delivery they wait for and that it must be resent or skipped, with no attempt time and no Retry now,
// and the list shows no attempt time for them. Another key goes on meanwhile. A view-only portal session
// sees the keys without Skip, and is refused the POST. Skip discards the dead one; the rest are then
// delivered in order and no key is blocked. Skipping again, or naming another key's delivery, does nothing.
func TestBlockedKeysSkip(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("blocked keys")
	rc := newOrderReceiver(t)
	sub := e.orderedSubscription(tn, rc.URL+"/orders", "Orders, blocking", subscriptions.OnDeadBlock)
	key, other := "order-"+uuid.NewString()[:8], "order-other-"+uuid.NewString()[:8]

	dead := e.publishKeyed(tn, sub.ID, key, 1, true)
	second := e.publishKeyed(tn, sub.ID, key, 2, false)
	third := e.publishKeyed(tn, sub.ID, key, 3, false)
	free := e.publishKeyed(tn, sub.ID, other, 1, false)
	e.waitState(tn, dead, delivery.Failed)
	e.waitState(tn, free, delivery.Delivered)
	d2, err := e.srv.Deliveries.Get(context.Background(), tn.ID, second)
	if err != nil || !d2.Parked || d2.WaitingFor == nil || *d2.WaitingFor != dead {
		t.Fatalf("the second delivery of the key: %v parked=%v waiting for %v, want parked behind %s", err, d2.Parked, d2.WaitingFor, dead)
	}

	c := e.client()
	c.login(tn.Email)
	base := "/subscriptions/" + sub.ID.String()
	p := c.get(base)
	card := one(t, p.Doc, "blocked-keys")
	rows := byTestID(card, "blocked-key")
	if len(rows) != 1 || attr(rows[0], "data-key") != key {
		t.Fatalf("blocked keys %d rows: %s", len(rows), text(card))
	}
	if a := one(t, rows[0], "blocked-key-head"); attr(a, "href") != "/deliveries/"+dead.String() {
		t.Errorf("the blocked key's head links %q", attr(a, "href"))
	}
	if got := text(one(t, rows[0], "blocked-key-waiting")); got != "2 deliveries" {
		t.Errorf("waiting behind the head: %q, want 2 deliveries", got)
	}
	if n := findAll(one(t, rows[0], "blocked-key-dead-at"), tag("time")); len(n) != 1 || attr(n[0], "datetime") == "" {
		t.Error("the blocked key does not say since when its head is dead")
	}
	if got := text(rows[0]); !strings.Contains(got, "order.updated") {
		t.Errorf("the row does not name the head's event type: %q", got)
	}
	if got := text(one(t, rows[0], "blocked-key-reason")); !strings.Contains(got, "422") {
		t.Errorf("the row says the head died of %q, want its 422", got)
	}
	if len(byTestID(rows[0], "skip-key")) != 1 {
		t.Error("no Skip on the blocked key")
	}

	// The waiting delivery's page: what it waits for, no attempt time, no Retry now, its key.
	dp := c.get("/deliveries/" + second.String())
	note := one(t, dp.Doc, "parked-note")
	if a := one(t, note, "waiting-for"); attr(a, "href") != "/deliveries/"+dead.String() {
		t.Errorf("the parked note links %q, want the dead head", attr(a, "href"))
	}
	if got := text(note); !hasAttr(note, "data-blocked") || !strings.Contains(got, "waits until it is resent and delivered, or skipped") {
		t.Errorf("the parked note says %q", got)
	}
	if got := text(one(t, dp.Doc, "ordering-key")); got != key {
		t.Errorf("the delivery's ordering key %q", got)
	}
	next := one(t, dp.Doc, "next-attempt")
	if findAll(next, tag("time")) != nil || !strings.Contains(text(next), "none until the dead delivery before it is resent or skipped") {
		t.Errorf("a parked delivery's next attempt: %q", text(next))
	}
	if byTestID(dp.Doc, "retry-now") != nil || byTestID(dp.Doc, "resend") != nil {
		t.Error("a parked delivery offers Retry now or Resend")
	}
	if got := text(one(t, dp.Doc, "summary-headline")); got != "Blocked: an earlier delivery of its key is dead" {
		t.Errorf("the parked delivery's headline %q", got)
	}
	headPage := c.get("/deliveries/" + dead.String())
	if got := text(one(t, headPage.Doc, "ordering-key")); got != key {
		t.Errorf("the dead head's ordering key %q", got)
	}
	if got := text(one(t, headPage.Doc, "held-key-note")); !strings.Contains(got, "This delivery holds its ordering key: 2 later deliveries of the key wait") {
		t.Errorf("the dead head's page says %q, want that it holds its key with 2 waiting", got)
	}
	if byTestID(c.get("/deliveries/"+free.String()).Doc, "held-key-note") != nil {
		t.Error("a delivered delivery says it holds its key")
	}

	// Lists: no attempt time for the parked ones, but what they wait for.
	for _, path := range []string{base + "?state=pending", "/deliveries?state=pending"} {
		lp := c.get(path)
		for _, id := range []uuid.UUID{second, third} {
			row := findAll(lp.Doc, func(n *html.Node) bool { return attr(n, "data-id") == id.String() })
			if len(row) != 1 {
				t.Fatalf("%s lists %s %d times", path, id, len(row))
			}
			if got := text(one(t, row[0], "waiting")); got != "waits for an earlier delivery of its key" {
				t.Errorf("%s: the parked row's next attempt says %q", path, got)
			}
			if findAll(row[0], func(n *html.Node) bool {
				return hasAttr(n, "datetime") && strings.HasPrefix(attr(n, "datetime"), "9999")
			}) != nil {
				t.Errorf("%s: a parked row shows the year 9999", path)
			}
		}
	}

	// A view-only portal session sees the key, without Skip, and cannot post one.
	view := e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleView}))
	vp := view.get(base)
	if rows := byTestID(one(t, vp.Doc, "blocked-keys"), "blocked-key"); len(rows) != 1 || byTestID(vp.Doc, "skip-key") != nil {
		t.Errorf("view session: %d blocked keys, %d Skip buttons; want the key without Skip", len(rows), len(byTestID(vp.Doc, "skip-key")))
	}
	if got := view.post(base+"/skip-key", url.Values{"delivery_id": {dead.String()}, "ordering_key": {key}}); got.Status != http.StatusForbidden {
		t.Errorf("Skip by a view session: %s, want 403", got)
	}
	// Another key's delivery, or another subscription's, is not this key's head: 404, nothing discarded.
	if got := c.post(base+"/skip-key", url.Values{"delivery_id": {dead.String()}, "ordering_key": {other}}); got.Status != http.StatusNotFound {
		t.Errorf("Skip naming another key: %s, want 404", got)
	}
	if d, _ := e.srv.Deliveries.Get(context.Background(), tn.ID, dead); d.Discarded {
		t.Fatal("the head was discarded by a refused Skip")
	}

	// Skip: discarded, and the key goes on in order.
	p = c.post(base+"/skip-key", url.Values{"delivery_id": {dead.String()}, "ordering_key": {key}})
	if p.Status != http.StatusOK || p.URL.Path != base {
		t.Fatalf("Skip: %s", p)
	}
	if got := p.text(); !strings.Contains(got, "Skipped key “"+key+"”: its dead delivery") {
		t.Errorf("after Skip the page does not say what was done: %q", got)
	}
	e.waitState(tn, second, delivery.Delivered)
	e.waitState(tn, third, delivery.Delivered)
	if got := rc.arrived(key); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("the key's events arrived as %v, want [1 2 3]", got)
	}
	if d, _ := e.srv.Deliveries.Get(context.Background(), tn.ID, dead); !d.Discarded || d.State != delivery.Failed {
		t.Errorf("the skipped head: %s discarded=%v, want failed and discarded", d.State, d.Discarded)
	}
	p = c.get(base)
	if got := text(one(t, p.Doc, "no-blocked-keys")); got != "No key is blocked." {
		t.Errorf("after Skip the card says %q", got)
	}
	if byTestID(p.Doc, "blocked-key") != nil {
		t.Error("a key is still listed as blocked after Skip")
	}

	// Skipping the same delivery again: nothing to do, said so.
	p = c.post(base+"/skip-key", url.Values{"delivery_id": {dead.String()}, "ordering_key": {key}})
	if p.Status != http.StatusOK || !strings.Contains(p.text(), "Not skipped: the delivery was already discarded") {
		t.Errorf("Skip twice: %s: %q", p, p.text())
	}
	// The delivered one's page is not parked.
	if byTestID(c.get("/deliveries/"+third.String()).Doc, "parked-note") != nil {
		t.Error("a delivered delivery's page says it waits")
	}
}

// More blocked keys than a page: the card pages through them by key, keeping the list's query.
func TestBlockedKeysPages(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("blocked pages")
	rc := newOrderReceiver(t)
	sub := e.orderedSubscription(tn, rc.URL+"/orders", "Many blocked", subscriptions.OnDeadBlock)
	var heads []uuid.UUID
	for i := range 21 {
		heads = append(heads, e.publishKeyed(tn, sub.ID, fmt.Sprintf("key-%02d", i), 1, true))
	}
	for _, id := range heads {
		e.waitState(tn, id, delivery.Failed)
	}
	c := e.client()
	c.login(tn.Email)
	base := "/subscriptions/" + sub.ID.String()
	p := c.get(base + "?state=dead")
	rows := byTestID(one(t, p.Doc, "blocked-keys"), "blocked-key")
	if len(rows) != 20 || attr(rows[0], "data-key") != "key-00" || attr(rows[19], "data-key") != "key-19" {
		t.Fatalf("the first page lists %d keys", len(rows))
	}
	if byTestID(p.Doc, "blocked-keys-first") != nil {
		t.Error("the first page links the first page")
	}
	next := attr(one(t, p.Doc, "blocked-keys-next"), "href")
	if !strings.Contains(next, "state=dead") || !strings.HasSuffix(next, "#blocked-keys") {
		t.Errorf("the next page's link %q does not keep the list's filter or lead to the card", next)
	}
	p = c.get(next)
	rows = byTestID(one(t, p.Doc, "blocked-keys"), "blocked-key")
	if len(rows) != 1 || attr(rows[0], "data-key") != "key-20" || byTestID(p.Doc, "blocked-keys-next") != nil {
		t.Fatalf("the second page lists %d keys", len(rows))
	}
	if first := attr(one(t, p.Doc, "blocked-keys-first"), "href"); strings.Contains(first, "keys=") {
		t.Errorf("the first page's link %q keeps the cursor", first)
	}
	// The deliveries list on that page is not moved by the keys' cursor.
	if got := text(one(t, p.Doc, "total")); !strings.HasPrefix(got, "21 matching") {
		t.Errorf("the list under a keys cursor says %q", got)
	}
	// A cursor the page never gave shows the first keys.
	p = c.get(base + "?keys=%%%")
	if p.Status != http.StatusOK || len(byTestID(p.Doc, "blocked-key")) != 20 {
		t.Errorf("a bad keys cursor: %s, %d keys", p, len(byTestID(p.Doc, "blocked-key")))
	}
}
