package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// receiverView is what answers show of a subscription's receiver fields.
type receiverView struct {
	ID   string `json:"id"`
	Auth *struct {
		Type            string   `json:"type"`
		Username        string   `json:"username"`
		PasswordSet     *bool    `json:"password_set"`
		TokenURL        string   `json:"token_url"`
		ClientID        string   `json:"client_id"`
		ClientSecretSet *bool    `json:"client_secret_set"`
		Scopes          []string `json:"scopes"`
		Audience        string   `json:"audience"`
		ClientAuth      string   `json:"client_auth"`
	} `json:"auth"`
	Filter        json.RawMessage `json:"filter"`
	RetrySchedule []string        `json:"retry_schedule"`
}

// Basic auth and OAuth 2 are set, changed and removed through the API; answers say a secret is set and
// never show it; a secret left out keeps the stored one for the same type and is required for a new one.
func TestEndpointAuthThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("auth")
	path := "/tenants/" + tn + "/subscriptions"
	r := e.call("POST", path, adminToken, map[string]any{"url": "https://example.com/hook",
		"auth": map[string]any{"type": "basic", "username": "hookline", "password": "pa55-word-basic"}})
	if r.status != 201 || strings.Contains(string(r.body), "pa55-word-basic") {
		t.Fatalf("create with basic auth: %s", r)
	}
	var s receiverView
	_ = json.Unmarshal(r.body, &s)
	if s.Auth == nil || s.Auth.Type != "basic" || s.Auth.Username != "hookline" || s.Auth.PasswordSet == nil || !*s.Auth.PasswordSet {
		t.Fatalf("answer's auth: %s", r)
	}
	sub := path + "/" + s.ID
	// The user name alone changes; the password stays.
	got := must[receiverView](e, 200, "PATCH", sub, adminToken, map[string]any{"auth": map[string]any{"type": "basic", "username": "other"}})
	if got.Auth.Username != "other" || !*got.Auth.PasswordSet {
		t.Errorf("after changing the user name: %+v", got.Auth)
	}
	// A new type needs its own secret.
	oauth := map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/oauth/token",
		"client_id": "hookline-client", "scopes": []string{"webhooks:write", "events"}, "audience": "https://api.example.com"}
	ae := wantError(t, "oauth2 without a client secret", e.call("PATCH", sub, adminToken, map[string]any{"auth": oauth}), "INVALID_REQUEST")
	if !strings.Contains(ae.Error.Message, "client_secret") {
		t.Errorf("the refusal does not name client_secret: %q", ae.Error.Message)
	}
	oauth["client_secret"] = "s3cret-client-value"
	r = e.call("PATCH", sub, adminToken, map[string]any{"auth": oauth})
	if r.status != 200 || strings.Contains(string(r.body), "s3cret-client-value") {
		t.Fatalf("set oauth2: %s", r)
	}
	var set receiverView
	_ = json.Unmarshal(r.body, &set)
	if a := set.Auth; a.Type != "oauth2_client_credentials" || a.ClientID != "hookline-client" || !*a.ClientSecretSet ||
		a.ClientAuth != "basic" || !slices.Equal(a.Scopes, []string{"webhooks:write", "events"}) || a.Audience != "https://api.example.com" || a.PasswordSet != nil {
		t.Errorf("oauth2 as answered: %s", r)
	}
	// Reading never shows a secret either.
	for _, r := range []reply{e.call("GET", sub, adminToken, nil), e.call("GET", path, adminToken, nil)} {
		if strings.Contains(string(r.body), "s3cret") || strings.Contains(string(r.body), "pa55") {
			t.Errorf("a read shows a secret: %s", r)
		}
	}
	// Refusals name what is wrong.
	for name, c := range map[string]struct {
		auth any
		word string
	}{
		"unknown type":       {map[string]any{"type": "digest"}, "auth.type"},
		"colon in user name": {map[string]any{"type": "basic", "username": "a:b", "password": "x"}, "username"},
		"token url not http": {map[string]any{"type": "oauth2_client_credentials", "token_url": "ftp://x/token", "client_id": "c", "client_secret": "s"}, "token_url"},
		"client_auth":        {map[string]any{"type": "oauth2_client_credentials", "token_url": "https://a.example/t", "client_id": "c", "client_secret": "s", "client_auth": "jwt"}, "client_auth"},
		"scope with a space": {map[string]any{"type": "oauth2_client_credentials", "token_url": "https://a.example/t", "client_id": "c", "client_secret": "s", "scopes": []string{"a b"}}, "scope"},
	} {
		ae := wantError(t, name, e.call("PATCH", sub, adminToken, map[string]any{"auth": c.auth}), "INVALID_REQUEST")
		if !strings.Contains(ae.Error.Message, c.word) {
			t.Errorf("%s: the refusal %q does not name %s", name, ae.Error.Message, c.word)
		}
	}
	// null removes it, and its secret with it.
	got = must[receiverView](e, 200, "PATCH", sub, adminToken, map[string]any{"auth": nil})
	if got.Auth != nil {
		t.Errorf("auth after null: %+v", got.Auth)
	}
	r = e.call("PATCH", sub, adminToken, map[string]any{"auth": map[string]any{"type": "basic", "username": "u"}})
	wantError(t, "basic auth after removal, without a password", r, "INVALID_REQUEST")
}

