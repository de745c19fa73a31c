package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/testdb"
	"golang.org/x/net/html"
)

// catalogueSeed is one test's event types. The catalogue is global to the package's database (every test
// and every page sees all of it), so each name starts with the test's marker and tests search for it.
type catalogueSeed struct {
	marker string
	// placed has a schema (required fields, an array of objects, an enum) and an example; legacy is
	// deprecated; bare has neither schema nor example; gone is archived; slashed has a "/" in its name.
	placed, legacy, bare, gone, slashed string
	orders, misc                        string // the groups
	example                             map[string]any
}

const placedSchema = `{"type": "object", "required": ["order_id", "items"], "properties": {
  "order_id": {"type": "string", "description": "The order's id."},
  "status": {"type": "string", "enum": ["placed", "paid"], "description": "Where the order is."},
  "items": {"type": "array", "items": {"type": "object", "required": ["sku"], "properties": {
    "sku": {"type": "string"}, "price": {"type": "integer", "description": "In cents."}}}}}}`

// seedCatalogue registers a test's types in the server's catalogue.
func (e *env) seedCatalogue(label string) catalogueSeed {
	e.t.Helper()
	m := label + uuid.NewString()[:8]
	s := catalogueSeed{marker: m, placed: m + ".order.placed", legacy: m + ".order.legacy", bare: m + ".ping",
		gone: m + ".order.gone", slashed: m + "/order.sent", orders: "Orders " + m, misc: "Misc " + m,
		example: map[string]any{"order_id": "ord_" + m, "status": "placed", "items": []any{map[string]any{"sku": "tea", "price": 450.0}}}}
	example, _ := json.Marshal(s.example)
	str := func(v string) *string { return &v }
	yes := true
	ctx := context.Background()
	for _, in := range []catalogue.Input{
		{Name: s.placed, Group: &s.orders, Description: str("An order was placed."), Schema: json.RawMessage(placedSchema), Example: example},
		{Name: s.legacy, Group: &s.orders, Description: str("The old order event."), Deprecated: &yes,
			Schema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "string"}}}`), Example: json.RawMessage(`{"id": "x"}`)},
		{Name: s.bare, Group: &s.misc, Description: str("A heartbeat.")},
		{Name: s.gone, Group: &s.orders, Description: str("Archived."), Example: json.RawMessage(`{"gone": true}`)},
		{Name: s.slashed, Group: &s.misc, Example: json.RawMessage(`{"sent": true}`)},
	} {
		if _, err := e.srv.Catalogue.Create(ctx, in); err != nil {
			e.t.Fatalf("register %s: %v", in.Name, err)
		}
	}
	if err := e.srv.Catalogue.Archive(ctx, s.gone); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// typeCards are a catalogue page's types by name.
func typeCards(p *page) map[string]*html.Node {
	out := map[string]*html.Node{}
	for _, n := range byTestID(p.Doc, "event-type") {
		out[attr(n, "data-name")] = n
	}
	return out
}

// fieldRows are a type's fields table, a row a line: path type required|optional description [enum].
func fieldRows(t *testing.T, card *html.Node) []string {
	t.Helper()
	var out []string
	for _, r := range byTestID(card, "field") {
		var enum []string
		for _, c := range findAll(one(t, r, "field-enum"), tag("code")) {
			enum = append(enum, text(c))
		}
		out = append(out, strings.TrimSpace(strings.Join([]string{text(one(t, r, "field-path")), text(one(t, r, "field-type")),
			text(one(t, r, "field-required")), text(one(t, r, "field-description")), strings.Join(enum, ",")}, " | ")))
	}
	return out
}

// The catalogue page lists the live types by group, each with its description, a deprecated mark, its
// fields (path, type, required, description, allowed values), its example with a copy button and a Send
// form; a type without a schema says so; archived types are not shown; ?q= searches names.
func TestCataloguePage(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	s := e.seedCatalogue("catpage")
	tn := e.newTenant("catalogue page")
	sub := e.newSubscription(tn, "/good/catpage", "Catalogue endpoint")
	paused := e.newSubscription(tn, "/good/catpage-paused", "Paused endpoint")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, paused.ID); err != nil {
		t.Fatal(err)
	}
	other := e.newTenant("catalogue other")
	otherSub := e.newSubscription(other, "/good/catpage-other", "Someone else's endpoint")

	c := e.client()
	c.login(tn.Email)
	home := c.get("/")
	if nav := one(t, home.Doc, "nav-event-types"); attr(nav, "href") != "/event-types" {
		t.Errorf("header link to %q", attr(nav, "href"))
	}

	p := c.get("/event-types?q=" + url.QueryEscape(s.marker))
	if p.Status != http.StatusOK {
		t.Fatalf("/event-types: %s", p)
	}
	if got := text(findAll(p.Doc, tag("title"))[0]); got != "Event types · Hookline" {
		t.Errorf("title %q", got)
	}
	var groups []string
	for _, g := range byTestID(p.Doc, "type-group") {
		var names []string
		for _, n := range byTestID(g, "type-name") {
			names = append(names, text(n))
		}
		groups = append(groups, attr(g, "data-group")+": "+strings.Join(names, ", "))
	}
	want := []string{s.misc + ": " + s.bare + ", " + s.slashed, s.orders + ": " + s.legacy + ", " + s.placed}
	if !slices.Equal(groups, want) {
		t.Errorf("groups:\n%s\nwant (the archived type left out):\n%s", strings.Join(groups, "\n"), strings.Join(want, "\n"))
	}
	if got := text(one(t, p.Doc, "catalogue-count")); !regexp.MustCompile(`^4 of \d+ types match “` + regexp.QuoteMeta(s.marker) + `”\.$`).MatchString(got) {
		t.Errorf("count %q", got)
	}
	cards := typeCards(p)

	checkPlacedType(t, p, s, sub, paused, otherSub)

	checkLegacyAndBareTypes(t, cards, s)

	checkCatalogueSearch(t, c, s)

	checkCatalogueWithoutTargets(t, e, s)
}

// checkPlacedType checks the card of a type with a schema and an example on p: its description, its fields,
// its example (indented, copyable) and Send example to the tenant's own subscriptions only.
func checkPlacedType(t *testing.T, p *page, s catalogueSeed, sub, paused, otherSub subscriptions.Subscription) {
	t.Helper()
	placed := typeCards(p)[s.placed]
	if got := text(one(t, placed, "type-description")); got != "An order was placed." {
		t.Errorf("description %q", got)
	}
	if n := len(byTestID(placed, "deprecated")); n != 0 {
		t.Error("a live type is marked deprecated")
	}
	wantRows := []string{
		"data.order_id | string | required | The order's id. |",
		"data.status | string | optional | Where the order is. | placed,paid",
		"data.items | array of object | required |  |",
		"data.items[].sku | string | required |  |",
		"data.items[].price | integer | optional | In cents. |",
	}
	if got := fieldRows(t, placed); !slices.Equal(got, wantRows) {
		t.Errorf("fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}
	for _, th := range findAll(one(t, placed, "fields"), tag("td")) {
		if attr(th, "data-label") == "" {
			t.Error("a fields cell has no data-label: the table does not stack at phone width")
		}
	}
	example := text(one(t, placed, "example"))
	var got map[string]any
	if err := json.Unmarshal([]byte(example), &got); err != nil || !reflect.DeepEqual(got, s.example) {
		t.Errorf("example %q (%v), want %v", example, err, s.example)
	}
	if raw := one(t, placed, "example").FirstChild.Data; !strings.Contains(raw, "\n  \"items\": [") {
		t.Errorf("the example is not pretty-printed: %q", raw)
	}
	if cp := one(t, placed, "copy-example"); attr(cp, "data-copy") != one(t, placed, "example").FirstChild.Data {
		t.Errorf("copy button carries %q", attr(cp, "data-copy"))
	}
	form := one(t, placed, "send-example-form")
	if got := attr(form, "action"); got != "/event-types/"+s.placed+"/send" || attr(form, "method") != "post" {
		t.Errorf("send form posts to %q", got)
	}
	var options []string
	for _, o := range findAll(form, tag("option")) {
		options = append(options, attr(o, "value")+" "+text(o))
	}
	wantOptions := []string{sub.ID.String() + " Catalogue endpoint", paused.ID.String() + " Paused endpoint (paused: it waits until you resume)"}
	if !slices.Equal(options, wantOptions) {
		t.Errorf("send choices %v, want %v (the tenant's own only)", options, wantOptions)
	}
	if strings.Contains(p.Body, otherSub.ID.String()) {
		t.Error("the page holds another tenant's subscription")
	}
}

// checkLegacyAndBareTypes checks a deprecated type is marked so, and a type without a schema or an example
// says so and offers neither fields, example nor Send; a name with a slash is escaped in its form.
func checkLegacyAndBareTypes(t *testing.T, cards map[string]*html.Node, s catalogueSeed) {
	t.Helper()
	legacy := cards[s.legacy]
	if got := text(one(t, legacy, "deprecated")); got != "deprecated" {
		t.Errorf("deprecated mark %q", got)
	}
	one(t, legacy, "deprecated-note")

	bare := cards[s.bare]
	if got := text(one(t, bare, "no-schema")); !strings.HasPrefix(got, "No schema registered") {
		t.Errorf("no schema: %q", got)
	}
	one(t, bare, "no-example")
	for _, id := range []string{"fields", "example", "send-example-form", "copy-example"} {
		if len(byTestID(bare, id)) != 0 {
			t.Errorf("a type without schema or example shows %s", id)
		}
	}
	if got := attr(one(t, cards[s.slashed], "send-example-form"), "action"); got != "/event-types/"+url.PathEscape(s.slashed)+"/send" {
		t.Errorf("a name with a slash posts to %q", got)
	}
}

// checkCatalogueSearch checks the page's search: any case, a part of the name; nothing matching says so; the
// whole catalogue lists the types too, archived ones aside.
func checkCatalogueSearch(t *testing.T, c *client, s catalogueSeed) {
	t.Helper()
	// The search: any case, a part of the name; nothing matching says so.
	p := c.get("/event-types?q=" + url.QueryEscape(strings.ToUpper(s.marker+".order.P")))
	if got := slices.Collect(maps.Keys(typeCards(p))); !slices.Equal(got, []string{s.placed}) {
		t.Errorf("search .order.P: %v", got)
	}
	if v := attr(findAll(one(t, p.Doc, "catalogue-search"), tag("input"))[0], "value"); v != strings.ToUpper(s.marker+".order.P") {
		t.Errorf("the search box shows %q", v)
	}
	p = c.get("/event-types?q=" + s.marker + "-nothing")
	if len(typeCards(p)) != 0 || !strings.Contains(text(one(t, p.Doc, "no-match")), "No event type's name contains") {
		t.Errorf("a search matching nothing: %d types, %q", len(typeCards(p)), p.text())
	}
	// The whole catalogue lists them too.
	if p = c.get("/event-types"); typeCards(p)[s.placed] == nil || typeCards(p)[s.gone] != nil {
		t.Error("the unfiltered catalogue does not list the live types only")
	}
}

// checkCatalogueWithoutTargets checks a tenant without subscriptions reads the catalogue and is told why
// there is no Send, and so is an operator without a tenant.
func checkCatalogueWithoutTargets(t *testing.T, e *env, s catalogueSeed) {
	t.Helper()
	// A tenant without subscriptions reads the catalogue and is told why there is no Send; so is an
	// operator without a tenant, who has nothing to send to (and is not shown how to register types while
	// there are some).
	lone := e.newTenant("catalogue lone")
	lc := e.client()
	lc.login(lone.Email)
	p := lc.get("/event-types?q=" + s.marker)
	if got := text(one(t, p.Doc, "no-targets")); !strings.Contains(got, "no subscriptions") {
		t.Errorf("without subscriptions: %q", got)
	}
	if n := len(byTestID(p.Doc, "send-example-form")); n != 0 || typeCards(p)[s.placed] == nil {
		t.Errorf("without subscriptions: %d send forms, types %v", n, slices.Collect(maps.Keys(typeCards(p))))
	}
	a := e.client()
	a.login(adminEmail)
	p = a.get("/event-types?q=" + s.marker)
	if p.Status != http.StatusOK || typeCards(p)[s.placed] == nil {
		t.Fatalf("operator: %s", p)
	}
	for _, id := range []string{"send-example-form", "no-targets", "register-hint"} {
		if n := len(byTestID(p.Doc, id)); n != 0 {
			t.Errorf("an operator without a tenant sees %s", id)
		}
	}
}

// Send example publishes the type's example, as an event of that type, to the chosen subscription only
// (whatever its event types), records example_event.sent with the user as actor, and leads to the delivery
// with a message saying what was sent. Everything else is refused plainly.
// sendExampleForm posts Send example of the type name to the subscription subID, as the page's form does.
func sendExampleForm(c *client, name, subID string) *page {
	c.t.Helper()
	return c.post("/event-types/"+url.PathEscape(name)+"/send", url.Values{"subscription_id": {subID}})
}

// tenantDeliveries is how many deliveries tenantID has.
func (e *env) tenantDeliveries(tenantID uuid.UUID) int {
	e.t.Helper()
	var n int
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestCatalogueSendExample(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	s := e.seedCatalogue("catsend")
	ctx := activity.System(context.Background(), "test setup")
	tn := e.newTenant("catalogue send")
	// target takes only another type: the example goes to it all the same; everything takes every type,
	// and must get nothing.
	target := e.newSubscription(tn, "/good/catsend-target", "Target", "something.else")
	everything := e.newSubscription(tn, "/good/catsend-everything", "Everything")
	other := e.newTenant("catalogue send other")
	otherSub := e.newSubscription(other, "/good/catsend-other", "Other tenant's")

	c := e.client()
	c.login(tn.Email)
	nf := c.noFollow()
	send := func(name, subID string) *page {
		t.Helper()
		return sendExampleForm(nf, name, subID)
	}
	p := send(s.placed, target.ID.String())
	loc := p.Header.Get("Location")
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(loc, "/deliveries/") {
		t.Fatalf("send: %d to %q, want 303 to the delivery", p.Status, loc)
	}
	id := uuid.MustParse(strings.TrimPrefix(loc, "/deliveries/"))
	d := e.waitState(tn, id, delivery.Delivered)
	if d.SubscriptionID != target.ID || d.EventType != s.placed {
		t.Errorf("delivery to %s of %s, want to %s of %s", d.SubscriptionID, d.EventType, target.ID, s.placed)
	}
	var body struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(d.Request.Body, &body); err != nil || body.Type != s.placed || !reflect.DeepEqual(body.Data, s.example) {
		t.Errorf("sent %s (%v), want type %s with the example as data", d.Request.Body, err, s.placed)
	}
	e.recv.waitHits(t, "/good/catsend-target", 1)
	var n int
	if err := e.srv.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE event_id = $1`, d.EventID).Scan(&n); err != nil || n != 1 {
		t.Errorf("the example event has %d deliveries (%v), want 1: to the chosen subscription only", n, err)
	}
	if h := e.recv.count("/good/catsend-everything"); h != 0 {
		t.Errorf("a subscription to every type got %d requests", h)
	}
	// The delivery's page says what was sent.
	dp := c.get(loc)
	if got := text(one(t, dp.Doc, "flash")); got != "Sent the catalogue's example of "+s.placed+" (example data, not a real event) to this subscription only." {
		t.Errorf("flash %q", got)
	}
	checkExampleLogged(t, e, tn, id, s)

	// A name with a slash, as the page escapes it.
	if p := send(s.slashed, target.ID.String()); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/deliveries/") {
		t.Errorf("send %s: %d to %q", s.slashed, p.Status, p.Header.Get("Location"))
	}

	// A paused subscription: queued, and the message says it waits.
	if _, err := e.srv.Subscriptions.Pause(ctx, tn.ID, everything.ID); err != nil {
		t.Fatal(err)
	}
	p = send(s.legacy, everything.ID.String())
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/deliveries/") {
		t.Fatalf("send to a paused subscription: %d to %q", p.Status, p.Header.Get("Location"))
	}
	if got := text(one(t, c.get(p.Header.Get("Location")).Doc, "flash")); !strings.HasPrefix(got, "Queued the catalogue's example of "+s.legacy) ||
		!strings.Contains(got, "waits until you resume") {
		t.Errorf("paused flash %q", got)
	}

	checkDisabledTakesNone(t, e, c, s, tn, everything)

	checkRefusedSends(t, e, nf, s, tn, other, target, otherSub)
}

