package web_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/web"
	"golang.org/x/net/html"
)

func TestLoginPageAndWrongPassword(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("login")
	c := e.client()

	p := c.get("/login")
	form := one(t, p.Doc, "login-form")
	if attr(form, "method") != "post" || attr(form, "action") != "/login" {
		t.Errorf("login form: method %q action %q", attr(form, "method"), attr(form, "action"))
	}
	for _, name := range []string{"email", "password"} {
		in := findAll(form, func(n *html.Node) bool { return n.Data == "input" && attr(n, "name") == name })
		if len(in) != 1 {
			t.Fatalf("login form has no %s field", name)
		}
		id := attr(in[0], "id")
		if len(findAll(form, func(n *html.Node) bool { return n.Data == "label" && attr(n, "for") == id })) != 1 {
			t.Errorf("%s field has no label", name)
		}
	}

	p = c.post("/login", url.Values{"email": {tn.Email}, "password": {"nope"}})
	if p.Status != http.StatusUnauthorized || p.URL.Path != "/login" {
		t.Fatalf("wrong password: %s", p)
	}
	if got := text(one(t, p.Doc, "login-error")); !strings.Contains(got, "Invalid email or password") {
		t.Errorf("wrong password says %q", got)
	}
	if v := attr(findAll(p.Doc, func(n *html.Node) bool { return attr(n, "name") == "email" })[0], "value"); v != tn.Email {
		t.Errorf("email not kept in the form: %q", v)
	}
	if c.get("/").URL.Path != "/login" {
		t.Error("a failed sign-in signed in")
	}
	if p := c.post("/login", url.Values{"email": {"nobody@example.com"}, "password": {password}}); !strings.Contains(p.text(), "Invalid email or password") {
		t.Errorf("unknown email: %s", p.text())
	}
}

func TestLoginThrottled(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("throttle")
	c := e.client()
	for i := range 5 {
		if p := c.post("/login", url.Values{"email": {tn.Email}, "password": {"wrong" + strconv.Itoa(i)}}); p.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %s", i+1, p)
		}
	}
	// Now even the right password is refused for a while, with a clear message.
	p := c.post("/login", url.Values{"email": {tn.Email}, "password": {password}})
	if p.Status != http.StatusTooManyRequests || p.URL.Path != "/login" {
		t.Fatalf("sixth try: %s", p)
	}
	msg := text(one(t, p.Doc, "login-error"))
	if !regexp.MustCompile(`Too many failed sign-ins\. Try again in \d+ s\.`).MatchString(msg) {
		t.Errorf("throttled message %q", msg)
	}
	if p.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	// Another email from the same address is not locked out by this one.
	other := e.newTenant("throttle-other")
	c2 := e.client()
	c2.login(other.Email)
}

