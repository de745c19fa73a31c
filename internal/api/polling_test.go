package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/tenants"
)

// pollPage is a poll's answer.
type pollPage struct {
	Data []struct {
		DeliveryID string          `json:"delivery_id"`
		EventID    string          `json:"event_id"`
		EventType  string          `json:"event_type"`
		Timestamp  time.Time       `json:"timestamp"`
		Payload    json.RawMessage `json:"payload"`
	} `json:"data"`
	Cursor string `json:"cursor"`
	Done   bool   `json:"done"`
}

type consumerPage struct {
	Items []struct {
		Name         string     `json:"name"`
		Cursor       string     `json:"cursor"`
		CommittedAt  *time.Time `json:"committed_at"`
		LastPolledAt *time.Time `json:"last_polled_at"`
		Lag          int        `json:"lag"`
	} `json:"items"`
}

func pollPath(tenantID, subID, consumer string, limit int) string {
	return fmt.Sprintf("/tenants/%s/subscriptions/%s/poll?consumer=%s&limit=%d", tenantID, subID, url.QueryEscape(consumer), limit)
}

// pollFor polls until the page holds at least want deliveries (a poll answers only deliveries of
// transactions older than every transaction still running anywhere on the server, so a delivery just
// published may wait for another test's open transaction to end), and returns it.
func (e *env) pollFor(tenantID, subID, consumer string, limit, want int) pollPage {
	e.t.Helper()
	var p pollPage
	if !eventually(10*time.Second, 10*time.Millisecond, func() bool {
		p = must[pollPage](e, 200, "GET", pollPath(tenantID, subID, consumer, limit), adminToken, nil)
		return len(p.Data) >= want
	}) {
		e.t.Fatalf("poll of %s: %d deliveries, want %d", consumer, len(p.Data), want)
	}
	return p
}

func commitPath(tenantID, subID, consumer string) string {
	return "/tenants/" + tenantID + "/subscriptions/" + subID + "/consumers/" + consumer + "/commit"
}

func TestPollingSubscriptionSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("polling settings")
	base := "/tenants/" + tn + "/subscriptions"

	r := e.call("POST", base, adminToken, map[string]any{"type": "polling", "event_types": []string{"order.*"}, "description": "pulled"})
	if r.status != 201 {
		t.Fatalf("create polling: %s", r)
	}
	var created map[string]any
	_ = json.Unmarshal(r.body, &created)
	if created["type"] != "polling" || created["url"] != nil || created["secret"] == "" {
		t.Errorf("polling subscription answer: %s", r)
	}
	if _, ok := created["url"]; !ok {
		t.Errorf("url must be present (null): %s", r)
	}
	id := created["id"].(string)

	// Push-only settings are refused on create, with the field named.
	for field, v := range map[string]any{
		"url": "https://example.com/hook", "headers": map[string]string{"X-Key": "v"}, "rate_limit_per_second": 5,
		"auth": map[string]any{"type": "basic", "username": "u", "password": "p"}, "retry_schedule": []string{"1m"},
	} {
		r := e.call("POST", base, adminToken, map[string]any{"type": "polling", field: v})
		if e := wantError(t, "polling with "+field, r, "INVALID_REQUEST"); e.Error.Message != "" && !strings.Contains(e.Error.Message, field) {
			t.Errorf("polling with %s: message does not name it: %s", field, r)
		}
	}
	wantError(t, "unknown type", e.call("POST", base, adminToken, map[string]any{"type": "carrier-pigeon"}), "INVALID_REQUEST")
	wantError(t, "webhook without url", e.call("POST", base, adminToken, map[string]any{"type": "webhook"}), "INVALID_REQUEST")
	hook := e.newSubscription(tn, map[string]any{"url": "https://example.com/hook"})
	var hookAnswer map[string]any
	_ = json.Unmarshal(e.call("GET", base+"/"+hook.ID, adminToken, nil).body, &hookAnswer)
	if hookAnswer["type"] != "webhook" || hookAnswer["url"] != "https://example.com/hook" {
		t.Errorf("webhook subscription answer: %v", hookAnswer)
	}

	// PATCH: the type stays; push-only settings are refused on a polling subscription; others change.
	wantError(t, "patch type", e.call("PATCH", base+"/"+id, adminToken, map[string]any{"type": "webhook"}), "INVALID_REQUEST")
	wantError(t, "patch webhook type", e.call("PATCH", base+"/"+hook.ID, adminToken, map[string]any{"type": "polling"}), "INVALID_REQUEST")
	wantError(t, "patch url", e.call("PATCH", base+"/"+id, adminToken, map[string]any{"url": "https://example.com/x"}), "INVALID_REQUEST")
	r = e.call("PATCH", base+"/"+id, adminToken, map[string]any{"description": "renamed", "type": "polling"})
	if r.status != 200 {
		t.Fatalf("patch description: %s", r)
	}
	var patched map[string]any
	_ = json.Unmarshal(r.body, &patched)
	if patched["description"] != "renamed" || patched["url"] != nil || patched["type"] != "polling" {
		t.Errorf("patched: %s", r)
	}
}

func TestPollAndCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("poll and commit")
	sub := e.newSubscription(tn, map[string]any{"type": "polling", "event_types": []string{"order.*"}})
	var events []published
	for i := range 3 {
		events = append(events, e.publish(tn, "order.placed", map[string]any{"n": i, "text": "<b>é</b>"}))
	}
	if events[0].Deliveries[0].State != "pending" {
		t.Errorf("a polling delivery is answered %q, want pending", events[0].Deliveries[0].State)
	}

	p := e.pollFor(tn, sub.ID, "laptop", 2, 2)
	if len(p.Data) != 2 || p.Done || p.Data[0].EventID != events[0].ID || p.Data[1].EventID != events[1].ID {
		t.Fatalf("first page: %+v", p)
	}
	if string(p.Data[0].Payload) != `{"n":0,"text":"\u003cb\u003eé\u003c/b\u003e"}` || p.Data[0].EventType != "order.placed" ||
		p.Data[0].DeliveryID != events[0].Deliveries[0].ID || p.Data[0].Timestamp.IsZero() {
		t.Errorf("item: %+v (payload %s)", p.Data[0], p.Data[0].Payload)
	}
	// Not committed: pulled again (at least once).
	again := must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "laptop", 2), adminToken, nil)
	if len(again.Data) != 2 || again.Data[0].EventID != events[0].ID || again.Cursor != p.Cursor {
		t.Fatalf("a page not committed must come again: %+v", again)
	}
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "laptop"), adminToken, map[string]any{"cursor": p.Cursor})
	for _, ev := range events[:2] {
		d := e.delivery(tn, ev.Deliveries[0].ID)
		var raw struct {
			Attempts []struct {
				Outcome  string `json:"outcome"`
				Consumer string `json:"consumer"`
			} `json:"attempts"`
		}
		_ = json.Unmarshal(e.call("GET", "/tenants/"+tn+"/deliveries/"+ev.Deliveries[0].ID, adminToken, nil).body, &raw)
		if d.State != "delivered" || len(raw.Attempts) != 1 || raw.Attempts[0].Consumer != "laptop" || raw.Attempts[0].Outcome != "delivered" {
			t.Errorf("committed delivery: %s %+v", d.State, raw.Attempts)
		}
	}
	if d := e.delivery(tn, events[2].Deliveries[0].ID); d.State != "pending" {
		t.Errorf("the delivery after the cursor is %s", d.State)
	}
	// A cursor behind the committed one changes nothing; the same one again neither.
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "laptop"), adminToken, map[string]any{"cursor": p.Cursor})

	rest := e.pollFor(tn, sub.ID, "laptop", 2, 1)
	if len(rest.Data) != 1 || !rest.Done || rest.Data[0].EventID != events[2].ID {
		t.Fatalf("after the commit: %+v", rest)
	}
	// A new consumer starts at the oldest delivery not yet delivered.
	fresh := e.pollFor(tn, sub.ID, "ci", 100, 1)
	if len(fresh.Data) != 1 || fresh.Data[0].EventID != events[2].ID {
		t.Fatalf("a new consumer: %+v", fresh)
	}
	// Consumers: both, by name, with their lag.
	cs := must[consumerPage](e, 200, "GET", "/tenants/"+tn+"/subscriptions/"+sub.ID+"/consumers", adminToken, nil)
	if len(cs.Items) != 2 || cs.Items[0].Name != "ci" || cs.Items[1].Name != "laptop" || cs.Items[1].Lag != 1 ||
		cs.Items[1].CommittedAt == nil || cs.Items[0].CommittedAt != nil || cs.Items[0].LastPolledAt == nil || cs.Items[1].Cursor != p.Cursor {
		t.Errorf("consumers: %+v", cs)
	}

	// Every consumer gets every delivery: "ci" also gets the ones "laptop" committed when it starts
	// before them (a consumer that never polled commits laptop's first cursor, then polls).
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "late"), adminToken, map[string]any{"cursor": fresh.Cursor})
	if late := must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "late", 100), adminToken, nil); len(late.Data) != 0 || !late.Done {
		t.Errorf("a consumer committed at the end: %+v", late)
	}

	// A resent delivery gets a new position: consumers past it get it again.
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "laptop"), adminToken, map[string]any{"cursor": rest.Cursor})
	must[map[string]any](e, 202, "POST", "/tenants/"+tn+"/deliveries/"+events[0].Deliveries[0].ID+"/retry", adminToken, nil)
	resent := e.pollFor(tn, sub.ID, "laptop", 100, 1)
	if len(resent.Data) != 1 || resent.Data[0].EventID != events[0].ID {
		t.Fatalf("a resent delivery must be pulled again: %+v", resent)
	}
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "laptop"), adminToken, map[string]any{"cursor": resent.Cursor})
	if d := e.delivery(tn, events[0].Deliveries[0].ID); d.State != "delivered" || d.TotalAttempts != 2 {
		t.Errorf("the resent delivery after its commit: %s, %d attempts", d.State, d.TotalAttempts)
	}
}

func TestPollAndCommitRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("poll refusals")
	sub := e.newSubscription(tn, map[string]any{"type": "polling"})
	other := e.newSubscription(tn, map[string]any{"type": "polling"})
	hook := e.newSubscription(tn, map[string]any{"url": "https://example.com/hook"})
	for range 3 {
		e.publish(tn, "thing.happened", map[string]any{})
	}

	wantError(t, "poll a webhook subscription", e.call("GET", pollPath(tn, hook.ID, "a", 10), adminToken, nil), "INVALID_REQUEST")
	wantError(t, "consumers of a webhook subscription", e.call("GET", "/tenants/"+tn+"/subscriptions/"+hook.ID+"/consumers", adminToken, nil), "INVALID_REQUEST")
	wantError(t, "commit on a webhook subscription", e.call("POST", commitPath(tn, hook.ID, "a"), adminToken, map[string]any{"cursor": "x"}), "INVALID_REQUEST")
	for _, q := range []string{"", "?consumer=", "?consumer=a%20b", "?consumer=" + strings.Repeat("a", 65), "?consumer=a&limit=0",
		"?consumer=a&limit=501", "?consumer=a&limit=ten", "?consumer=a&limit="} {
		wantError(t, "poll "+q, e.call("GET", "/tenants/"+tn+"/subscriptions/"+sub.ID+"/poll"+q, adminToken, nil), "INVALID_REQUEST")
	}
	wantError(t, "unknown subscription", e.call("GET", pollPath(tn, uuid.NewString(), "a", 10), adminToken, nil), "NOT_FOUND")

	x := e.pollFor(tn, sub.ID, "x", 1, 1)
	y := e.pollFor(tn, sub.ID, "y", 2, 2)
	o := must[pollPage](e, 200, "GET", pollPath(tn, other.ID, "x", 1), adminToken, nil)
	for what, body := range map[string]any{
		"garbage cursor":                   map[string]any{"cursor": "not-a-cursor"},
		"empty cursor":                     map[string]any{"cursor": ""},
		"no cursor":                        map[string]any{},
		"another subscription's cursor":    map[string]any{"cursor": o.Cursor},
		"a cursor never given to consumer": map[string]any{"cursor": y.Cursor},
		"unknown field":                    map[string]any{"cursor": x.Cursor, "position": 1},
	} {
		wantError(t, what, e.call("POST", commitPath(tn, sub.ID, "x"), adminToken, body), "INVALID_REQUEST")
	}
	wantError(t, "bad consumer name", e.call("POST", commitPath(tn, sub.ID, "a%20b"), adminToken, map[string]any{"cursor": x.Cursor}), "INVALID_REQUEST")
	// A consumer that never polled may commit a valid cursor.
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "z"), adminToken, map[string]any{"cursor": y.Cursor})

	// Scopes: deliveries:read polls and lists, deliveries:write commits.
	read := e.newToken(tn, tenants.ScopeDeliveriesRead)
	must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "x", 1), read, nil)
	must[consumerPage](e, 200, "GET", "/tenants/"+tn+"/subscriptions/"+sub.ID+"/consumers", read, nil)
	wantError(t, "commit with deliveries:read", e.call("POST", commitPath(tn, sub.ID, "x"), read, map[string]any{"cursor": x.Cursor}), "FORBIDDEN")
	write := e.newToken(tn, tenants.ScopeDeliveriesWrite)
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "x"), write, map[string]any{"cursor": x.Cursor})

	// A paused subscription's deliveries wait: a poll is 409; a commit of what was pulled still counts.
	must[subscription](e, 200, "POST", "/tenants/"+tn+"/subscriptions/"+sub.ID+"/pause", adminToken, nil)
	wantError(t, "poll a paused subscription", e.call("GET", pollPath(tn, sub.ID, "y", 10), adminToken, nil), "INVALID_STATE")
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "y"), adminToken, map[string]any{"cursor": y.Cursor})
	must[subscription](e, 200, "POST", "/tenants/"+tn+"/subscriptions/"+sub.ID+"/resume", adminToken, nil)
	if p := e.pollFor(tn, sub.ID, "y", 10, 1); len(p.Data) != 1 {
		t.Errorf("after resume: %+v", p)
	}
}