// checkExampleLogged checks the activity log has example_event.sent, by the user, naming the delivery (id)
// and the type.
func checkExampleLogged(t *testing.T, e *env, tn tenant, id uuid.UUID, s catalogueSeed) {
	t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	// The activity log: example_event.sent, by the user, naming the delivery and the type.
	page, err := e.srv.Activity.List(ctx, tn.ID, activity.Filter{Action: activity.ExampleEventSent})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("activity: %v, %+v", err, page.Items)
	}
	entry := page.Items[0]
	if entry.Actor.Email != tn.Email || entry.Actor.Kind != activity.ActorUser || entry.Object.ID != id.String() || entry.Details["event_type"] != s.placed {
		t.Errorf("activity entry %+v", entry)
	}
}

// checkDisabledTakesNone disables everything: Send example to it makes nothing and says so, and the form
// lists it as a choice that cannot be made.
func checkDisabledTakesNone(t *testing.T, e *env, c *client, s catalogueSeed, tn tenant, everything subscriptions.Subscription) {
	t.Helper()
	ctx := context.Background()
	nf := c.noFollow()
	// A disabled subscription takes no deliveries: nothing is made, and the page says so.
	if _, err := e.srv.Pool.Exec(ctx, `UPDATE subscriptions SET state = 'disabled' WHERE id = $1`, everything.ID); err != nil {
		t.Fatal(err)
	}
	count := func() int { return e.tenantDeliveries(tn.ID) }
	before := count()
	p := sendExampleForm(nf, s.placed, everything.ID.String())
	if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/event-types" {
		t.Fatalf("send to a disabled subscription: %d to %q", p.Status, p.Header.Get("Location"))
	}
	if got := text(one(t, c.get("/event-types?q="+s.marker).Doc, "flash")); got != "Example not sent: that subscription takes no new deliveries (disabled). Resume it on its page first." {
		t.Errorf("disabled flash %q", got)
	}
	if n := count(); n != before {
		t.Errorf("%d deliveries made for a disabled subscription", n-before)
	}
	// And the form lists it, saying so, as a choice that cannot be made.
	for _, o := range findAll(one(t, typeCards(c.get("/event-types?q=" + s.marker))[s.placed], "send-example-form"), tag("option")) {
		if attr(o, "value") == everything.ID.String() && (!hasAttr(o, "disabled") || !strings.Contains(text(o), "disabled")) {
			t.Errorf("the disabled subscription's choice: %q, disabled %v", text(o), hasAttr(o, "disabled"))
		}
	}
}