func TestSessionCookieAndRenewal(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("cookie")
	c := e.client()
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest(http.MethodPost, e.base+"/login", strings.NewReader(url.Values{"email": {tn.Email}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	set := res.Header.Get("Set-Cookie")
	for _, want := range []string{"hookline_session=", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(set, want) {
			t.Errorf("cookie %q lacks %s", set, want)
		}
	}
	if strings.Contains(set, "Secure") {
		t.Errorf("cookie over plain HTTP is Secure: %q", set)
	}
	first := cookieValue(set)

	// Signing out ends the session: the old token no longer works, and the next sign-in gets a new token.
	c.http.CheckRedirect = nil
	p := c.post("/logout", nil)
	if p.URL.Path != "/login" || !strings.Contains(p.text(), "You are signed out") {
		t.Fatalf("sign-out: %s %q", p, p.text())
	}
	stale := e.client()
	u, _ := url.Parse(e.base)
	stale.http.Jar.SetCookies(u, []*http.Cookie{{Name: "hookline_session", Value: first}})
	if stale.get("/").URL.Path != "/login" {
		t.Error("the token of a signed-out session still signs in")
	}
	before := jarValue(c, u)
	c.login(tn.Email)
	if after := jarValue(c, u); after == "" || after == before || after == first {
		t.Errorf("token not renewed at sign-in: before %q after %q", before, after)
	}

	// Under TLS the cookie is Secure.
	ts := httptest.NewTLSServer(e.srv.Handler())
	defer ts.Close()
	tc := ts.Client()
	tc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	res, err = tc.PostForm(ts.URL+"/login", url.Values{"email": {tn.Email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if set := res.Header.Get("Set-Cookie"); !strings.Contains(set, "Secure") || !strings.Contains(set, "HttpOnly") {
		t.Errorf("cookie under TLS: %q", set)
	}
}

func cookieValue(setCookie string) string {
	v, _, _ := strings.Cut(strings.TrimPrefix(setCookie, "hookline_session="), ";")
	return v
}

func jarValue(c *client, u *url.URL) string {
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == "hookline_session" {
			return ck.Value
		}
	}
	return ""
}

func TestSignedOutLeadsToLogin(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	c := e.client()
	id := uuid.NewString()
	for _, path := range []string{"/", "/subscriptions/" + id, "/deliveries/" + id, "/admin", "/no/such/page", "/subscriptions/not-an-id"} {
		p := c.get(path)
		if p.Status != http.StatusOK || p.URL.Path != "/login" {
			t.Errorf("GET %s signed out: %s", path, p)
			continue
		}
		one(t, p.Doc, "login-form")
		if path != "/" && p.URL.Query().Get("next") != path {
			t.Errorf("GET %s: next=%q", path, p.URL.Query().Get("next"))
		}
	}
	for _, path := range []string{"/subscriptions/" + id + "/pause", "/deliveries/" + id + "/resend"} {
		if p := c.post(path, nil); p.URL.Path != "/login" {
			t.Errorf("POST %s signed out: %s", path, p)
		}
	}
}

func TestLoginReturnsToThePageAsked(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("next")
	s := e.newSubscription(tn, "/ok", "next-endpoint")
	c := e.client()
	p := c.get("/subscriptions/" + s.ID.String())
	next := findAll(p.Doc, func(n *html.Node) bool { return attr(n, "name") == "next" })
	if len(next) != 1 {
		t.Fatal("login form does not carry the page asked for")
	}
	p = c.post("/login", url.Values{"email": {tn.Email}, "password": {password}, "next": {attr(next[0], "value")}})
	if p.URL.Path != "/subscriptions/"+s.ID.String() {
		t.Errorf("after sign-in: %s", p)
	}
	// Only local paths: an absolute URL falls back to the home page.
	c2 := e.client()
	p = c2.post("/login", url.Values{"email": {tn.Email}, "password": {password}, "next": {"//evil.example/x"}})
	if p.URL.Host != strings.TrimPrefix(e.base, "http://") || p.URL.Path != "/" {
		t.Errorf("open redirect: %s", p)
	}
}

// seeded is a tenant with a good and a bad endpoint and finished deliveries to both.
type seeded struct {
	tn        tenant
	good, bad uuid.UUID
	delivered []uuid.UUID
	dead      []uuid.UUID
}

func seed(e *env, name string, events int) seeded {
	e.t.Helper()
	s := seeded{tn: e.newTenant(name)}
	s.good = e.newSubscription(s.tn, "/good/"+name, name+" good endpoint").ID
	s.bad = e.newSubscription(s.tn, "/bad/"+name, name+" bad endpoint", "order.paid").ID
	for i := range events {
		for _, id := range e.publish(s.tn, "order.paid", map[string]any{"order": i}) {
			d := e.waitState(s.tn, id, delivery.Delivered, delivery.Failed)
			if d.State == delivery.Delivered {
				s.delivered = append(s.delivered, id)
			} else {
				s.dead = append(s.dead, id)
			}
		}
	}
	return s
}

func TestHomeListsSubscriptionsWithHealth(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	s := seed(e, "home", 3)
	c := e.client()
	p := c.login(s.tn.Email)
	if p.URL.Path != "/" {
		t.Fatalf("home: %s", p)
	}
	if got := text(findAll(p.Doc, tag("title"))[0]); got != "Subscriptions · Hookline" {
		t.Errorf("title %q", got)
	}
	one(t, p.Doc, "breadcrumb")
	cards := byTestID(p.Doc, "subscription")
	if len(cards) != 2 {
		t.Fatalf("%d subscriptions listed", len(cards))
	}
	byID := map[string]*html.Node{}
	for _, card := range cards {
		byID[attr(card, "data-id")] = card
	}
	good, bad := byID[s.good.String()], byID[s.bad.String()]
	if good == nil || bad == nil {
		t.Fatal("subscriptions missing by id")
	}
	if got := text(one(t, good, "success-rate")); got != "100 %" {
		t.Errorf("good success rate %q", got)
	}
	if got := text(one(t, bad, "success-rate")); got != "0 %" {
		t.Errorf("bad success rate %q", got)
	}
	if got := text(one(t, bad, "attempts")); got != "3" {
		t.Errorf("bad attempts %q", got)
	}
	// Deliveries now, each linking to the list's tab that counts the same; delivered over the range, the
	// attempts that succeeded, links nowhere.
	for id, want := range map[string]string{"dead-count": "3", "delivered-count": "0", "retrying-count": "0"} {
		n := one(t, bad, id)
		if attr(n, "data-count") != want || !strings.HasPrefix(text(n), want+" ") {
			t.Errorf("bad %s %q", id, text(n))
		}
		state := strings.TrimSuffix(id, "-count")
		want := "/subscriptions/" + s.bad.String() + "?state=" + state
		if state == "delivered" {
			want = ""
		}
		if got := attr(n, "href"); got != want {
			t.Errorf("%s links to %q, want %q", id, got, want)
		}
	}
	if got, attempts := attr(one(t, good, "delivered-count"), "data-count"), text(one(t, good, "attempts")); got != "3" || attempts != "3" {
		t.Errorf("good: %s delivered beside %s attempts at 100 %%, want 3 and 3", got, attempts)
	}
	if got := text(one(t, bad, "consecutive-failures")); got != "3" {
		t.Errorf("bad consecutive failures %q", got)
	}
	if got := text(one(t, good, "last-failure")); got != "none in the last 24 hours" {
		t.Errorf("good last failure %q", got)
	}
	if got := text(one(t, bad, "p50")); !strings.HasSuffix(got, "ms") && !strings.HasSuffix(got, " s") {
		t.Errorf("bad p50 %q", got)
	}
	if got := text(one(t, bad, "event-types")); got != "order.paid" {
		t.Errorf("bad event types %q", got)
	}
	if got := text(one(t, good, "event-types")); got != "all events" {
		t.Errorf("good event types %q", got)
	}
	checkHealthChart(t, bad)

	link := one(t, bad, "subscription-link")
	if attr(link, "href") != "/subscriptions/"+s.bad.String() {
		t.Errorf("link %q", attr(link, "href"))
	}
}

// checkHealthChart checks the failing subscription's card's chart: a bar per hour, one row of numbers per
// bar, its one attempt failed.
func checkHealthChart(t *testing.T, card *html.Node) {
	t.Helper()
	chart := one(t, card, "health-chart")
	svg := findAll(chart, tag("svg"))
	if len(svg) != 1 {
		t.Fatal("no inline svg chart")
	}
	bars := byTestID(svg[0], "chart-bar")
	if len(bars) < 24 || len(bars) > 25 {
		t.Errorf("%d hourly bars", len(bars))
	}
	// The numbers without hovering: one table row per bar.
	if rows := findAll(one(t, chart, "chart-table"), tag("tr")); len(rows) != len(bars)+1 {
		t.Errorf("chart table: %d rows for %d bars", len(rows), len(bars))
	}
	fails := findAll(svg[0], func(n *html.Node) bool { return n.Data == "rect" && attr(n, "class") == "fail" })
	oks := findAll(svg[0], func(n *html.Node) bool { return n.Data == "rect" && attr(n, "class") == "ok" })
	if len(fails) != 1 || len(oks) != 0 {
		t.Errorf("bad endpoint chart: %d failure bars, %d success bars", len(fails), len(oks))
	}
}

func TestSubscriptionPageFiltersAndPages(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	s := seed(e, "filter", 2)
	c := e.client()
	c.login(s.tn.Email)

	p := c.get("/subscriptions/" + s.bad.String())
	if p.Status != http.StatusOK {
		t.Fatal(p)
	}
	crumbs := text(one(t, p.Doc, "breadcrumb"))
	if crumbs != "Subscriptions filter bad endpoint" {
		t.Errorf("breadcrumb %q", crumbs)
	}
	if !strings.Contains(text(one(t, p.Doc, "contract")), "up to 3 attempts") ||
		!strings.Contains(text(one(t, p.Doc, "contract")), "dedupe on webhook-id") {
		t.Errorf("contract: %q", text(one(t, p.Doc, "contract")))
	}
	one(t, p.Doc, "pause")
	if len(byTestID(p.Doc, "resume")) != 0 {
		t.Error("an active subscription offers Resume")
	}
	rows := byTestID(p.Doc, "delivery-row")
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}

	for state, want := range map[string]int{"dead": 2, "failed": 2, "expired": 0, "delivered": 0, "all": 2, "pending": 0, "retrying": 0, "in_flight": 0} {
		p := c.get("/subscriptions/" + s.bad.String() + "?state=" + state)
		if p.Status != http.StatusOK {
			t.Fatalf("state=%s: %s", state, p)
		}
		rows := byTestID(p.Doc, "delivery-row")
		if len(rows) != want {
			t.Errorf("state=%s: %d rows, want %d", state, len(rows), want)
		}
		for _, r := range rows {
			if state != "all" && attr(r, "data-state") != "failed" {
				t.Errorf("state=%s lists a %s delivery", state, attr(r, "data-state"))
			}
		}
		cur := findAll(p.Doc, func(n *html.Node) bool { return attr(n, "data-testid") == "state-tab" && hasAttr(n, "aria-current") })
		if len(cur) != 1 || attr(cur[0], "data-state") != state {
			t.Errorf("state=%s: the tabs do not show it", state)
		}
	}
	if p := c.get("/subscriptions/" + s.bad.String() + "?state=dead&event_type=other.type"); len(byTestID(p.Doc, "delivery-row")) != 0 {
		t.Error("event type filter ignored")
	}
	if p := c.get("/subscriptions/" + s.bad.String() + "?since=2999-01-01T00:00"); len(byTestID(p.Doc, "delivery-row")) != 0 {
		t.Error("since filter ignored")
	}
	if p := c.get("/subscriptions/" + s.bad.String() + "?until=2000-01-01T00:00"); len(byTestID(p.Doc, "delivery-row")) != 0 {
		t.Error("until filter ignored")
	}
	p = c.get("/subscriptions/" + s.bad.String() + "?state=bogus")
	if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "filter-error")), "bogus") {
		t.Errorf("bad state: %s", p)
	}
	p = c.get("/subscriptions/" + s.bad.String() + "?since=yesterday")
	if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "filter-error")), "From") {
		t.Errorf("bad since: %s", p)
	}

	checkSubscriptionPaging(t, e, c, s.tn)
}

