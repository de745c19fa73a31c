package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/tenants"
)

// apiCall sends a JSON API request with a bearer token and decodes a JSON answer into out (when not nil).
func (e *env) apiCall(method, path, token string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, e.base+"/api/v1"+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return res.StatusCode
}

// sessionCookie is the dashboard session token c's browser holds.
func (c *client) sessionCookie() string {
	c.t.Helper()
	for _, ck := range c.http.Jar.Cookies(mustURL(c.t, c.e.base)) {
		if ck.Name == "hookline_session" {
			return ck.Value
		}
	}
	c.t.Fatal("no session cookie")
	return ""
}

// A portal session's changes are recorded with the person the link named and, beside them, the token that
// made the link (API and /activity); revoking that token ends the session.
func TestPortalSessionChangesNameTheLinksToken(t *testing.T) {
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("portal maker")
	sub := e.newSubscription(tn, "/ok", "made by a token")
	ctx := setupCtx()
	tok, err := e.srv.Tenants.CreateToken(ctx, tn.ID, "platform backend", []string{tenants.ScopePortalWrite,
		tenants.ScopeSubscriptionsRead, tenants.ScopeSubscriptionsWrite, tenants.ScopeDeliveriesRead,
		tenants.ScopeDeliveriesWrite, tenants.ScopeEventsWrite})
	if err != nil {
		t.Fatal(err)
	}
	var link portal.Link
	if code := e.apiCall("POST", "/tenants/"+tn.ID.String()+"/portal-links", tok.Token,
		map[string]any{"user": map[string]any{"id": "u-42", "name": "Ann Example"}}, &link); code != http.StatusCreated {
		t.Fatalf("portal link with the token: %d", code)
	}
	c := e.portalClient(mustURL(t, link.URL).Path)
	if p := c.post("/subscriptions/"+sub.ID.String()+"/pause", nil); p.Status != http.StatusOK {
		t.Fatalf("pause in the portal session: %s", p)
	}

	var log struct {
		Items []struct {
			Action string `json:"action"`
			Actor  struct {
				Kind, ID, Email, Name string
				Via                   *struct{ Kind, ID, Name string }
			} `json:"actor"`
		} `json:"items"`
	}
	if code := e.apiCall("GET", "/tenants/"+tn.ID.String()+"/activity?action=subscription.paused", "web-test-admin-token", nil, &log); code != http.StatusOK || len(log.Items) != 1 {
		t.Fatalf("activity: %d, %d entries", code, len(log.Items))
	}
	a := log.Items[0].Actor
	if a.Kind != "portal" || a.ID != "u-42" || a.Name != "Ann Example" {
		t.Errorf("actor %+v, want the portal user the link named", a)
	}
	if a.Via == nil || a.Via.Kind != "token" || a.Via.ID != tok.ID.String() || a.Via.Name != "platform backend" {
		t.Errorf("actor's via %+v, want the token %s that made the link", a.Via, tok.ID)
	}
	admin := e.client()
	admin.login(tn.Email)
	row := one(t, admin.get("/activity?action=subscription.paused").Doc, "activity-row")
	if got := text(row); !strings.Contains(got, "Ann Example") || !strings.Contains(got, "by a link from token platform backend") {
		t.Errorf("the activity page's row %q does not name the person and the link's token", got)
	}

	// The token revoked, the session it let in ends.
	if code := e.apiCall("DELETE", "/tenants/"+tn.ID.String()+"/tokens/"+tok.ID.String(), "web-test-admin-token", nil, nil); code != http.StatusNoContent {
		t.Fatalf("revoke: %d", code)
	}
	if p := c.get("/"); p.Status != http.StatusUnauthorized || !strings.Contains(p.text(), endedText) {
		t.Errorf("the session after its link's token was revoked: %s %q, want the ended page", p, p.text())
	}
}

