package api_test

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// activityEntry is an entry of GET /tenants/{t}/activity.
type activityEntry struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	Action string    `json:"action"`
	Object struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"object"`
	Actor struct {
		Kind  string `json:"kind"`
		ID    string `json:"id"`
		Email string `json:"email"`
		Name  string `json:"name"`
	} `json:"actor"`
	CorrelationID string         `json:"correlation_id"`
	Details       map[string]any `json:"details"`
}

type activityPage struct {
	Items      []activityEntry `json:"items"`
	NextCursor string          `json:"next_cursor"`
}

// activity reads every entry of a tenant's log (newest first), following the cursor.
func (e *env) activity(tenantID, token string, query url.Values) []activityEntry {
	e.t.Helper()
	var out []activityEntry
	for {
		p := must[activityPage](e, 200, "GET", "/tenants/"+tenantID+"/activity?"+query.Encode(), token, nil)
		out = append(out, p.Items...)
		if p.NextCursor == "" {
			return out
		}
		query.Set("cursor", p.NextCursor)
	}
}

// lastActivity is the newest entry of action in a tenant's log; it fails the test when there is none.
func (e *env) lastActivity(tenantID, action string) activityEntry {
	e.t.Helper()
	got := e.activity(tenantID, adminToken, url.Values{"action": {action}})
	if len(got) == 0 {
		e.t.Fatalf("no %s entry in the activity log", action)
	}
	return got[0]
}

// TestActivityRecordsEachAPIChange makes each change the API offers and finds its entry: the action, the
// object, the actor (the token by id and name, or the admin) and the request's correlation id.
func TestActivityRecordsEachAPIChange(t *testing.T) {
	t.Parallel()
	a := newActivityWorld(t)
	a.tokenChanges(t)
	a.operatorChanges(t)
	a.discardAndRefusals(t)
}

// activityWorld is a tenant with a token (ci-bot) holding every scope, its subscription sub and one whose
// endpoint answers 400, and a delivery dead there.
type activityWorld struct {
	e         *env
	tid, base string
	tok       struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	sub, dead subscription
	deadID    string
}

// newActivityWorld makes the world, checking the entries of the two subscriptions' creation: by the token
// with the correlation id it sent, and by the admin.
func newActivityWorld(t *testing.T) *activityWorld {
	e := newEnv(t, withBackground)
	rc := newReceiver(t, func(path string, _ int) int {
		if strings.HasSuffix(path, "/dead") {
			return 400 // permanent: dead at once
		}
		return 200
	})
	a := &activityWorld{e: e, tid: e.newTenant("activity")}
	a.base = "/tenants/" + a.tid
	a.tok = must[struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}](e, 201, "POST", a.base+"/tokens", adminToken, map[string]any{"name": "ci-bot",
		"scopes": []string{"subscriptions:read", "subscriptions:write", "events:write", "deliveries:read", "deliveries:write", "portal:write"}})

	a.sub = must[subscription](e, 201, "POST", a.base+"/subscriptions", a.tok.Token,
		map[string]any{"url": rc.URL + "/ok"}, "X-Correlation-ID", "corr-create")
	created := e.lastActivity(a.tid, "subscription.created")
	if created.Object.Type != "subscription" || created.Object.ID != a.sub.ID || created.CorrelationID != "corr-create" ||
		created.Actor.Kind != "token" || created.Actor.ID != a.tok.ID || created.Actor.Name != "ci-bot" {
		t.Fatalf("created: %+v", created)
	}
	if created.Details["url"] != rc.URL+"/ok" {
		t.Errorf("created details %v, want the url", created.Details)
	}
	a.dead = must[subscription](e, 201, "POST", a.base+"/subscriptions", adminToken, map[string]any{"url": rc.URL + "/dead"})
	if got := e.lastActivity(a.tid, "subscription.created"); got.Object.ID != a.dead.ID || got.Actor.Kind != "admin" {
		t.Fatalf("created by admin: %+v", got)
	}

	// A dead delivery for resend and discard.
	p := e.publish(a.tid, "order.paid", map[string]any{})
	for _, d := range p.Deliveries {
		if d.SubscriptionID == a.dead.ID {
			a.deadID = d.ID
		}
	}
	e.waitState(a.tid, a.deadID, "failed")
	return a
}

// tokenChanges makes the token's changes, each with a correlation id of its own, and finds each entry.
func (a *activityWorld) tokenChanges(t *testing.T) {
	e := a.e
	type step struct {
		method, path string
		body         any
		status       int
		action       string
		objectType   string
	}
	subPath := a.base + "/subscriptions/" + a.sub.ID
	for _, s := range []step{
		{"PATCH", subPath, map[string]any{"description": "orders"}, 200, "subscription.changed", "subscription"},
		{"POST", subPath + "/pause", nil, 200, "subscription.paused", "subscription"},
		{"POST", subPath + "/resume", nil, 200, "subscription.resumed", "subscription"},
		{"POST", subPath + "/rotate-secret", nil, 200, "secret.rotated", "subscription"},
		{"POST", a.base + "/deliveries/" + a.deadID + "/retry", nil, 202, "delivery.resent", "delivery"},
		{"POST", a.base + "/subscriptions/" + a.dead.ID + "/recover", map[string]any{"since": time.Now().Add(-time.Hour).Format(time.RFC3339)}, 201, "recover.started", "recover"},
		{"POST", a.base + "/portal-links", map[string]any{"role": "view", "user": map[string]any{"id": "u-7", "email": "ann@example.com", "name": "Ann"}}, 201, "portal_link.created", "portal_link"},
		{"DELETE", a.base + "/portal-sessions", nil, 204, "portal_sessions.ended", "tenant"},
		{"DELETE", subPath, nil, 204, "subscription.deleted", "subscription"},
	} {
		corr := "corr-" + strings.ReplaceAll(s.action, ".", "-")
		if s.action == "recover.started" {
			// The resend above must have failed again before the recover can find it dead.
			e.waitState(a.tid, a.deadID, "failed")
		}
		if r := e.call(s.method, s.path, a.tok.Token, s.body, "X-Correlation-ID", corr); r.status != s.status {
			t.Fatalf("%s %s: want %d, got %s", s.method, s.path, s.status, r)
		}
		got := e.lastActivity(a.tid, s.action)
		if got.CorrelationID != corr || got.Actor.Kind != "token" || got.Actor.Name != "ci-bot" || got.Object.Type != s.objectType || got.Object.ID == "" {
			t.Errorf("%s: entry %+v, want correlation %s by token ci-bot on a %s", s.action, got, corr, s.objectType)
		}
	}
}

// operatorChanges checks the operator's changes to the tenant (its tokens and users) and the details of
// the token's changes.
func (a *activityWorld) operatorChanges(t *testing.T) {
	e := a.e
	if got := e.lastActivity(a.tid, "token.created"); got.Object.ID != a.tok.ID || got.Actor.Kind != "admin" || got.Details["name"] != "ci-bot" {
		t.Errorf("token created: %+v", got)
	}
	u := must[struct {
		ID string `json:"id"`
	}](e, 201, "POST", a.base+"/users", adminToken, map[string]any{"email": "ann@example.com", "password": "a-long-password-1"}, "X-Correlation-ID", "corr-user")
	if got := e.lastActivity(a.tid, "user.created"); got.Object.ID != u.ID || got.CorrelationID != "corr-user" || got.Details["email"] != "ann@example.com" {
		t.Errorf("user created: %+v", got)
	}
	spare := must[struct {
		ID string `json:"id"`
	}](e, 201, "POST", a.base+"/tokens", adminToken, map[string]any{"name": "spare", "scopes": []string{"events:write"}})
	must[any](e, 204, "DELETE", a.base+"/tokens/"+spare.ID, adminToken, nil)
	if got := e.lastActivity(a.tid, "token.revoked"); got.Object.ID != spare.ID {
		t.Errorf("token revoked: %+v", got)
	}
	if got := e.lastActivity(a.tid, "subscription.changed"); got.Details["fields"] == nil || got.Object.ID != a.sub.ID {
		t.Errorf("changed: %+v, want the fields named", got)
	}
	if got := e.lastActivity(a.tid, "portal_link.created"); !strings.Contains(got.Details["user"].(map[string]any)["name"].(string), "Ann") {
		t.Errorf("portal link: %+v, want the person the link is for", got)
	}
}

// discardAndRefusals discards the dead delivery, and checks that refused changes and reads record nothing.
func (a *activityWorld) discardAndRefusals(t *testing.T) {
	e := a.e
	// Discard: the resent delivery died again.
	e.waitState(a.tid, a.deadID, "failed")
	must[any](e, 204, "DELETE", a.base+"/deliveries/"+a.deadID, a.tok.Token, nil)
	if got := e.lastActivity(a.tid, "delivery.discarded"); got.Object.ID != a.deadID {
		t.Errorf("discarded: %+v", got)
	}

	// Refused changes record nothing: pausing a deleted subscription, resending a discarded delivery.
	before := len(e.activity(a.tid, adminToken, url.Values{}))
	e.call("POST", a.base+"/subscriptions/"+a.sub.ID+"/pause", a.tok.Token, nil)
	e.call("POST", a.base+"/deliveries/"+a.deadID+"/retry", a.tok.Token, nil)
	if after := len(e.activity(a.tid, adminToken, url.Values{})); after != before {
		t.Errorf("refused changes wrote %d entries", after-before)
	}
	// Reads record nothing either.
	e.call("GET", a.base+"/subscriptions", a.tok.Token, nil)
	if after := len(e.activity(a.tid, adminToken, url.Values{})); after != before {
		t.Errorf("reads wrote %d entries", after-before)
	}
}

// TestActivityList: newest first, keyset pages, the filters, scopes and tenants.
func TestActivityList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	rc := newReceiver(t, nil)
	tid, other := e.newTenant("activity-list"), e.newTenant("activity-other")
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL})
	path := "/tenants/" + tid + "/subscriptions/" + sub.ID
	for range 3 {
		must[any](e, 200, "POST", path+"/pause", adminToken, nil)
		must[any](e, 200, "POST", path+"/resume", adminToken, nil)
	}
	all := e.activity(tid, adminToken, url.Values{"limit": {"2"}}) // 7 entries over 4 pages
	if len(all) != 7 {
		t.Fatalf("%d entries, want 7 (created, 3 pauses, 3 resumes): %+v", len(all), all)
	}
	seen := map[string]bool{}
	for i, a := range all {
		if seen[a.ID] {
			t.Fatalf("entry %s twice across pages", a.ID)
		}
		seen[a.ID] = true
		if i > 0 && a.At.After(all[i-1].At) {
			t.Fatalf("not newest first at %d: %v after %v", i, a.At, all[i-1].At)
		}
	}
	if all[0].Action != "subscription.resumed" || all[6].Action != "subscription.created" {
		t.Errorf("order: first %s, last %s", all[0].Action, all[6].Action)
	}
	if got := e.activity(tid, adminToken, url.Values{"action": {"subscription.paused"}}); len(got) != 3 {
		t.Errorf("action filter: %d entries, want 3", len(got))
	}
	mid := all[3].At
	newer := e.activity(tid, adminToken, url.Values{"since": {mid.Format(time.RFC3339Nano)}})
	older := e.activity(tid, adminToken, url.Values{"until": {mid.Format(time.RFC3339Nano)}})
	if len(newer)+len(older) != 7 || len(newer) < 4 {
		t.Errorf("since %v: %d, until: %d; want them to split the 7 with the 4 newest at or after", mid, len(newer), len(older))
	}

	reader := e.newToken(tid, "subscriptions:read") // an entry of its own: token.created
	if got := e.activity(tid, reader, url.Values{}); len(got) != 8 || got[0].Action != "token.created" {
		t.Errorf("subscriptions:read token sees %d entries, the newest %+v", len(got), got[0])
	}
	base := "/tenants/" + tid + "/activity"
	wantError(t, "no scope", e.call("GET", base, e.newToken(tid, "deliveries:read"), nil), "FORBIDDEN")
	wantError(t, "other tenant's token", e.call("GET", base, e.newToken(other, "subscriptions:read"), nil), "NOT_FOUND")
	wantError(t, "no token", e.call("GET", base, "", nil), "UNAUTHENTICATED")
	if got := e.activity(other, adminToken, url.Values{}); len(got) != 1 || got[0].Action != "token.created" {
		t.Errorf("the other tenant's log holds %+v, want only its own token's creation", got)
	}
	for _, q := range []string{"action=nope", "since=yesterday", "until=1", "limit=0", "limit=101", "cursor=zzz", "foo=bar"} {
		wantError(t, q, e.call("GET", base+"?"+q, adminToken, nil), "INVALID_REQUEST")
	}
}
