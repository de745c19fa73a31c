package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookline/hookline/client"
)

var publishedLine = regexp.MustCompile(`(?m)^published (\S+) (\S+): (\d+) deliver(?:y|ies)$`)

// publishedID is the event id of publish's human output.
func publishedID(t *testing.T, r result) string {
	t.Helper()
	m := publishedLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("publish printed no 'published <type> <id>: n deliveries' line: %s", r)
	}
	return m[2]
}

// publish: the payload inline, from a file and from stdin; flags before and after the type; an
// idempotency key twice answers the same event, and only one is created.
func TestPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-publish")
	sub := e.subscription(tenant, "http://127.0.0.1:9/cli", true)
	token := e.newToken(tenant, client.ScopeEventsWrite, client.ScopeDeliveriesRead)

	key := "cli-" + tenant
	first := e.run(token, "publish", "order.created", "--data", `{"id": "ord_1", "amount": 12345678901234567890}`, "--idempotency-key", key)
	want(t, "publish", first, 0, []string{"published order.created ", ": 1 delivery", sub, "pending"}, nil)
	id := publishedID(t, first)
	// The same publish with the flags first, one of them in --name=value form.
	again := e.run(token, "--idempotency-key="+key, "--data", `{"id": "ord_1", "amount": 12345678901234567890}`, "publish", "order.created")
	want(t, "publish again with the key", again, 0, nil, nil)
	if got := publishedID(t, again); got != id {
		t.Errorf("the same idempotency key answered event %s, then %s: want the first again", id, got)
	}
	n := 0
	for d, err := range e.admin.Deliveries(t.Context(), tenant, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if d.EventID != id {
			t.Errorf("delivery %s is of event %s: the repeated publish created one", d.ID, d.EventID)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d deliveries after two publishes with one key, want 1", n)
	}
	// The payload reached the server byte for byte: its large integer was not made a float.
	if d := e.run(token, "deliveries", "get", e.onlyDelivery(tenant, id), "--json"); !strings.Contains(d.stdout, `"amount":12345678901234567890`) {
		t.Errorf("the delivery's data lost the payload's integer: %s", d)
	}

	file := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(file, []byte(`{"from": "a file"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile := e.run(token, "publish", "--data", "@"+file, "order.updated", "--json")
	var p client.Published
	if err := json.Unmarshal([]byte(fromFile.stdout), &p); err != nil || fromFile.code != 0 {
		t.Fatalf("publish --data @file --json: %v\n%s", err, fromFile)
	}
	if p.EventType != "order.updated" || p.ID == "" || p.ID == id || len(p.Deliveries) != 1 || p.Deliveries[0].SubscriptionID != sub {
		t.Errorf("publish --data @file --json printed %+v", p)
	}
	fromStdin := e.runWith(token, strings.NewReader(`{"from": "stdin"}`), "publish", "order.shipped", "--data", "@-")
	want(t, "publish --data @-", fromStdin, 0, []string{"published order.shipped "}, nil)
	if d := e.run(token, "deliveries", "get", e.onlyDelivery(tenant, publishedID(t, fromStdin))); !strings.Contains(d.stdout, `{"from":"stdin"}`) {
		t.Errorf("the payload from stdin is not the delivery's data: %s", d)
	}

	// --ordering-key goes with the event: its delivery carries it; a bad one is the API's refusal (exit 1).
	keyed := e.run(token, "publish", "order.updated", "--data", "{}", "--ordering-key", "ord_1")
	want(t, "publish --ordering-key", keyed, 0, []string{"published order.updated "}, nil)
	if d := e.run(token, "deliveries", "get", e.onlyDelivery(tenant, publishedID(t, keyed)), "--json"); !strings.Contains(d.stdout, `"ordering_key":"ord_1"`) {
		t.Errorf("the delivery does not carry the ordering key: %s", d)
	}
	bad := e.run(token, "publish", "order.updated", "--data", "{}", "--ordering-key", strings.Repeat("k", 129))
	want(t, "publish --ordering-key too long", bad, 1, nil, []string{"ordering_key"})

	// An admin token publishes to the tenant it names.
	admin := e.run(adminToken, "publish", "order.created", "--data", "{}", "--tenant", tenant)
	want(t, "publish with the admin token and --tenant", admin, 0, []string{"published order.created "}, nil)
}

// onlyDelivery is the one delivery of an event.
func (e *env) onlyDelivery(tenantID, eventID string) string {
	e.t.Helper()
	var ids []string
	for d, err := range e.admin.Deliveries(e.t.Context(), tenantID, nil) {
		if err != nil {
			e.t.Fatal(err)
		}
		if d.EventID == eventID {
			ids = append(ids, d.ID)
		}
	}
	if len(ids) != 1 {
		e.t.Fatalf("event %s has %d deliveries, want 1", eventID, len(ids))
	}
	return ids[0]
}

// deliveries list, get and retry against deliveries a real worker delivered to a real receiver.
func TestDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	tenant := e.newTenant("cli-deliveries")
	e.subscription(tenant, receiver(t, 200), false)
	token := e.newToken(tenant, allScopes...)
	var ids []string
	for i := range 2 {
		p, err := e.admin.Publish(t.Context(), tenant, "invoice.paid", map[string]any{"n": i}, client.PublishOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.Deliveries[0].ID)
	}
	for _, id := range ids {
		e.waitState(tenant, id, client.DeliveryStateDelivered)
	}
	newest, oldest := ids[1], ids[0]

	list := e.run(token, "deliveries", "list")
	want(t, "deliveries list", list, 0, []string{"ID", "STATE", newest, oldest, "invoice.paid", "delivered", "HTTP 200"}, nil)
	if strings.Index(list.stdout, newest) > strings.Index(list.stdout, oldest) {
		t.Errorf("deliveries list is not newest first:\n%s", list.stdout)
	}
	want(t, "deliveries list --state dead", e.run(token, "deliveries", "list", "--state", "dead"), 0, []string{"no deliveries"}, nil)
	// A page of one: the next page's cursor on stderr, and --cursor goes on from it.
	page := e.run(token, "--limit", "1", "deliveries", "list")
	want(t, "deliveries list --limit 1", page, 0, []string{newest}, []string{"more: add --cursor "})
	cursor := strings.TrimSpace(strings.TrimPrefix(page.stderr, "more: add --cursor "))
	next := e.run(token, "deliveries", "list", "--cursor", cursor, "--limit=1")
	want(t, "deliveries list --cursor", next, 0, []string{oldest}, nil)
	if strings.Contains(next.stdout, newest) || next.stderr != "" {
		t.Errorf("the page after the cursor: %s", next)
	}
	var listed struct {
		Items      []client.Delivery `json:"items"`
		NextCursor string            `json:"next_cursor"`
	}
	asJSON := e.run(token, "deliveries", "list", "--json", "--state", "delivered")
	if err := json.Unmarshal([]byte(asJSON.stdout), &listed); err != nil || asJSON.code != 0 {
		t.Fatalf("deliveries list --json: %v\n%s", err, asJSON)
	}
	if len(listed.Items) != 2 || listed.Items[0].ID != newest || listed.Items[1].ID != oldest || listed.NextCursor != "" {
		t.Errorf("deliveries list --json: %+v", listed)
	}

	get := e.run(token, "deliveries", "get", oldest)
	want(t, "deliveries get", get, 0, []string{"delivery", oldest, "delivered", "invoice.paid", `{"n":0}`, "attempts:", "#1", "HTTP 200"}, nil)
	var detail client.DeliveryDetail
	getJSON := e.run(token, "deliveries", "get", "--json", oldest)
	if err := json.Unmarshal([]byte(getJSON.stdout), &detail); err != nil || getJSON.code != 0 {
		t.Fatalf("deliveries get --json: %v\n%s", err, getJSON)
	}
	if detail.ID != oldest || detail.State != client.DeliveryStateDelivered || len(detail.Attempts) != 1 || *detail.Attempts[0].Status != 200 {
		t.Errorf("deliveries get --json: %+v", detail)
	}

	// A delivered delivery is resent: back in the queue, then delivered again by the worker.
	retry := e.run(token, "deliveries", "retry", oldest)
	want(t, "deliveries retry of a delivered one", retry, 0, []string{"queued " + oldest + " again: pending, next attempt at "}, nil)
	eventually(t, "the resend delivered", func() bool {
		d := e.delivery(tenant, oldest)
		return d.State == client.DeliveryStateDelivered && d.TotalAttempts == 2
	})
	retryJSON := e.run(token, "deliveries", "retry", newest, "--json")
	var answer client.RetryAnswer
	if err := json.Unmarshal([]byte(retryJSON.stdout), &answer); err != nil || retryJSON.code != 0 || answer.ID != newest || answer.State != "pending" {
		t.Errorf("deliveries retry --json: %v, %+v\n%s", err, answer, retryJSON)
	}
}

// tail: started, then an event published to a paused subscription; a line for the pending delivery
// appears, and another once the subscription is resumed and the delivery delivered, in both the human and
// the JSON form; SIGINT ends it with status 0.
func TestTail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	tenant := e.newTenant("cli-tail")
	sub := e.subscription(tenant, receiver(t, 200), false)
	token := e.newToken(tenant, client.ScopeDeliveriesRead)
	// A delivery from before tail starts: tail shows what happens from its start on, not this.
	before, err := e.admin.Publish(t.Context(), tenant, "before.tail", map[string]any{}, client.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(tenant, before.Deliveries[0].ID, client.DeliveryStateDelivered)
	// Paused, the subscription keeps the next delivery pending until the test resumes it: a change tail
	// must see, whatever its timing.
	if _, err := e.admin.PauseSubscriptionWithResponse(t.Context(), tenant, sub, nil); err != nil {
		t.Fatal(err)
	}

	type tail struct {
		cmd            *exec.Cmd
		stdout, stderr *output
	}
	start := func(args ...string) tail {
		tl := tail{stdout: newOutput(), stderr: newOutput()}
		tl.cmd = exec.Command(bin, append([]string{"tail", "--interval", "100ms"}, args...)...)
		tl.cmd.Env = []string{"HOOKLINE_URL=" + e.base, "HOOKLINE_TOKEN=" + token}
		tl.cmd.Stdout, tl.cmd.Stderr = tl.stdout, tl.stderr
		if err := tl.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if tl.cmd.ProcessState == nil {
				_ = tl.cmd.Process.Kill()
				_ = tl.cmd.Wait()
			}
		})
		tl.stderr.waitFor(t, "tail to start", 30*time.Second, func(s string) bool {
			return strings.Contains(s, "following the deliveries of tenant "+tenant)
		})
		return tl
	}
	human, asJSON := start(), start("--json")

	p, err := e.admin.Publish(t.Context(), tenant, "order.tailed", map[string]any{"n": 1}, client.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := p.Deliveries[0].ID
	human.stdout.waitFor(t, "the delivery pending in tail's output", 30*time.Second, func(s string) bool {
		return regexp.MustCompile(`(?m)^\S+  ` + id + `  order\.tailed  pending  attempts 0  -$`).MatchString(s)
	})
	asJSON.stdout.waitFor(t, "the delivery pending in tail --json's output", 30*time.Second, func(s string) bool {
		return strings.Contains(s, `"state":"pending"`)
	})
	if _, err := e.admin.ResumeSubscriptionWithResponse(t.Context(), tenant, sub, nil); err != nil {
		t.Fatal(err)
	}
	human.stdout.waitFor(t, "the delivery delivered in tail's output", 30*time.Second, func(s string) bool {
		return regexp.MustCompile(`(?m)^\S+  ` + id + `  order\.tailed  delivered  attempts 1  HTTP 200$`).MatchString(s)
	})
	asJSON.stdout.waitFor(t, "the delivery delivered in tail --json's output", 30*time.Second, func(s string) bool {
		return strings.Contains(s, `"state":"delivered"`)
	})

	for name, tl := range map[string]tail{"tail": human, "tail --json": asJSON} {
		if err := tl.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- tl.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s after SIGINT: %v, want exit status 0\nstderr:\n%s", name, err, tl.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not stop after SIGINT", name)
		}
		out := tl.stdout.String()
		if strings.Contains(out, before.Deliveries[0].ID) {
			t.Errorf("%s printed the delivery made before it started:\n%s", name, out)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		last := lines[len(lines)-1]
		if !strings.Contains(last, id) || !strings.Contains(last, "delivered") {
			t.Errorf("%s: the last line is %q, want the delivery delivered", name, last)
		}
		if name != "tail --json" {
			continue
		}
		var states []client.DeliveryState
		for _, l := range lines {
			var d client.Delivery
			if err := json.Unmarshal([]byte(l), &d); err != nil {
				t.Fatalf("tail --json printed a line that is not a delivery: %q: %v", l, err)
			}
			if d.ID != id {
				t.Errorf("tail --json printed delivery %s, want only %s", d.ID, id)
			}
			states = append(states, d.State)
		}
		// A line for each change, from pending to delivered (in flight between, when a read caught it).
		if !slices.Equal(states, []client.DeliveryState{"pending", "delivered"}) &&
			!slices.Equal(states, []client.DeliveryState{"pending", "in_flight", "delivered"}) {
			t.Errorf("tail --json printed the states %v, want pending, (in_flight,) delivered", states)
		}
	}
}

// replay (admin): a dry run previews the dead delivery and changes nothing; the real one puts it back in
// the queue; a tenant token is refused with the API's message.
func TestReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	tenant := e.newTenant("cli-replay")
	sub := e.subscription(tenant, receiver(t, 400), false)
	p, err := e.admin.Publish(t.Context(), tenant, "order.failed", map[string]any{}, client.PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := p.Deliveries[0].ID
	e.waitState(tenant, id, client.DeliveryStateFailed)
	from := p.CreatedAt.Add(-time.Hour).UTC().Format(time.RFC3339)
	to := p.CreatedAt.Add(time.Hour).UTC().Format(time.RFC3339)

	dry := e.run(adminToken, "replay", "--from", from, "--to", to, "--subscription", sub, "--dry-run")
	want(t, "replay --dry-run", dry, 0, []string{"dry run ", ": 1 dead delivery would be replayed; nothing was changed", "the newest 1:", id}, nil)
	if d := e.delivery(tenant, id); d.State != client.DeliveryStateFailed || d.ReplayID != nil {
		t.Errorf("after a dry run the delivery is %s (replay %v), want failed and untouched", d.State, d.ReplayID)
	}
	var preview client.Replay
	dryJSON := e.run(adminToken, "--json", "replay", "--dry-run", "--from", from, "--to", to, "--tenant", tenant)
	if err := json.Unmarshal([]byte(dryJSON.stdout), &preview); err != nil || dryJSON.code != 0 {
		t.Fatalf("replay --dry-run --json: %v\n%s", err, dryJSON)
	}
	if !preview.DryRun || preview.Matched != 1 || preview.Sample == nil || !slices.Equal(*preview.Sample, []string{id}) ||
		preview.Criteria.TenantID == nil || *preview.Criteria.TenantID != tenant {
		t.Errorf("replay --dry-run --json: %+v", preview)
	}

	replayed := e.run(adminToken, "replay", "--from", from, "--to", to, "--subscription", sub)
	want(t, "replay", replayed, 0, []string{"replay ", ": 1 dead delivery matched", "first attempts spread over 300 s"}, nil)
	replayID := strings.Fields(replayed.stdout)[1]
	eventually(t, "the delivery replayed", func() bool {
		d := e.delivery(tenant, id)
		return d.ReplayID != nil && *d.ReplayID == replayID && d.State == client.DeliveryStatePending
	})

	refused := e.run(e.newToken(tenant, allScopes...), "replay", "--from", from, "--to", to)
	want(t, "replay with a tenant token", refused, 1, nil, []string{"hookline: "})
	_, apiErr := e.client(e.newToken(tenant, allScopes...)).StartReplayWithResponse(t.Context(), nil, client.StartReplayJSONRequestBody{CreatedFrom: p.CreatedAt, CreatedTo: p.CreatedAt.Add(time.Second)})
	if apiErr == nil || refused.stderr != "hookline: "+apiErr.Error()+"\n" {
		t.Errorf("replay with a tenant token printed %q, want the API's message %v", refused.stderr, apiErr)
	}
	want(t, "replay without --to", e.run(adminToken, "replay", "--from", from), 2, nil, []string{"--to is missing", "usage: hookline replay --from"})
	want(t, "replay with a bad time", e.run(adminToken, "replay", "--from", "yesterday", "--to", to), 2, nil, []string{`--from "yesterday" is not an RFC 3339 time`})
}

// client is an SDK client of the server holding token, on a transport whose idle connections close
// when the test ends.
func (e *env) client(token string) *client.Client {
	e.t.Helper()
	tr := &http.Transport{}
	e.t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(e.base, token, client.WithHTTP(&http.Client{Transport: tr, Timeout: 20 * time.Second}))
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// event-types import (admin; a dry run first) and list; a webhook that cannot become a type is named on
// stderr with exit status 1, the others imported.
func TestEventTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-event-types")
	prefix := "cli" + strings.ReplaceAll(tenant, "-", "")[20:] // a UUIDv7's random end
	doc := filepath.Join(t.TempDir(), "openapi.yaml")
	yaml := fmt.Sprintf(`openapi: 3.1.0
info: {title: Shop, version: "1"}
webhooks:
  %[1]s.order.created:
    post:
      summary: An order was placed
      requestBody:
        content:
          application/json:
            schema: {type: object, required: [id], properties: {id: {type: string}}}
            example: {id: ord_1}
  %[1]s.order.shipped:
    post:
      summary: An order was shipped
`, prefix)
	if err := os.WriteFile(doc, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	created, shipped := prefix+".order.created", prefix+".order.shipped"

	dry := e.run(adminToken, "event-types", "import", doc, "--dry-run")
	want(t, "event-types import --dry-run", dry, 0, []string{"dry run: nothing was changed", "created: " + created + ", " + shipped}, nil)
	token := e.newToken(tenant, client.ScopeDeliveriesRead)
	if l := e.run(token, "event-types", "list"); strings.Contains(l.stdout, created) {
		t.Errorf("after a dry run the catalogue lists %s:\n%s", created, l)
	}
	imported := e.run(adminToken, "event-types", "import", doc)
	want(t, "event-types import", imported, 0, []string{"created: " + created + ", " + shipped}, nil)
	if strings.Contains(imported.stdout, "dry run") || imported.stderr != "" {
		t.Errorf("event-types import: %s", imported)
	}
	want(t, "event-types import again", e.run(adminToken, "event-types", "import", doc), 0, []string{"unchanged: " + created + ", " + shipped}, nil)

	list := e.run(token, "event-types", "list")
	want(t, "event-types list", list, 0, []string{"NAME", created, shipped, "An order was placed", prefix}, nil)
	var catalogue struct {
		Items []client.CatalogueEventType `json:"items"`
	}
	listJSON := e.run(token, "event-types", "list", "--json")
	if err := json.Unmarshal([]byte(listJSON.stdout), &catalogue); err != nil || listJSON.code != 0 {
		t.Fatalf("event-types list --json: %v\n%s", err, listJSON)
	}
	if i := slices.IndexFunc(catalogue.Items, func(et client.CatalogueEventType) bool { return et.Name == created }); i < 0 ||
		catalogue.Items[i].Schema == nil || catalogue.Items[i].Description != "An order was placed" {
		t.Errorf("event-types list --json lacks %s with its schema: %s", created, listJSON.stdout)
	}

	// JSON documents too; a webhook with a bad name is named, the rest imported.
	partly := filepath.Join(t.TempDir(), "partly.json")
	if err := os.WriteFile(partly, fmt.Appendf(nil, `{"openapi": "3.1.0", "webhooks": {"%s.refunded": {"post": {"summary": "Refunded"}}, "bad name here": {"post": {}}}}`, prefix), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run(adminToken, "event-types", "import", partly)
	want(t, "event-types import of a partly bad document", r, 1, []string{"created: " + prefix + ".refunded"}, []string{"hookline: 1 webhook could not be imported:", "bad name here"})

	refused := e.run(token, "event-types", "import", doc)
	want(t, "event-types import with a tenant token", refused, 1, nil, []string{"hookline: "})
	if strings.Contains(refused.stdout, "created") {
		t.Errorf("a refused import printed %q", refused.stdout)
	}
	want(t, "event-types import of a missing file", e.run(adminToken, "event-types", "import", filepath.Join(t.TempDir(), "none.yaml")), 1, nil, []string{"no such file"})
}

// Bad usage: exit status 2, a message and the usage line on stderr, nothing on stdout; --help: usage on
// stdout, status 0, no server needed.
func TestUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-usage")
	token := e.newToken(tenant, allScopes...)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"hookline: a command is missing", "commands: publish, deliveries, tail, replay, event-types, listen, version"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{[]string{"deliveries"}, []string{"hookline deliveries: a command is missing", "commands: list, get, retry"}},
		{[]string{"deliveries", "erase"}, []string{`unknown command "erase"`}},
		{[]string{"deliveries", "list", "--frobnicate"}, []string{"unknown flag --frobnicate", "usage: hookline deliveries list"}},
		{[]string{"deliveries", "list", "--limit", "0"}, []string{"--limit must be 1 or more"}},
		{[]string{"deliveries", "list", "--subscription", "x"}, []string{`--subscription "x" is not an id`}},
		{[]string{"deliveries", "get"}, []string{"the delivery id is missing", "usage: hookline deliveries get <id>"}},
		{[]string{"deliveries", "retry", "a", "b"}, []string{`unexpected argument "b"`}},
		{[]string{"publish", "--data", "{}"}, []string{"the event type is missing", "usage: hookline publish <type>"}},
		{[]string{"publish", "order.created"}, []string{"--data is missing"}},
		{[]string{"publish", "order.created", "--data", "{not json"}, []string{"--data is not JSON"}},
		{[]string{"publish", "order.created", "--data"}, []string{"--data needs a value"}},
		{[]string{"tail", "--interval", "soon"}, []string{`bad value "soon" for --interval`}},
		{[]string{"event-types", "import"}, []string{"the OpenAPI document (a file) is missing"}},
		{[]string{"version", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"listen", "--port", "3000"}, []string{"unknown flag --port"}},
		{[]string{"listen"}, []string{"--forward-to is missing"}},
		{[]string{"listen", "--forward-to", "localhost:3000"}, []string{`--forward-to "localhost:3000" is not an http or https URL`}},
		{[]string{"listen", "--forward-to", "http://localhost:3000", "--name", "my laptop"}, []string{`--name "my laptop" is not 1 to 64 letters`}},
		{[]string{"listen", "--forward-to", "http://localhost:3000", "--interval", "0s"}, []string{`bad value "0s" for --interval: not a positive duration`}},
		{[]string{"listen", "--forward-to", "http://localhost:3000", "extra"}, []string{`unexpected argument "extra"`}},
	} {
		r := e.run(token, c.args...)
		want(t, "hookline "+strings.Join(c.args, " "), r, 2, nil, append(c.want, "usage: "))
		if r.stdout != "" {
			t.Errorf("hookline %s printed on stdout: %q", strings.Join(c.args, " "), r.stdout)
		}
	}

	// An admin token reaches every tenant: a tenant command must be told which.
	want(t, "deliveries list with the admin token", e.run(adminToken, "deliveries", "list"), 2, nil,
		[]string{"this is an admin token, which reaches every tenant: say which with --tenant <id>"})
	want(t, "deliveries list with the admin token and --tenant", e.run(adminToken, "deliveries", "list", "--tenant", tenant), 0, []string{"no deliveries"}, nil)
	// No configuration: the command says which variable to set.
	want(t, "no HOOKLINE_URL", runBinary(t, nil, nil, "deliveries", "list"), 2, nil, []string{"no server: set HOOKLINE_URL or give --url"})
	want(t, "no HOOKLINE_TOKEN", runBinary(t, nil, nil, "deliveries", "list", "--url", e.base), 2, nil, []string{"no token: set HOOKLINE_TOKEN or give --token"})
	// --url and --token instead of the environment.
	want(t, "--url and --token", runBinary(t, nil, nil, "--url", e.base, "deliveries", "--token", token, "list"), 0, []string{"no deliveries"}, nil)

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"usage: hookline <command>", "publish", "deliveries list|get|retry", "--url URL", "Exit status: 0"}},
		{[]string{"help"}, []string{"usage: hookline <command>"}},
		{[]string{"-h"}, []string{"usage: hookline <command>"}},
		{[]string{"publish", "--help"}, []string{"usage: hookline publish <type> --data", "--idempotency-key", "--ordering-key"}},
		{[]string{"deliveries", "--help"}, []string{"usage: hookline deliveries <command>", "deliveries retry <id>"}},
		{[]string{"help", "deliveries", "list"}, []string{"usage: hookline deliveries list", "--state states"}},
		{[]string{"deliveries", "list", "-h"}, []string{"usage: hookline deliveries list", "--cursor"}},
		{[]string{"--help", "tail"}, []string{"usage: hookline tail", "--interval"}},
		{[]string{"listen", "--help"}, []string{"usage: hookline listen --forward-to", "--events types", "--name name", "signing secret", "at least once"}},
	} {
		r := runBinary(t, nil, nil, c.args...)
		want(t, "hookline "+strings.Join(c.args, " "), r, 0, c.want, nil)
		if r.stderr != "" {
			t.Errorf("hookline %s printed on stderr: %q", strings.Join(c.args, " "), r.stderr)
		}
	}
}

// An API error: exit status 1 and the API's own message on stderr (client.APIError.Error()).
func TestAPIError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	tenant := e.newTenant("cli-api-error")
	reader := e.newToken(tenant, client.ScopeDeliveriesRead)
	unknown := "00000000-0000-0000-0000-000000000000"
	for _, c := range []struct {
		what  string
		token string
		args  []string
		call  func(c *client.Client) error
	}{
		{"an unknown delivery", reader, []string{"deliveries", "get", unknown}, func(c *client.Client) error {
			_, err := c.GetDeliveryWithResponse(t.Context(), tenant, unknown, nil)
			return err
		}},
		{"a token lacking the scope", reader, []string{"deliveries", "retry", unknown}, func(c *client.Client) error {
			_, err := c.RetryDeliveryWithResponse(t.Context(), tenant, unknown, nil)
			return err
		}},
		{"an unknown token", "hl_not-a-token", []string{"deliveries", "list"}, func(c *client.Client) error {
			_, err := c.Me(t.Context())
			return err
		}},
		{"a malformed state", reader, []string{"deliveries", "list", "--state", "lost"}, func(c *client.Client) error {
			states := []client.StateFilter{"lost"}
			_, err := c.ListDeliveriesWithResponse(t.Context(), tenant, &client.ListDeliveriesParams{State: &states})
			return err
		}},
	} {
		r := e.run(c.token, c.args...)
		apiErr := c.call(e.client(c.token))
		if apiErr == nil {
			t.Fatalf("%s: the API accepted it", c.what)
		}
		if r.code != 1 || r.stdout != "" || r.stderr != "hookline: "+apiErr.Error()+"\n" {
			t.Errorf("%s: want exit 1 and the API's message %q; got %s", c.what, apiErr.Error(), r)
		}
	}

	// The payload's schema problems are listed under the message, each where it is.
	name := "cli." + strings.ReplaceAll(tenant, "-", "")[20:] + ".typed"
	schema := map[string]any{"type": "object", "required": []any{"id"}}
	if _, err := e.admin.CreateEventTypeWithResponse(t.Context(), nil, client.CreateEventTypeJSONRequestBody{Name: &name, Schema: &schema}); err != nil {
		t.Fatal(err)
	}
	r := e.run(e.newToken(tenant, client.ScopeEventsWrite), "publish", name, "--data", `{"amount": 1}`)
	want(t, "a payload against its schema", r, 1, nil, []string{"hookline: ", "  (the payload): "})

	// A server that cannot be reached is an error too, not bad usage.
	unreachable := runBinary(t, []string{"HOOKLINE_URL=http://127.0.0.1:1", "HOOKLINE_TOKEN=x"}, nil, "deliveries", "list")
	want(t, "an unreachable server", unreachable, 1, nil, []string{"hookline: ", "connection refused"})
}

// version prints the build in the server's shape; the binary imports nothing of internal/, being built
// on the SDK alone.
func TestVersion(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, nil, "version")
	if r.code != 0 || !regexp.MustCompile(`^hookline \S+ commit \S+( \(modified\))? go\S+ \w+/\w+\n$`).MatchString(r.stdout) {
		t.Errorf("hookline version: %s", r)
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/hookline/hookline/") && pkg != "github.com/hookline/hookline/client" &&
			pkg != "github.com/hookline/hookline/cmd/hookline" {
			t.Errorf("cmd/hookline depends on %s: it is built on the SDK (client) alone", pkg)
		}
	}
}