// checkRefusedSends checks what Send example refuses makes nothing: a type without an example (400), unknown
// and archived types and another tenant's subscription (the 404 page), a missing or malformed subscription
// id (400).
func checkRefusedSends(t *testing.T, e *env, nf *client, s catalogueSeed, tn, other tenant, target, otherSub subscriptions.Subscription) {
	t.Helper()
	ctx := context.Background()
	before := e.tenantDeliveries(tn.ID)
	// Refused: a type without an example (400), unknown and archived types and another tenant's
	// subscription (the 404 page), a missing or malformed subscription id (400). Nothing is made.
	for _, tc := range []struct {
		name, sub string
		status    int
		says      string
	}{
		{s.bare, target.ID.String(), http.StatusBadRequest, "has no example"},
		{s.marker + ".no.such.type", target.ID.String(), http.StatusNotFound, "Page not found"},
		{s.gone, target.ID.String(), http.StatusNotFound, "Page not found"},
		{s.placed, otherSub.ID.String(), http.StatusNotFound, "Page not found"},
		{s.placed, uuid.NewString(), http.StatusNotFound, "Page not found"},
		{s.placed, "", http.StatusBadRequest, "choose a subscription"},
		{s.placed, "not-an-id", http.StatusBadRequest, "subscription_id must be"},
	} {
		p := sendExampleForm(nf, tc.name, tc.sub)
		if p.Status != tc.status || !strings.Contains(p.text(), tc.says) {
			t.Errorf("send %s to %q: %d %.200q, want %d saying %q", tc.name, tc.sub, p.Status, p.text(), tc.status, tc.says)
		}
	}
	if n := e.tenantDeliveries(tn.ID); n != before {
		t.Errorf("%d deliveries made by refused sends", n-before)
	}
	var otherN int
	if err := e.srv.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1`, other.ID).Scan(&otherN); err != nil || otherN != 0 {
		t.Errorf("the other tenant has %d deliveries (%v)", otherN, err)
	}
}

// A view portal session sees the catalogue without Send forms, and its send is refused (403), making
// nothing; a manage session sends.
func TestCatalogueViewPortalSession(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	s := e.seedCatalogue("catportal")
	tn := e.newTenant("catalogue portal")
	sub := e.newSubscription(tn, "/good/catportal", "Portal endpoint")
	view := e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleView}))
	p := view.get("/event-types?q=" + s.marker)
	if p.Status != http.StatusOK || typeCards(p)[s.placed] == nil {
		t.Fatalf("view session: %s", p)
	}
	one(t, p.Doc, "nav-event-types")
	one(t, typeCards(p)[s.placed], "example")
	for _, f := range findAll(p.Doc, tag("form")) {
		if attr(f, "method") == "post" && attr(f, "action") != "/logout" {
			t.Errorf("a view session sees a form posting to %s", attr(f, "action"))
		}
	}
	if p := view.post("/event-types/"+s.placed+"/send", url.Values{"subscription_id": {sub.ID.String()}}); p.Status != http.StatusForbidden {
		t.Errorf("a view session's send: %d, want 403", p.Status)
	}
	var n int
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1`, tn.ID).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d deliveries after a view session's send (%v)", n, err)
	}

	manage := e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleManage, User: portal.User{Name: "Mona Manage"}}))
	one(t, typeCards(manage.get("/event-types?q=" + s.marker))[s.placed], "send-example-form")
	p = manage.noFollow().post("/event-types/"+s.placed+"/send", url.Values{"subscription_id": {sub.ID.String()}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/deliveries/") {
		t.Errorf("a manage session's send: %d to %q", p.Status, p.Header.Get("Location"))
	}
	page, err := e.srv.Activity.List(context.Background(), tn.ID, activity.Filter{Action: activity.ExampleEventSent})
	if err != nil || len(page.Items) != 1 || page.Items[0].Actor.Name != "Mona Manage" {
		t.Errorf("activity after the portal send: %v, %+v", err, page.Items)
	}
}