// TestPollNeverPassesALaterCommittingTransaction holds a transaction that queues a polling delivery again
// (a resend: the delivery gets that transaction's position) while a later publish commits and a consumer
// polls and commits: the later publish must wait for the poll after the held transaction ends, and both
// then come, the resent one first. Ordered by commit or by id instead, the consumer's cursor would pass
// the resent delivery before it became visible, and it would never be pulled.
func TestPollNeverPassesALaterCommittingTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("poll horizon")
	sub := e.newSubscription(tn, map[string]any{"type": "polling"})
	a := e.publish(tn, "thing.a", map[string]any{"n": "a"})
	first := e.pollFor(tn, sub.ID, "c", 10, 1)
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "c"), adminToken, map[string]any{"cursor": first.Cursor})

	ctx := context.Background()
	tx, err := e.srv.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	q := db.New(tx)
	row, err := q.GetDelivery(ctx, db.GetDeliveryParams{ID: uuid.MustParse(a.Deliveries[0].ID), TenantID: uuid.MustParse(tn)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := q.RetryDelivery(ctx, db.RetryDeliveryParams{Now: now, GiveUpAt: now.Add(time.Hour), ID: row.ID, TenantID: row.TenantID,
		SeenTotalAttempts: row.TotalAttempts, SeenUpdatedAt: row.UpdatedAt, MaxManual: -1}); err != nil {
		t.Fatal(err)
	}

	b := e.publish(tn, "thing.b", map[string]any{"n": "b"}) // commits while the resend's transaction is open
	held := must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "c", 10), adminToken, nil)
	if len(held.Data) != 0 || !held.Done {
		t.Fatalf("a delivery of a transaction that commits after an earlier open one was answered: %+v", held)
	}
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "c"), adminToken, map[string]any{"cursor": held.Cursor})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	after := e.pollFor(tn, sub.ID, "c", 10, 2)
	if len(after.Data) != 2 || after.Data[0].EventID != a.ID || after.Data[1].EventID != b.ID {
		t.Fatalf("after the held transaction: %+v", after)
	}
}