// Filters are stored as written, refused with a pointer into them when invalid, and removed with null.
func TestFilterThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("filters")
	s := must[receiverView](e, 201, "POST", "/tenants/"+tn+"/subscriptions", adminToken, map[string]any{"url": "https://example.com/hook",
		"filter": map[string]any{"data": map[string]any{"amount": map[string]any{"$gte": 100}}}})
	if string(s.Filter) != `{"data": {"amount": {"$gte": 100}}}` && !strings.Contains(string(s.Filter), `"$gte"`) {
		t.Errorf("filter as answered: %s", s.Filter)
	}
	sub := "/tenants/" + tn + "/subscriptions/" + s.ID
	for name, c := range map[string]struct {
		filter string
		path   string
	}{
		"unknown operator":  {`{"data": {"amount": {"$gtx": 1}}}`, "/filter/data/amount/$gtx"},
		"$in not an array":  {`{"data": {"x": {"$in": true}}}`, "/filter/data/x/$in"},
		"$exist not a bool": {`{"data": {"x": {"$exist": 1}}}`, "/filter/data/x/$exist"},
		"not an object":     {`[1]`, "/filter"},
		"too deep":          {`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}`, "/filter/a/b/c/d/e/f/g/h"},
		"too large":         {`{"data": {"s": "` + strings.Repeat("x", 5000) + `"}}`, "/filter"},
	} {
		r := e.call("PATCH", sub, adminToken, `{"filter": `+c.filter+`}`)
		var ae struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Details []struct {
					Path    string `json:"path"`
					Message string `json:"message"`
				} `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(r.body, &ae)
		if r.status != 400 || ae.Error.Code != "INVALID_REQUEST" || len(ae.Error.Details) != 1 || ae.Error.Details[0].Path != c.path {
			t.Errorf("%s: want 400 with details path %s, got %s", name, c.path, r)
		}
	}
	if got := must[receiverView](e, 200, "PATCH", sub, adminToken, map[string]any{"filter": nil}); got.Filter != nil && string(got.Filter) != "null" {
		t.Errorf("filter after null: %s", got.Filter)
	}
}

// POST /tenants/{t}/filter-test answers whether an event would pass, as the publish decides.
func TestFilterTest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("filter-test")
	reader := e.newToken(tn, "subscriptions:read")
	filter := map[string]any{"type": "invoice.paid", "data": map[string]any{"amount": map[string]any{"$gte": 100}, "tags": "vip"}}
	for _, c := range []struct {
		eventType string
		payload   any
		want      bool
	}{
		{"invoice.paid", map[string]any{"amount": 150, "tags": []string{"new", "vip"}}, true},
		{"invoice.paid", map[string]any{"amount": 50, "tags": []string{"vip"}}, false},
		{"invoice.created", map[string]any{"amount": 150, "tags": []string{"vip"}}, false},
		{"invoice.paid", map[string]any{"amount": 150}, false},
	} {
		got := must[struct {
			Matches *bool `json:"matches"`
		}](e, 200, "POST", "/tenants/"+tn+"/filter-test", reader, map[string]any{"filter": filter, "event_type": c.eventType, "payload": c.payload})
		if got.Matches == nil || *got.Matches != c.want {
			t.Errorf("%s %v: matches %v, want %v", c.eventType, c.payload, got.Matches, c.want)
		}
	}
	for name, body := range map[string]string{
		"no filter":          `{"event_type": "a", "payload": {}}`,
		"bad filter":         `{"filter": {"$nope": 1}, "event_type": "a", "payload": {}}`,
		"payload not object": `{"filter": {}, "event_type": "a", "payload": [1]}`,
		"bad event type":     `{"filter": {}, "event_type": "", "payload": {}}`,
	} {
		wantError(t, name, e.call("POST", "/tenants/"+tn+"/filter-test", reader, body), "INVALID_REQUEST")
	}
	wantError(t, "without subscriptions:read", e.call("POST", "/tenants/"+tn+"/filter-test", e.newToken(tn, "events:write"),
		`{"filter": {}, "event_type": "a", "payload": {}}`), "FORBIDDEN")
}

// A retry schedule is 1 to 30 delays of 1 s to 24 h, shown as written (normalized), removed with null.
func TestRetryScheduleThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("schedule")
	s := must[receiverView](e, 201, "POST", "/tenants/"+tn+"/subscriptions", adminToken, map[string]any{"url": "https://example.com/hook",
		"retry_schedule": []string{"30s", "10m", "90m", "24h"}})
	if !slices.Equal(s.RetrySchedule, []string{"30s", "10m", "1h30m", "24h"}) {
		t.Errorf("schedule as answered: %v", s.RetrySchedule)
	}
	sub := "/tenants/" + tn + "/subscriptions/" + s.ID
	many := make([]string, 31)
	for i := range many {
		many[i] = "1m"
	}
	for name, sched := range map[string]any{
		"empty": []string{}, "too many": many, "zero": []string{"0s"}, "over a day": []string{"25h"},
		"fraction": []string{"1.5s"}, "not a duration": []string{"soon"}, "not strings": []int{30},
	} {
		wantError(t, fmt.Sprint("schedule ", name), e.call("PATCH", sub, adminToken, map[string]any{"retry_schedule": sched}), "INVALID_REQUEST")
	}
	if got := must[receiverView](e, 200, "PATCH", sub, adminToken, map[string]any{"retry_schedule": nil}); got.RetrySchedule != nil {
		t.Errorf("schedule after null: %v", got.RetrySchedule)
	}
}

// The activity log names each receiver field a change moved, and which part of the auth, never a value.
func TestReceiverChangesInTheActivityLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpOnly)
	tn := e.newTenant("activity")
	s := must[receiverView](e, 201, "POST", "/tenants/"+tn+"/subscriptions", adminToken, map[string]any{"url": "https://example.com/hook",
		"auth": map[string]any{"type": "basic", "username": "u", "password": "first-secret-pw"}})
	sub := "/tenants/" + tn + "/subscriptions/" + s.ID
	must[receiverView](e, 200, "PATCH", sub, adminToken, map[string]any{
		"auth": map[string]any{"type": "basic", "username": "u", "password": "second-secret-pw"}, "filter": map[string]any{"type": "a"},
		"retry_schedule": []string{"1m"}})
	// The same again changes nothing and records nothing.
	must[receiverView](e, 200, "PATCH", sub, adminToken, map[string]any{
		"auth": map[string]any{"type": "basic", "username": "u"}, "filter": map[string]any{"type": "a"}, "retry_schedule": []string{"60s"}})
	var changes []activityEntry
	for _, a := range e.activity(tn, adminToken, url.Values{}) {
		b, _ := json.Marshal(a)
		if strings.Contains(string(b), "secret-pw") {
			t.Errorf("an activity entry holds a password: %s", b)
		}
		if a.Action == "subscription.changed" {
			changes = append(changes, a)
		}
	}
	if len(changes) != 1 {
		t.Fatalf("%d change entries, want 1: %+v", len(changes), changes)
	}
	fields, _ := json.Marshal(changes[0].Details["fields"])
	auth, _ := json.Marshal(changes[0].Details["auth"])
	if string(fields) != `["auth","filter","retry_schedule"]` || string(auth) != `["password"]` {
		t.Errorf("change recorded as fields %s, auth %s", fields, auth)
	}
}