// An empty catalogue says so, without a search form; an operator is told how to register types. On a
// database of its own: the package's database has every other test's types.
func TestCatalogueEmpty(t *testing.T) {
	t.Parallel()
	dbURL, drop, err := testdb.Create(context.Background(), "web_catalogue_empty")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	e := setup(t, withBackground, func(c *config.Config) {
		withAdmin(c)
		c.DatabaseURL = dbURL
	})
	tn := e.newTenant("catalogue empty")
	e.newSubscription(tn, "/good/catempty", "Empty catalogue endpoint")
	c := e.client()
	c.login(tn.Email)
	p := c.get("/event-types")
	if p.Status != http.StatusOK {
		t.Fatalf("/event-types: %s", p)
	}
	if got := text(one(t, p.Doc, "catalogue-empty")); !strings.Contains(got, "No event types registered") || !strings.Contains(got, "delivered as they are published") {
		t.Errorf("empty catalogue says %q", got)
	}
	for _, id := range []string{"register-hint", "catalogue-search", "type-group", "no-match", "no-targets"} {
		if len(byTestID(p.Doc, id)) != 0 {
			t.Errorf("the empty catalogue shows %s to a customer", id)
		}
	}
	a := e.client()
	a.login(adminEmail)
	p = a.get("/event-types")
	if got := text(one(t, p.Doc, "register-hint")); !strings.Contains(got, "POST /api/v1/event-types") || !strings.Contains(got, "POST /api/v1/event-types/import") {
		t.Errorf("operator's hint %q", got)
	}
}