// checkSubscriptionPaging checks a subscription's list pages: a paused subscription keeps 30 deliveries
// pending, listed 25 and then 5, each once.
func checkSubscriptionPaging(t *testing.T, e *env, c *client, tn tenant) {
	t.Helper()
	// Paging: a paused subscription keeps 30 deliveries pending.
	paused := e.newSubscription(tn, "/good/paged", "paged")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, paused.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		b := `{"n":` + strconv.Itoa(i) + `}`
		if _, err := e.srv.Publisher.Publish(context.Background(), publish.PublishInput{
			TenantID: tn.ID, EventType: "page.test", Payload: []byte(b), OnlySubscription: &paused.ID,
		}); err != nil {
			t.Fatal(err)
		}
	}
	p := c.get("/subscriptions/" + paused.ID.String() + "?state=pending")
	first := byTestID(p.Doc, "delivery-row")
	if len(first) != 25 {
		t.Fatalf("first page: %d rows", len(first))
	}
	if got := text(one(t, p.Doc, "total")); got != "30 matching deliveries" {
		t.Errorf("total %q", got)
	}
	next := attr(one(t, p.Doc, "next-page"), "href")
	if !strings.Contains(next, "state=pending") || !strings.Contains(next, "cursor=") {
		t.Errorf("next link %q", next)
	}
	p = c.get(next)
	second := byTestID(p.Doc, "delivery-row")
	if len(second) != 5 || len(byTestID(p.Doc, "next-page")) != 0 {
		t.Fatalf("second page: %d rows", len(second))
	}
	if attr(one(t, p.Doc, "first-page"), "href") != "/subscriptions/"+paused.ID.String()+"?state=pending" {
		t.Errorf("first-page link %q", attr(one(t, p.Doc, "first-page"), "href"))
	}
	seen := map[string]bool{}
	for _, r := range append(first, second...) {
		if seen[attr(r, "data-id")] {
			t.Errorf("delivery %s on both pages", attr(r, "data-id"))
		}
		seen[attr(r, "data-id")] = true
	}
	one(t, p.Doc, "resume")
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("pause")
	sub := e.newSubscription(tn, "/good/pause", "pausable")
	c := e.client()
	c.login(tn.Email)
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := c.post("/subscriptions/"+sub.ID.String()+"/pause", nil)
	if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/subscriptions/"+sub.ID.String() {
		t.Fatalf("pause: %d to %q", p.Status, p.Header.Get("Location"))
	}
	c.http.CheckRedirect = nil
	p = c.get("/subscriptions/" + sub.ID.String())
	if got := text(one(t, p.Doc, "flash")); !strings.HasPrefix(got, "Paused.") {
		t.Errorf("flash %q", got)
	}
	if got := text(byTestID(p.Doc, "state")[0]); got != "paused" {
		t.Errorf("state %q", got)
	}
	one(t, p.Doc, "resume")
	if len(byTestID(p.Doc, "pause")) != 0 {
		t.Error("a paused subscription offers Pause")
	}
	// The flash shows once.
	if p := c.get("/subscriptions/" + sub.ID.String()); len(byTestID(p.Doc, "flash")) != 0 {
		t.Error("flash shown twice")
	}
	// An event published while paused waits, and goes once resumed.
	id := e.publish(tn, "order.paid", map[string]any{"order": 1})[0]
	p = c.get("/deliveries/" + id.String())
	if got := text(one(t, p.Doc, "state-text")); !strings.Contains(got, "paused") {
		t.Errorf("pending on a paused subscription: %q", got)
	}
	p = c.post("/subscriptions/"+sub.ID.String()+"/resume", nil)
	if p.URL.Path != "/subscriptions/"+sub.ID.String() || !strings.HasPrefix(text(one(t, p.Doc, "flash")), "Resumed.") {
		t.Fatalf("resume: %s", p)
	}
	one(t, p.Doc, "pause")
	e.waitState(tn, id, delivery.Delivered)
}

func TestCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("csrf")
	sub := e.newSubscription(tn, "/good/csrf", "csrf")
	c := e.client()
	c.login(tn.Email)
	for _, h := range []map[string]string{
		{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "https://evil.example"},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/subscriptions/"+sub.ID.String()+"/pause", nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		p := c.do(req)
		if p.Status != http.StatusForbidden {
			t.Errorf("cross-origin POST with %v: %s", h, p)
		}
		one(t, p.Doc, "error-403")
	}
	if got, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, sub.ID); got.State != "active" {
		t.Errorf("a refused POST paused the subscription: %s", got.State)
	}
	// A cross-site login POST is refused too (login CSRF).
	req, _ := http.NewRequest(http.MethodPost, e.base+"/login", strings.NewReader("email=a&password=b"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := e.client().do(req); p.Status != http.StatusForbidden {
		t.Errorf("cross-site login: %s", p)
	}
	// The API stays bearer-only: no cross-origin check there.
	req, _ = http.NewRequest(http.MethodPost, e.base+"/api/v1/tenants", strings.NewReader(`{"name":"cors"}`))
	req.Header.Set("Authorization", "Bearer web-test-admin-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://elsewhere.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Errorf("API POST with cross-site headers: %d", res.StatusCode)
	}
}

func TestDeliveryPage(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	s := seed(e, "detail", 1)
	c := e.client()
	c.login(s.tn.Email)

	// A permanent failure.
	p := c.get("/deliveries/" + s.dead[0].String())
	if p.Status != http.StatusOK {
		t.Fatal(p)
	}
	if got := text(one(t, p.Doc, "state-text")); got != "failed: the endpoint answered 400 Bad Request — a permanent error, not retried." {
		t.Errorf("state text %q", got)
	}
	if got := text(one(t, p.Doc, "breadcrumb")); !strings.HasPrefix(got, "Subscriptions detail bad endpoint Delivery ") {
		t.Errorf("breadcrumb %q", got)
	}
	if got := text(one(t, p.Doc, "request-url")); got != e.recv.URL+"/bad/detail" {
		t.Errorf("request url %q", got)
	}
	headers := text(one(t, p.Doc, "headers"))
	for _, want := range []string{"webhook-id", "webhook-timestamp", "webhook-signature", "content-type application/json"} {
		if !strings.Contains(headers, want) {
			t.Errorf("headers lack %s: %q", want, headers)
		}
	}
	body := one(t, p.Doc, "body")
	if raw := text(body); !strings.Contains(raw, `"order": 0`) || !strings.Contains(raw, `"type": "order.paid"`) {
		t.Errorf("body not pretty-printed: %q", raw)
	}
	attempts := byTestID(p.Doc, "attempt")
	if len(attempts) != 1 || attr(attempts[0], "data-status") != "400" {
		t.Fatalf("timeline: %d attempts", len(attempts))
	}
	if got := text(one(t, attempts[0], "attempt-snippet")); got != `{"error":"unknown order"}` {
		t.Errorf("snippet %q", got)
	}
	if got := text(one(t, p.Doc, "timeline-end")); got != "gave up: failed" {
		t.Errorf("timeline end %q", got)
	}
	one(t, p.Doc, "resend")

	// Out of attempts: three temporary failures with the gaps between them.
	flaky := e.newSubscription(s.tn, "/flaky/detail", "flaky", "flaky.event")
	id := e.publishTo(s.tn, flaky.ID, "flaky.event", map[string]any{"x": 1})
	e.waitState(s.tn, id, delivery.Expired)
	p = c.get("/deliveries/" + id.String())
	if got := text(one(t, p.Doc, "state-text")); got != "expired: out of attempts — all 3 failed (last: the endpoint answered 503 Service Unavailable)." {
		t.Errorf("expired state text %q", got)
	}
	attempts = byTestID(p.Doc, "attempt")
	if len(attempts) != 3 {
		t.Fatalf("%d attempts", len(attempts))
	}
	gaps := byTestID(p.Doc, "attempt-gap")
	if len(gaps) != 2 || !strings.HasPrefix(text(gaps[0]), "waited ") {
		t.Errorf("gaps: %d", len(gaps))
	}
	if !strings.Contains(text(attempts[0]), "no attempts or time left") { // newest first
		t.Errorf("last attempt: %q", text(attempts[0]))
	}
}

func TestResendSaysWhatHappened(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, func(c *config.Config) { c.MaxManualRetries = 1; c.ResendPerMinute = 1 })
	s := seed(e, "resend", 2)
	c := e.client()
	c.login(s.tn.Email)
	before := e.recv.count("/bad/resend")

	p := c.post("/deliveries/"+s.dead[0].String()+"/resend", nil)
	if p.URL.Path != "/deliveries/"+s.dead[0].String() {
		t.Fatalf("resend: %s", p)
	}
	if got := text(one(t, p.Doc, "flash")); !strings.HasPrefix(got, "Queued") {
		t.Errorf("flash %q", got)
	}
	e.recv.waitHits(t, "/bad/resend", before+1)
	e.waitState(s.tn, s.dead[0], delivery.Failed)

	// The second resend within the minute is rate-limited, and says when to try again.
	p = c.post("/deliveries/"+s.dead[1].String()+"/resend", nil)
	got := text(one(t, p.Doc, "flash"))
	if !regexp.MustCompile(`^Not resent: too many resends .* Try again in \d+ s\.$`).MatchString(got) {
		t.Errorf("rate-limited flash %q", got)
	}
	if attr(one(t, p.Doc, "flash"), "data-kind") != "warning" {
		t.Error("rate-limited flash is not a warning")
	}
	// Until the budget allows another, Resend is disabled and says when to try again.
	if !hasAttr(one(t, p.Doc, "resend"), "disabled") ||
		!regexp.MustCompile(`^Too many retries by hand for this subscription right now: try again in \d+ s\.$`).MatchString(text(one(t, p.Doc, "action-reason"))) {
		t.Errorf("rate-limited Resend: disabled %v, reason %q", hasAttr(one(t, p.Doc, "resend"), "disabled"), text(one(t, p.Doc, "action-reason")))
	}

	// The first delivery was resent once, the most allowed.
	p = c.post("/deliveries/"+s.dead[0].String()+"/resend", nil)
	if got := text(one(t, p.Doc, "flash")); got != "Not resent: the delivery was retried by hand 1 times, the most allowed." {
		t.Errorf("cap flash %q", got)
	}
	if got := text(one(t, p.Doc, "manual-retries")); got != "1 of 1 times" {
		t.Errorf("manual retries %q", got)
	}
	if n := len(byTestID(p.Doc, "attempt")); n != 2 {
		t.Errorf("timeline after resend: %d attempts", n)
	}
}