// A portal session past session_expires_at whose stored session has gone too (it lasts as long as the
// portal session may, and goes after 2 h idle) lands on the page saying it ended, never on the password
// form; a password sign-in in the same browser takes that back.
func TestExpiredPortalSessionSaysItEnded(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	e := setupWith(t, httpOnly, nil, server.Options{Now: clock.Now})
	tn := e.newTenant("portal expired")
	ttl := int64(60)
	c := e.portalClient(e.portalLink(tn, portal.LinkRequest{SessionTTLSeconds: &ttl}))

	// Time passes for the portal session (the injected clock) and for its stored session (PostgreSQL's
	// clock, which the store reads: its expiry is put in the past).
	clock.Add(61 * time.Second)
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE sessions SET expiry = now() - interval '1 second' WHERE token = $1`,
		c.sessionCookie()); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/activity", "/"} {
		p := c.get(path)
		if p.Status != http.StatusUnauthorized || !strings.Contains(p.text(), endedText) || len(byTestID(p.Doc, "login-form")) > 0 {
			t.Errorf("%s after the session expired: %s %q, want 401 saying %q and no sign-in form", path, p, p.text(), endedText)
		}
	}

	// Signing in with a password in this browser removes the mark: signed out again, it is the sign-in form.
	c.login(tn.Email)
	if p := c.get("/"); p.Status != http.StatusOK || p.URL.Path != "/" {
		t.Fatalf("signed in with a password: %s", p)
	}
	c.post("/logout", nil)
	if p := c.get("/"); p.URL.Path != "/login" {
		t.Errorf("signed out of a password session: %s, want the sign-in form", p)
	}
}

// A session cookie whose token another process renewed keeps working there for the request the browser
// sent before it got the new one: opening a second portal link (a renewal, on one server) leaves the old
// cookie answering, on the other server, as the session it was, without handing it back as a cookie and
// without extending it; after a sign-out (another renewal) the old cookie says the session ended.
func TestRenewedCookieKeepsWorkingOnAnotherProcess(t *testing.T) {
	a, b := setup(t, httpOnly, nil), setup(t, httpOnly, nil)
	b.recv = a.recv
	tn := a.newTenant("renewed cookie")
	sub := a.newSubscription(tn, "/ok", "renewed endpoint")
	c := a.portalClient(a.portalLink(tn, portal.LinkRequest{User: portal.User{Name: "First Link"}}))
	first := c.sessionCookie()
	c.get(a.portalLink(tn, portal.LinkRequest{User: portal.User{Name: "Second Link"}}))
	second := c.sessionCookie()
	if first == second {
		t.Fatal("opening a second link did not renew the session token")
	}

	stale := func(token, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
		req.AddCookie(&http.Cookie{Name: "hookline_session", Value: token})
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := stale(first, "/subscriptions/"+sub.ID.String())
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "First Link") || !strings.Contains(string(body), sub.ID.String()) {
		t.Errorf("the renewed cookie on the other process: %d (Location %q), want the subscription's page in the first link's session",
			res.StatusCode, res.Header.Get("Location"))
	}
	for _, sc := range res.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "hookline_session="+first) {
			t.Errorf("the answer hands the renewed token back: %s", sc)
		}
	}
	var within bool
	if err := a.srv.Pool.QueryRow(context.Background(), `SELECT expiry <= now() + interval '61 seconds' FROM sessions WHERE token = $1`,
		first).Scan(&within); err != nil || !within {
		t.Errorf("the renewed token's row outlives its minute: %v %v", within, err)
	}
	if p := c.get("/"); !strings.Contains(p.text(), "Second Link") {
		t.Errorf("the browser's own cookie is not the second link's session: %q", p.text())
	}

	// Signed out (its token renewed again), the cookie from before says the session ended.
	c.post("/logout", nil)
	res = stale(second, "/")
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the cookie from before the sign-out, on the other process: %d (Location %q), want 401 (session ended)",
			res.StatusCode, res.Header.Get("Location"))
	}
}

// A portal link is used up only with its session stored: when storing the session fails, the link still
// works afterwards.
func TestPortalLinkSurvivesAFailedSessionStore(t *testing.T) {
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("portal store fails")
	link := e.portalLink(tn, portal.LinkRequest{})
	ctx := context.Background()
	var id uuid.UUID
	if err := e.srv.Pool.QueryRow(ctx, `SELECT id FROM portal_links WHERE tenant_id = $1`, tn.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// The database refuses to store a session holding this link's id (and only such a session).
	name := "refuse_" + strings.ReplaceAll(id.String(), "-", "")
	if _, err := e.srv.Pool.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF position(convert_to('%[2]s', 'UTF8') IN NEW.data) > 0 THEN RAISE EXCEPTION 'session store refused'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER %[1]s BEFORE INSERT OR UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION %[1]s();`, name, id)); err != nil {
		t.Fatal(err)
	}
	dropped := false
	drop := func() {
		if !dropped {
			dropped = true
			if _, err := e.srv.Pool.Exec(ctx, fmt.Sprintf(`DROP TRIGGER %[1]s ON sessions; DROP FUNCTION %[1]s();`, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(drop)

	c := e.client()
	if p := c.get(link); p.Status != http.StatusInternalServerError {
		t.Fatalf("opening the link while its session cannot be stored: %s, want 500", p)
	}
	drop()
	if p := c.get(link); p.Status != http.StatusOK || p.URL.Path != "/" {
		t.Fatalf("opening the link again: %s, want the tenant's dashboard", p)
	}
	if p := e.client().get(link); p.Status != http.StatusGone {
		t.Errorf("the link once used: %s, want 410", p)
	}
}