// A field's bounds are its allowed values ("≥ 1", not "any"), and a group is one whatever its
// capitalisation: a type stored in another spelling of a group is listed with the group's other types,
// under one spelling, on the catalogue page and in the subscription form alike.
func TestCatalogueBoundsAndGroupsCaseAside(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	ctx := context.Background()
	m := "bnd" + uuid.NewString()[:8]
	group := "Money " + m
	if _, err := e.srv.Catalogue.Create(ctx, catalogue.Input{Name: m + ".a", Group: &group, Schema: json.RawMessage(`{"type":"object","properties":{
	  "qty":{"type":"integer","minimum":1},"code":{"type":"string","maxLength":8},"n":{"type":"integer"}}}`)}); err != nil {
		t.Fatal(err)
	}
	// Stored before groups were one whatever their case: the same group in lower case.
	if _, err := e.srv.Pool.Exec(ctx, `INSERT INTO event_types (name, description, group_name, created_at, updated_at)
	  VALUES ($1, 'Stored in another spelling.', $2, now() - interval '1 hour', now() - interval '1 hour')`, m+".b", strings.ToLower(group)); err != nil {
		t.Fatal(err)
	}
	tn := e.newTenant("bounds and groups")
	e.newSubscription(tn, "/good/bounds", "Bounds endpoint")
	c := e.client()
	c.login(tn.Email)

	p := c.get("/event-types?q=" + url.QueryEscape(m))
	var groups []string
	for _, g := range byTestID(p.Doc, "type-group") {
		var names []string
		for _, n := range byTestID(g, "type-name") {
			names = append(names, text(n))
		}
		groups = append(groups, text(findAll(g, tag("h2"))[0])+": "+strings.Join(names, ", "))
	}
	if want := []string{group + ": " + m + ".a, " + m + ".b"}; !slices.Equal(groups, want) {
		t.Errorf("groups %q, want %q", groups, want)
	}
	allowed := map[string]string{}
	for _, r := range byTestID(typeCards(p)[m+".a"], "field") {
		allowed[text(one(t, r, "field-path"))] = strings.Join(strings.Fields(text(one(t, r, "field-enum"))), " ")
	}
	for path, want := range map[string]string{"data.qty": "≥ 1", "data.code": "at most 8 characters", "data.n": "any"} {
		if allowed[path] != want {
			t.Errorf("allowed values of %s: %q, want %q", path, allowed[path], want)
		}
	}

	form := c.get("/subscriptions/new")
	offered := map[string][]string{}
	for _, g := range byTestID(form.Doc, "event-group") {
		for _, in := range byTestID(g, "event-type") { // the types; each group also offers its wildcard
			if v := attr(in, "value"); strings.HasPrefix(v, m+".") {
				offered[attr(g, "data-group")] = append(offered[attr(g, "data-group")], v)
			}
		}
	}
	if want := map[string][]string{group: {m + ".a", m + ".b"}}; !reflect.DeepEqual(offered, want) {
		t.Errorf("the form offers %v, want %v", offered, want)
	}
}