func TestResendWhileQueued(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("queued")
	sub := e.newSubscription(tn, "/good/queued", "queued")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	id := e.publish(tn, "order.paid", map[string]any{"order": 1})[0]
	c := e.client()
	c.login(tn.Email)
	p := c.get("/deliveries/" + id.String())
	if !hasAttr(one(t, p.Doc, "resend"), "disabled") {
		t.Error("Resend enabled for a queued delivery")
	}
	p = c.post("/deliveries/"+id.String()+"/resend", nil)
	if got := text(one(t, p.Doc, "flash")); got != "Not resent: the delivery is pending: it is already queued." {
		t.Errorf("flash %q", got)
	}
	if got := text(one(t, p.Doc, "timeline-end")); !strings.HasPrefix(got, "next attempt at ") {
		t.Errorf("timeline end %q", got)
	}
}

func TestSendTestEvent(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("test-event")
	sub := e.newSubscription(tn, "/good/test-event", "tested")
	other := e.newSubscription(tn, "/good/test-other", "other")
	c := e.client()
	c.login(tn.Email)
	sp := c.get("/subscriptions/" + sub.ID.String())
	if got := text(one(t, sp.Doc, "test-help")); got != "Sends hookline.test to this endpoint only" {
		t.Errorf("test button's help %q", got)
	}
	p := c.post("/subscriptions/"+sub.ID.String()+"/test", nil)
	if p.URL.Path != "/subscriptions/"+sub.ID.String() || p.Status != http.StatusOK {
		t.Fatalf("send test: %s", p)
	}
	flash := one(t, p.Doc, "flash")
	if got := text(flash); !strings.HasPrefix(got, "Sent a hookline.test event (a test, not a real event) to this endpoint only.") {
		t.Errorf("flash %q", got)
	}
	href := attr(one(t, flash, "flash-link"), "href")
	d := c.get(href)
	if !strings.HasPrefix(href, "/deliveries/") || d.Status != http.StatusOK {
		t.Fatalf("flash links %q: %s", href, d)
	}
	if !strings.Contains(text(one(t, d.Doc, "body")), `"type": "hookline.test"`) || !strings.Contains(text(one(t, d.Doc, "body")), `"test": true`) {
		t.Errorf("body %q", text(one(t, d.Doc, "body")))
	}
	e.recv.waitHits(t, "/good/test-event", 1)
	for _, h := range e.recv.all() {
		if h.Path == "/good/test-event" && h.Type != "hookline.test" {
			t.Errorf("receiver got type %q", h.Type)
		}
		// The endpoint learns nothing about who sent it: no email, not even its domain or local part.
		local, _, _ := strings.Cut(tn.Email, "@")
		if h.Path == "/good/test-event" && (strings.Contains(h.Body, tn.Email) || strings.Contains(h.Body, local)) {
			t.Errorf("the test event carries the user's email: %s", h.Body)
		}
	}
	page, err := e.srv.Deliveries.List(context.Background(), tn.ID, deliveries.Filter{SubscriptionID: &other.ID})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("the other subscription got %d deliveries (%v)", len(page.Items), err)
	}
	// A subscription that filters event types gets hookline.test too, never one of its real types; an
	// all-types subscription and one that takes hookline.test itself get nothing from it.
	typed := e.newSubscription(tn, "/good/test-typed", "typed", "invoice.created")
	takesTest := e.newSubscription(tn, "/good/test-takes", "takes tests", "hookline.test")
	p = c.post("/subscriptions/"+typed.ID.String()+"/test", nil)
	d = c.get(attr(one(t, p.Doc, "flash-link"), "href"))
	if body := text(one(t, d.Doc, "body")); !strings.Contains(body, `"type": "hookline.test"`) || strings.Contains(body, "invoice.created") {
		t.Errorf("typed test event body %q", body)
	}
	for _, id := range []uuid.UUID{other.ID, takesTest.ID} {
		if page, err := e.srv.Deliveries.List(context.Background(), tn.ID, deliveries.Filter{SubscriptionID: &id}); err != nil || len(page.Items) != 0 {
			t.Errorf("subscription %s got %d deliveries of another's test event (%v)", id, len(page.Items), err)
		}
	}
	if !eventtype.Valid(web.TestEventType) {
		t.Errorf("%s is not a valid event type", web.TestEventType)
	}
	// Paused: it waits, and the flash says so.
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	p = c.post("/subscriptions/"+sub.ID.String()+"/test", nil)
	if got := text(one(t, p.Doc, "flash")); !strings.Contains(got, "waits until you resume") {
		t.Errorf("paused flash %q", got)
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	a := seed(e, "iso-a", 1)
	b := e.newTenant("iso-b")
	c := e.client()
	c.login(b.Email)
	sub, del := a.bad.String(), a.dead[0].String()
	before := e.recv.count("/bad/iso-a")
	for _, r := range []struct{ method, path string }{
		{"GET", "/subscriptions/" + sub},
		{"GET", "/subscriptions/" + sub + "?state=dead"},
		{"POST", "/subscriptions/" + sub + "/pause"},
		{"POST", "/subscriptions/" + sub + "/resume"},
		{"POST", "/subscriptions/" + sub + "/test"},
		{"GET", "/deliveries/" + del},
		{"POST", "/deliveries/" + del + "/resend"},
		{"GET", "/subscriptions/not-a-uuid"},
		{"GET", "/deliveries/not-a-uuid"},
		{"GET", "/admin"},
		{"GET", "/no/such/page"},
	} {
		var p *page
		if r.method == "GET" {
			p = c.get(r.path)
		} else {
			p = c.post(r.path, nil)
		}
		if p.Status != http.StatusNotFound {
			t.Errorf("%s %s as another tenant: %s", r.method, r.path, p)
			continue
		}
		one(t, p.Doc, "error-404")
		if strings.Contains(p.Body, "iso-a") {
			t.Errorf("%s %s shows the other tenant's data", r.method, r.path)
		}
	}
	if s, _ := e.srv.Subscriptions.Get(context.Background(), a.tn.ID, a.bad); s.State != "active" {
		t.Errorf("another tenant changed the subscription: %s", s.State)
	}
	if d, _ := e.srv.Deliveries.Get(context.Background(), a.tn.ID, a.dead[0]); d.ManualRetries != 0 || d.State != delivery.Failed {
		t.Errorf("another tenant resent the delivery: %s, %d", d.State, d.ManualRetries)
	}
	if e.recv.count("/bad/iso-a") != before {
		t.Error("another tenant's action reached the endpoint")
	}
	// The owner sees them.
	ca := e.client()
	ca.login(a.tn.Email)
	if p := ca.get("/deliveries/" + del); p.Status != http.StatusOK {
		t.Errorf("owner: %s", p)
	}
}