// TestPollUnderConcurrentPublishers: 16 publishers publish to a polling subscription while one consumer
// pulls in pages of 7 and commits as it goes (every third page not committed, which must come again): in
// the end every event was pulled, none skipped, and every delivery is delivered by its commit.
func TestPollUnderConcurrentPublishers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("poll under load")
	sub := e.newSubscription(tn, map[string]any{"type": "polling"})
	const publishers, each = 16, 25
	publishedIDs := make(chan string, publishers*each)
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := e.call("POST", "/tenants/"+tn+"/events", adminToken, map[string]any{"event_type": "load.tick", "payload": map[string]any{"p": p, "i": i}})
				var ev published
				if r.status != 202 || json.Unmarshal(r.body, &ev) != nil {
					t.Errorf("publish: %s", r)
					return
				}
				publishedIDs <- ev.ID
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()

	pulled := map[string]int{}
	polls, nonEmpty, skipped := 0, 0, 0
	var uncommittedFirst string
	deadline := time.Now().Add(2 * time.Minute)
	for done := false; !done; {
		select {
		case <-finished:
			done = true
		default:
		}
		for {
			p := must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "worker", 7), adminToken, nil)
			polls++
			if len(p.Data) > 0 {
				nonEmpty++
			}
			if uncommittedFirst != "" {
				if len(p.Data) == 0 || p.Data[0].EventID != uncommittedFirst {
					t.Fatalf("a page pulled but not committed did not come again first: %+v", p)
				}
				uncommittedFirst = ""
			}
			for _, it := range p.Data {
				pulled[it.EventID]++
			}
			if len(p.Data) > 0 && polls%3 == 0 {
				uncommittedFirst = p.Data[0].EventID // not committed: must come again
				skipped++
				continue
			}
			must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "worker"), adminToken, map[string]any{"cursor": p.Cursor})
			if p.Done {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer did not catch up within 2 minutes")
		}
	}
	// The publishers are done: the consumer goes on until a poll is done and everything published was
	// pulled (a poll may hold back the newest deliveries while another transaction on the server is open),
	// or 30 s have passed.
	close(publishedIDs)
	want := map[string]bool{}
	for id := range publishedIDs {
		want[id] = true
	}
	missing := func() (n int) {
		for id := range want {
			if pulled[id] == 0 {
				n++
			}
		}
		return n
	}
	for end := time.Now().Add(30 * time.Second); ; {
		p := must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "worker", 7), adminToken, nil)
		polls++
		if len(p.Data) > 0 {
			nonEmpty++
		}
		for _, it := range p.Data {
			pulled[it.EventID]++
		}
		must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "worker"), adminToken, map[string]any{"cursor": p.Cursor})
		if p.Done && (missing() == 0 || time.Now().After(end)) {
			break
		}
	}
	for id := range want {
		if pulled[id] == 0 {
			t.Errorf("event %s was never pulled", id)
		}
	}
	for id := range pulled {
		if !want[id] {
			t.Errorf("pulled %s, which was not published", id)
		}
	}
	if len(want) != publishers*each {
		t.Errorf("%d events published, want %d", len(want), publishers*each)
	}
	var pending, delivered int
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'delivered')
		FROM webhook_deliveries WHERE subscription_id = $1`, sub.ID).Scan(&pending, &delivered); err != nil {
		t.Fatal(err)
	}
	if pending != 0 || delivered != publishers*each {
		t.Errorf("after the last commit: %d pending, %d delivered", pending, delivered)
	}
	t.Logf("%d events, %d polls (%d with deliveries; %d pages left uncommitted and pulled again)", len(want), polls, nonEmpty, skipped)
}

// A poll's answer holds at most 4 MiB of payloads (its first delivery always): 20 payloads of 240 KiB
// come over two pages whatever the limit, the first saying it is not done.
func TestPollPageIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("poll page bytes")
	sub := e.newSubscription(tn, map[string]any{"type": "polling"})
	big := strings.Repeat("x", 240<<10)
	for i := range 20 {
		e.publish(tn, "order.placed", map[string]any{"n": i, "pad": big})
	}
	e.pollFor(tn, sub.ID, "sizer", 500, 1) // every publish visible to polls
	var first pollPage
	if !eventually(10*time.Second, 10*time.Millisecond, func() bool {
		first = must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "sizer", 500), adminToken, nil)
		return len(first.Data) >= 16
	}) {
		t.Fatalf("first page: %d deliveries", len(first.Data))
	}
	size := 0
	for _, d := range first.Data {
		size += len(d.Payload)
	}
	if len(first.Data) >= 20 || size > 4<<20 || first.Done {
		t.Fatalf("first page: %d deliveries, %d payload bytes, done %v; want fewer than 20, at most 4 MiB, not done", len(first.Data), size, first.Done)
	}
	must[map[string]any](e, 204, "POST", commitPath(tn, sub.ID, "sizer"), adminToken, map[string]any{"cursor": first.Cursor})
	rest := must[pollPage](e, 200, "GET", pollPath(tn, sub.ID, "sizer", 500), adminToken, nil)
	if len(first.Data)+len(rest.Data) != 20 || !rest.Done {
		t.Errorf("second page: %d deliveries (done %v) after %d; want the other %d, done", len(rest.Data), rest.Done, len(first.Data), 20-len(first.Data))
	}
}