// A schema stored before the catalogue's limits whose $refs multiply (the chain of 24 anyOfs of two
// $refs made this page take 16 s) is listed in part, and the page says so.
func TestCataloguePageOfACostlyStoredSchema(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	ctx := context.Background()
	m := "chain" + uuid.NewString()[:8]
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range 24 {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	b.WriteString(`"a24":{"type":"object","properties":{"leaf":{"type":"integer"}}}},"type":"object","properties":{"id":{"type":"string"},"node":{"$ref":"#/$defs/a0"}}}`)
	if _, err := e.srv.Pool.Exec(ctx, `INSERT INTO event_types (name, description, group_name, schema, created_at, updated_at) VALUES ($1, '', 'chains', $2, now(), now())`, m+".costly", b.String()); err != nil {
		t.Fatal(err)
	}
	tn := e.newTenant("costly schema")
	c := e.client()
	c.login(tn.Email)
	p := c.get("/event-types?q=" + url.QueryEscape(m))
	if p.Status != http.StatusOK {
		t.Fatalf("/event-types: %s", p)
	}
	card := typeCards(p)[m+".costly"]
	if card == nil {
		t.Fatal("the type is not listed")
	}
	if note := text(one(t, card, "fields-note")); !strings.Contains(note, "larger than this page lists") {
		t.Errorf("fields note %q", note)
	}
	if rows := byTestID(card, "field"); len(rows) == 0 || text(one(t, rows[0], "field-path")) != "data.id" {
		t.Errorf("%d field rows, want the first ones from data.id", len(rows))
	}
}