func TestNotFoundPageAndAssets(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("assets")
	e.newSubscription(tn, "/good/assets", "assets")
	c := e.client()
	home := c.login(tn.Email)
	p := c.get("/no/such/page")
	if p.Status != http.StatusNotFound {
		t.Fatal(p)
	}
	one(t, p.Doc, "error-404")
	one(t, p.Doc, "breadcrumb")
	one(t, p.Doc, "user")

	var assets []string
	for _, doc := range []*page{home, p, c.get("/login")} {
		for _, n := range findAll(doc.Doc, func(n *html.Node) bool {
			return (n.Data == "link" && (attr(n, "rel") == "stylesheet" || attr(n, "rel") == "icon")) || n.Data == "img" || n.Data == "script"
		}) {
			src := attr(n, "href") + attr(n, "src")
			if src != "" {
				assets = append(assets, src)
			}
		}
	}
	if len(assets) < 3 {
		t.Fatalf("assets: %v", assets)
	}
	types := map[string]string{".css": "text/css", ".svg": "image/svg+xml"}
	for _, a := range assets {
		res, err := http.Get(e.base + a)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", a, res.StatusCode)
		}
		for ext, ct := range types {
			if strings.HasSuffix(a, ext) && !strings.HasPrefix(res.Header.Get("Content-Type"), ct) {
				t.Errorf("%s: content type %q", a, res.Header.Get("Content-Type"))
			}
		}
	}
	res, err := http.Get(e.base + "/static/nope.css")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close() // an unread, unclosed body would keep its connection (and two goroutines) for good
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("missing asset: %d", res.StatusCode)
	}
	if csp := home.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

func TestAdminSeesTenants(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, func(c *config.Config) { c.AdminEmail = "ops@example.com"; c.AdminPassword = password })
	tn := e.newTenant("admin-visible")
	c := e.client()
	p := c.login("ops@example.com")
	if p.URL.Path != "/admin" {
		t.Fatalf("admin lands on %s", p.URL)
	}
	if !strings.Contains(text(one(t, p.Doc, "tenants")), tn.ID.String()) {
		t.Error("tenant not listed")
	}
	if p := c.get("/"); p.URL.Path != "/admin" {
		t.Errorf("admin home: %s", p)
	}
	if p := c.get("/subscriptions/" + uuid.NewString()); p.Status != http.StatusNotFound {
		t.Errorf("admin on a customer page: %s", p)
	}
}
