package web_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/principal"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/web"
)

// portalLink makes a portal link for tn and returns its path (/portal/<token>).
func (e *env) portalLink(tn tenant, in portal.LinkRequest) string {
	e.t.Helper()
	l, err := e.srv.Portal.CreateLink(setupCtx(), tn.ID, principal.AdminToken(), in)
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := url.Parse(l.URL)
	if err != nil || !strings.HasPrefix(u.Path, "/portal/") {
		e.t.Fatalf("portal url %q", l.URL)
	}
	return u.Path
}

// portalClient opens a portal link in a new browser and checks that it lands on the tenant's subscriptions.
func (e *env) portalClient(link string) *client {
	e.t.Helper()
	c := e.client()
	p := c.get(link)
	if p.Status != http.StatusOK || p.URL.Path != "/" {
		e.t.Fatalf("open portal link: %d at %s: %s", p.Status, p.URL, p.text())
	}
	return c
}

const goneText = "This link has expired or was already used. Ask Hookline for a new one."

// A portal link starts a session in the tenant's dashboard once, without a password; the header names the
// person and offers no operator links; used, expired and unknown links get the same 410 page; the token
// never reaches the log.
func TestPortalLinkOnce(t *testing.T) {
	var logBuf syncBuffer
	clock := &fakeClock{now: time.Now()}
	cfg := servertest.Config(t, dbURL)
	srv, base := servertest.Start(t, cfg, slog.New(slog.NewJSONHandler(&logBuf, nil)), server.Options{Now: clock.Now})
	e := &env{t: t, srv: srv, base: base, recv: newReceiver(t)}
	tn, other := e.newTenant("portal once"), e.newTenant("portal once other")
	own := e.newSubscription(tn, "/own", "own endpoint")
	theirs := e.newSubscription(other, "/theirs", "their endpoint")

	link := e.portalLink(tn, portal.LinkRequest{User: portal.User{ID: "u-42", Email: "ann@example.com", Name: "Ann Example"}})
	c := e.portalClient(link)
	home := c.get("/")
	if got := text(one(t, home.Doc, "user")); got != "Ann Example" {
		t.Errorf("header names %q, want the link's name", got)
	}
	if !strings.Contains(home.Body, own.ID.String()) || strings.Contains(home.Body, theirs.ID.String()) {
		t.Errorf("home page does not show exactly the tenant's subscription")
	}
	if strings.Contains(home.Body, `href="/admin"`) {
		t.Errorf("a portal session's header links to /admin")
	}
	if p := c.get("/subscriptions/" + theirs.ID.String()); p.Status != http.StatusNotFound {
		t.Errorf("another tenant's subscription: %d, want 404", p.Status)
	}

	// The header falls back to the email, then to "portal user".
	if got := text(one(t, e.portalClient(e.portalLink(tn, portal.LinkRequest{User: portal.User{Email: "bo@example.com"}})).get("/").Doc, "user")); got != "bo@example.com" {
		t.Errorf("header names %q, want the email", got)
	}
	if got := text(one(t, e.portalClient(e.portalLink(tn, portal.LinkRequest{})).get("/").Doc, "user")); got != "portal user" {
		t.Errorf("header names %q, want portal user", got)
	}

	used := e.client().get(link)
	unknown := e.client().get("/portal/" + strings.Repeat("A", 43))
	expiring := e.portalLink(tn, portal.LinkRequest{})
	clock.Add(portal.LinkValidFor + time.Second)
	expired := e.client().get(expiring)
	for name, p := range map[string]*page{"used": used, "unknown": unknown, "expired": expired} {
		if p.Status != http.StatusGone || !strings.Contains(p.text(), goneText) {
			t.Errorf("%s link: %d %q, want 410 with %q", name, p.Status, p.text(), goneText)
		}
		if p.Body != used.Body {
			t.Errorf("%s link's page differs from a used link's", name)
		}
	}
	if strings.Contains(used.Body, own.ID.String()) {
		t.Errorf("the 410 page shows the tenant's data")
	}
	// A link opened a second time is titled truthfully (it has not expired), as the same page for all three.
	if title := text(findAll(used.Doc, tag("title"))[0]); title != "Link expired or already used · Hookline" {
		t.Errorf("the used link's page is titled %q, want %q", title, "Link expired or already used · Hookline")
	}

	logs := logBuf.String()
	token := strings.TrimPrefix(link, "/portal/")
	if strings.Contains(logs, token) || strings.Contains(logs, strings.TrimPrefix(expiring, "/portal/")) {
		t.Errorf("a portal token is in the log")
	}
	if !strings.Contains(logs, `"path":"/portal/{token}"`) {
		t.Errorf("the access log does not show the portal route: %s", logs)
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Of many browsers opening one link at the same moment exactly one gets in.
func TestPortalLinkRace(t *testing.T) {
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("portal race")
	link := e.portalLink(tn, portal.LinkRequest{})
	const n = 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jar, _ := cookiejar.New(nil)
			hc := &http.Client{Jar: jar, Timeout: 15 * time.Second,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			<-start
			res, err := hc.Get(e.base + link)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			codes <- res.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	close(codes)
	got := map[int]int{}
	for c := range codes {
		got[c]++
	}
	if got[http.StatusSeeOther] != 1 || got[http.StatusGone] != n-1 {
		t.Fatalf("answers %v, want one 303 and %d 410", got, n-1)
	}
}

const endedText = "Your session has ended"

// A portal session ends at its session_expires_at (checked on every request, not only by the cookie), on
// Sign out, and for a whole tenant by DELETE /portal-sessions; the next request shows that, not the
// tenant's data and not a password sign-in form. Other tenants' sessions and password users go on.
func TestPortalSessionsEnd(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	e := setupWith(t, httpOnly, nil, server.Options{Now: clock.Now})
	tn, other := e.newTenant("portal end"), e.newTenant("portal end other")
	sub := e.newSubscription(tn, "/ok", "ending endpoint")
	subPath := "/subscriptions/" + sub.ID.String()
	ended := func(what string, c *client, path string) {
		t.Helper()
		p := c.get(path)
		if p.Status != http.StatusUnauthorized || !strings.Contains(p.text(), endedText) {
			t.Errorf("%s: %d at %s %q, want 401 saying %q", what, p.Status, p.URL, p.text(), endedText)
		}
		if strings.Contains(p.Body, sub.ID.String()) || len(byTestID(p.Doc, "login-form")) > 0 {
			t.Errorf("%s: the page shows tenant data or a sign-in form", what)
		}
	}

	// By time.
	ttl := int64(60)
	short := e.portalClient(e.portalLink(tn, portal.LinkRequest{SessionTTLSeconds: &ttl}))
	long := e.portalClient(e.portalLink(tn, portal.LinkRequest{}))
	clock.Add(61 * time.Second)
	ended("after session_expires_at", short, subPath)
	ended("the request after that", short, "/")
	if p := long.get(subPath); p.Status != http.StatusOK {
		t.Fatalf("a longer session ended too: %d", p.Status)
	}

	// By Sign out.
	out := e.portalClient(e.portalLink(tn, portal.LinkRequest{}))
	cookies := out.http.Jar.Cookies(mustURL(t, e.base))
	p := out.post("/logout", nil)
	if p.URL.Path == "/login" || !strings.Contains(p.text(), "You are signed out") {
		t.Errorf("sign out: %d at %s %q, want the ended page saying so", p.Status, p.URL, p.text())
	}
	ended("after sign out", out, subPath)
	// The old cookie, replayed, is worth nothing either.
	replay := e.client()
	replay.http.Jar.SetCookies(mustURL(t, e.base), cookies)
	if p := replay.get(subPath); p.Status == http.StatusOK && p.URL.Path == subPath {
		t.Errorf("the signed-out cookie replayed still shows the tenant's subscription")
	}

	// For the whole tenant.
	otherPortal := e.portalClient(e.portalLink(other, portal.LinkRequest{}))
	password := e.client()
	password.login(tn.Email)
	unused := e.portalLink(tn, portal.LinkRequest{})
	req, _ := http.NewRequest(http.MethodDelete, e.base+"/api/v1/tenants/"+tn.ID.String()+"/portal-sessions", nil)
	req.Header.Set("Authorization", "Bearer web-test-admin-token")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE portal-sessions: %v %v", res, err)
	}
	res.Body.Close()
	ended("after DELETE portal-sessions", long, subPath)
	if p := e.client().get(unused); p.Status != http.StatusGone {
		t.Errorf("a link made before DELETE portal-sessions: %d, want 410", p.Status)
	}
	if p := otherPortal.get("/"); p.Status != http.StatusOK {
		t.Errorf("another tenant's portal session: %d, want 200", p.Status)
	}
	if p := password.get(subPath); p.Status != http.StatusOK {
		t.Errorf("the tenant's password user: %d, want 200", p.Status)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A view portal session changes nothing: every POST route of the signed-in dashboard (found by walking
// the router, so a route added later is covered) answers 403, and its pages show no button that would
// change something; a manage session's pause works.
func TestPortalViewRoleRefusesEveryPost(t *testing.T) {
	e := setup(t, withBackground, nil)
	tn := e.newTenant("portal view")
	sub := e.newSubscription(tn, "/ok", "view endpoint")
	ids := e.publish(tn, "order.created", map[string]any{"n": 1})
	e.waitState(tn, ids[0], delivery.Delivered)

	router, ok := web.New(web.Options{Sessions: e.srv.Sessions, LoginThrottle: e.srv.LoginThrottle, Activity: e.srv.Activity, Tenants: e.srv.Tenants}).Routes().(chi.Routes)
	if !ok {
		t.Fatal("the dashboard's router is not a chi router")
	}
	var posts []string
	_ = chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodPost {
			posts = append(posts, route)
		}
		return nil
	})
	if len(posts) < 8 {
		t.Fatalf("walked only %d POST routes: %v", len(posts), posts)
	}
	view := e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleView}))
	for _, route := range posts {
		path := strings.NewReplacer("{id}", sub.ID.String(), "{token}", sub.ID.String(), "{name}", "order.created").Replace(route)
		if strings.HasPrefix(route, "/deliveries/") {
			path = strings.Replace(route, "{id}", ids[0].String(), 1)
		}
		switch route {
		case "/logout", "/login":
			continue // signing out (or in) changes no tenant data
		}
		p := view.post(path, url.Values{"since": {"2020-01-01T00:00"}, "action": {"confirm"}})
		if p.Status != http.StatusForbidden {
			t.Errorf("POST %s as a view session: %d, want 403", path, p.Status)
		}
	}
	view = e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleView}))
	for _, path := range []string{"/subscriptions/" + sub.ID.String(), "/deliveries/" + ids[0].String(), "/", "/deliveries", "/event-types"} {
		p := view.get(path)
		if p.Status != http.StatusOK {
			t.Fatalf("GET %s as a view session: %d", path, p.Status)
		}
		for _, f := range findAll(p.Doc, tag("form")) {
			if attr(f, "method") == "post" && attr(f, "action") != "/logout" {
				t.Errorf("GET %s as a view session shows a form posting to %s", path, attr(f, "action"))
			}
		}
	}
	s, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, sub.ID)
	if err != nil || s.State != "active" {
		t.Fatalf("after a view session's POSTs the subscription is %q (%v), want active", s.State, err)
	}
	manage := e.portalClient(e.portalLink(tn, portal.LinkRequest{Role: portal.RoleManage}))
	if p := manage.post("/subscriptions/"+sub.ID.String()+"/pause", nil); p.Status != http.StatusOK {
		t.Errorf("pause as a manage session: %d", p.Status)
	}
	if s, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, sub.ID); s.State != "paused" {
		t.Errorf("after a manage session's pause the subscription is %q", s.State)
	}
}
