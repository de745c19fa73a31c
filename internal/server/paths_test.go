package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
)

// pathClient sends requests as one signed-in dashboard user (its cookies) or with a bearer token, and
// never follows redirects: the answer to the request itself is what is checked.
type pathClient struct {
	t    *testing.T
	base string
	http *http.Client
}

func newPathClient(t *testing.T, base string) *pathClient {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &pathClient{t: t, base: base, http: &http.Client{
		Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// do sends method path (already escaped) with body of contentType and an optional bearer token.
func (c *pathClient) do(method, path, token, contentType, body string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return res, b
}

var pathParamRE = regexp.MustCompile(`\{[^}]+\}|\*`)

// Every path parameter of both routers (the API's and the dashboard's, enumerated by chi.Walk), given a
// value that is not UTF-8 or holds a control character, is answered as the malformed id it is: 404
// NOT_FOUND in the contract's error shape from the API, the 404 page from the dashboard, never a 500.
// Values that decode to a literal "%00" (sent as %2500) are ordinary text: whatever the answer, not a 500.
func TestEveryPathParameterRefusesBadBytes(t *testing.T) {
	t.Parallel()
	const token, email, password = "paths-admin-token", "paths-admin@example.com", "paths-admin-password"
	cfg := servertest.Config(t, dbURL)
	cfg.AdminToken, cfg.AdminEmail, cfg.AdminPassword = token, email, password
	srv, base := servertest.Start(t, cfg, nil, server.Options{})
	w := &pathWalk{t: t, c: newPathClient(t, base), token: token}
	w.makeObjects()

	// Signed out, a bad path leads to /login like every dashboard page.
	if res, _ := w.c.do("GET", "/subscriptions/%00", "", "", ""); res.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Errorf("signed out GET /subscriptions/%%00: %d Location %q, want a redirect to /login", res.StatusCode, res.Header.Get("Location"))
	}
	form := url.Values{"email": {email}, "password": {password}}.Encode()
	if res, b := w.c.do("POST", "/login", "", "application/x-www-form-urlencoded", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d %.300s", res.StatusCode, b)
	}

	routes := map[string]bool{}
	err := chi.Walk(srv.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes[method+" "+route] = true
		params := pathParamRE.FindAllStringIndex(route, -1)
		for i := range params {
			w.checkParam(method, route, params, i)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have reached both routers, or the test checks nothing.
	for _, want := range []string{"GET /api/v1/event-types/{eventType}", "PATCH /api/v1/event-types/{eventType}",
		"DELETE /api/v1/event-types/{eventType}", "POST /event-types/{name}/send", "GET /portal/{token}",
		"GET /api/v1/tenants/{tenantID}/deliveries/{deliveryID}/"} {
		if !routes[want] {
			t.Errorf("chi.Walk did not find %s", want)
		}
	}
	t.Logf("walked %d routes", len(routes))
}

// Values of a path parameter: refused ones are malformed ids; literal ones decode to a literal "%00".
var (
	refusedParams = []string{"%00", "%FF", "a%C0%80", "a%0Ab", "%7F", "a%2F%00", "%C2%85"}
	literalParams = []string{"%2500", "a%2F%2500"}
)

// pathWalk sends every route bad values in each of its parameters.
type pathWalk struct {
	t     *testing.T
	c     *pathClient
	token string
	sub   string
	// good are values naming what exists, for the parameters not under test.
	good map[string]string
}

// makeObjects makes real objects, so a bad value in one parameter is checked with the others naming what
// exists.
func (w *pathWalk) makeObjects() {
	res, b := w.c.do("POST", "/api/v1/tenants", w.token, "application/json", `{"name":"paths"}`)
	var tenant struct{ ID string }
	if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &tenant) != nil {
		w.t.Fatalf("create tenant: %d %s", res.StatusCode, b)
	}
	res, b = w.c.do("POST", "/api/v1/tenants/"+tenant.ID+"/subscriptions", w.token, "application/json", `{"url":"http://127.0.0.1:9/hook"}`)
	var sub struct{ ID string }
	if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &sub) != nil {
		w.t.Fatalf("create subscription: %d %s", res.StatusCode, b)
	}
	w.sub = sub.ID
	w.good = map[string]string{
		"{tenantID}": tenant.ID, "{subscriptionID}": sub.ID, "{id}": tenant.ID,
		"{eventType}": "order.created", "{name}": "order.created", "{token}": "some-token", "*": "app.css",
	}
}

// with is route with parameter i set to v and every other one to a good value.
func (w *pathWalk) with(route string, params [][]int, i int, v string) string {
	var sb strings.Builder
	last := 0
	for j, p := range params {
		sb.WriteString(route[last:p[0]])
		if j == i {
			sb.WriteString(v)
		} else if g, ok := w.good[route[p[0]:p[1]]]; ok {
			sb.WriteString(g)
		} else {
			sb.WriteString(uuid.NewString()) // an id of nothing: {deliveryID}, {replayID}, {user}...
		}
		last = p[1]
	}
	sb.WriteString(route[last:])
	return sb.String()
}

// send sends a request to path as the route expects it: the API's with the admin token (and a JSON body
// when it takes one), the dashboard's signed in (a form for a POST).
func (w *pathWalk) send(method, path string, api bool) (*http.Response, []byte) {
	switch {
	case api && method != "GET" && method != "DELETE":
		return w.c.do(method, path, w.token, "application/json", "{}")
	case api:
		return w.c.do(method, path, w.token, "", "")
	case method == "POST":
		return w.c.do(method, path, "", "application/x-www-form-urlencoded", "subscription_id="+w.sub)
	}
	return w.c.do(method, path, "", "", "")
}

// checkParam sends the route's parameter i every refused and literal value.
func (w *pathWalk) checkParam(method, route string, params [][]int, i int) {
	t := w.t
	api := strings.HasPrefix(route, "/api/")
	for _, v := range refusedParams {
		path := w.with(route, params, i, v)
		res, b := w.send(method, path, api)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: %d %.200s, want 404", method, path, res.StatusCode, b)
			continue
		}
		if api {
			var e struct {
				Error struct{ Code, Message, CorrelationID string }
			}
			if json.Unmarshal(b, &e) != nil || e.Error.Code != "NOT_FOUND" || e.Error.Message == "" {
				t.Errorf("%s %s: %.200s, want the contract's NOT_FOUND error", method, path, b)
			}
		} else if !bytes.Contains(b, []byte(`data-testid="error-404"`)) {
			t.Errorf("%s %s: %.300s, want the dashboard's 404 page", method, path, b)
		}
	}
	for _, v := range literalParams {
		path := w.with(route, params, i, v)
		res, b := w.send(method, path, api)
		if res.StatusCode >= 500 {
			t.Errorf("%s %s: %d %.200s", method, path, res.StatusCode, b)
		}
		if api && res.StatusCode >= 400 && !bytes.Contains(b, []byte(`"correlation_id"`)) {
			t.Errorf("%s %s: %d %.200s, not the contract's error shape", method, path, res.StatusCode, b)
		}
	}
}
