package web_test

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/web"
)

// postFields are the form fields of every POST route of the dashboard, by route pattern. A route missing
// here fails TestFormsRefuseBadBytes and TestFormsAreBounded: add it with its fields when you add a form.
var postFields = map[string][]string{
	"/login":                                    {"email", "password", "next"},
	"/logout":                                   {},
	"/subscriptions/{id}/pause":                 {},
	"/subscriptions/{id}/resume":                {},
	"/subscriptions/{id}/test":                  {},
	"/event-types/{name}/send":                  {"subscription_id"},
	"/subscriptions/{id}/recover":               {"since", "action"},
	"/subscriptions":                            endpointFormFields,
	"/subscriptions/{id}":                       endpointFormFields,
	"/subscriptions/filter-test":                endpointFormFields,
	"/subscriptions/{id}/filter-test":           endpointFormFields,
	"/subscriptions/{id}/delete":                {},
	"/subscriptions/{id}/secret":                {},
	"/subscriptions/{id}/rotate-secret":         {},
	"/subscriptions/{id}/skip-key":              {"delivery_id", "ordering_key"},
	"/deliveries/{id}/resend":                   {},
	"/deliveries/{id}/retry-now":                {},
	"/admin/tenants/{id}/tokens/{token}/revoke": {},
	"/admin/tenants":                            {"name"},
	"/admin/tenants/{id}/users":                 {"email", "password"},
	"/admin/tenants/{id}/users/{user}/remove":   {},
	"/admin/tenants/{id}/users/{user}/password": {"password"},
	"/admin/tenants/{id}/tokens":                {"name", "scope"},
	"/admin/replay":                             {"tenant", "subscription", "event_type", "state", "reason", "from", "to", "spread", "action"},
}

// endpointFormFields are the endpoint form's fields, which its Test filter button posts too.
var endpointFormFields = []string{"url", "description", "event_types", "header_name", "header_value", "rate_limit_per_second",
	"auth_type", "auth_username", "auth_password", "auth_token_url", "auth_client_id", "auth_client_secret", "auth_scopes",
	"auth_audience", "auth_client_auth", "tls_certificate", "tls_private_key", "remove_client_certificate", "filter",
	"filter_test_type", "filter_test_event_type", "filter_test_payload", "retry_schedule_kind", "retry_schedule",
	"ordered", "on_dead"}

// largeForms are the routes that take more than 16 KiB, with their bound: the endpoint form carries a
// client certificate chain with its key, a filter and a payload to test it on.
var largeForms = map[string]int{
	"/subscriptions": 96 << 10, "/subscriptions/{id}": 96 << 10,
	"/subscriptions/filter-test": 96 << 10, "/subscriptions/{id}/filter-test": 96 << 10,
}

// postRoutes walks the dashboard's router for its POST routes, so a route added later is covered (or fails
// for want of its postFields entry).
func postRoutes(t *testing.T, e *env) []string {
	t.Helper()
	h := web.New(web.Options{Sessions: e.srv.Sessions, LoginThrottle: e.srv.LoginThrottle, Activity: e.srv.Activity, Tenants: e.srv.Tenants, Subscriptions: e.srv.Subscriptions})
	var out []string
	err := chi.Walk(h.Routes().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodPost {
			out = append(out, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	if len(out) < len(postFields) {
		t.Fatalf("the walk found %d POST routes (%v), fewer than the table's %d", len(out), out, len(postFields))
	}
	return out
}

// formFixture is what the form tests post to: a customer, an operator, and real ids for path parameters.
type formFixture struct {
	e               *env
	customer, admin *client
	ids             map[string]string // path prefix before {id} → id
}

func newFormFixture(t *testing.T) *formFixture {
	e := setup(t, httpOnly, withAdmin)
	tn := e.newTenant("forms")
	s := e.newSubscription(tn, "/ok", "forms")
	d := e.publishTo(tn, s.ID, "order.created", map[string]any{"n": 1})
	f := &formFixture{e: e, customer: e.client(), admin: e.client(), ids: map[string]string{
		"/subscriptions/": s.ID.String(), "/deliveries/": d.String(), "/admin/tenants/": tn.ID.String(),
	}}
	f.customer.login(tn.Email)
	f.admin.login(adminEmail)
	return f
}

// path fills a route pattern's parameters: {id} with the fixture's object of that kind, others with a
// made-up id.
func (f *formFixture) path(t *testing.T, route string) string {
	t.Helper()
	if before, _, ok := strings.Cut(route, "{id}"); ok {
		id, found := "", false
		for prefix, v := range f.ids {
			if strings.HasSuffix(before, prefix) {
				id, found = v, true
			}
		}
		if !found {
			t.Fatalf("no fixture id for %s", route)
		}
		route = strings.Replace(route, "{id}", id, 1)
	}
	for strings.Contains(route, "{") {
		i, j := strings.Index(route, "{"), strings.Index(route, "}")
		route = route[:i] + uuid.NewString() + route[j+1:]
	}
	return route
}

// validValues fills every field of a route with something ordinary.
func validValues(fields []string) url.Values {
	v := url.Values{}
	for _, k := range fields {
		v.Set(k, "ok")
	}
	return v
}

// noRedirects is c's cookie jar without following redirects, to read Location.
func noRedirects(c *client) *client {
	hc := *c.http
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{e: c.e, t: c.t, http: &hc, header: c.header}
}

// Every POST route refuses a form over 16 KiB (the endpoint form over its own bound) with 413 before
// reading it, whether the body says its length or not, and copies none of it into a Location header.
func TestFormsAreBounded(t *testing.T) {
	t.Parallel()
	f := newFormFixture(t)
	for _, route := range postRoutes(t, f.e) {
		bound := 16 << 10
		if b, ok := largeForms[route]; ok {
			bound = b
		}
		big := strings.Repeat("x", bound+1<<10)
		fields, ok := postFields[route]
		if !ok {
			t.Errorf("POST %s has no entry in postFields: add its form fields", route)
			continue
		}
		field := "filler"
		if len(fields) > 0 {
			field = fields[0]
		}
		for who, c := range map[string]*client{"customer": noRedirects(f.customer), "admin": noRedirects(f.admin)} {
			form := validValues(fields)
			form.Set(field, big)
			body := form.Encode()
			for _, chunked := range []bool{false, true} {
				var r io.Reader = strings.NewReader(body)
				if chunked {
					r = io.MultiReader(r) // hides the length: the body is sent chunked
				}
				req, _ := http.NewRequest(http.MethodPost, f.e.base+f.path(t, route), r)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", f.e.base)
				p := c.do(req)
				if p.Status != http.StatusRequestEntityTooLarge {
					t.Errorf("%s POST %s, 17 KiB (chunked %v): %d, want 413", who, route, chunked, p.Status)
				}
				if loc := p.Header.Get("Location"); len(loc) > 2048 || strings.Contains(loc, "xxxx") {
					t.Errorf("%s POST %s: Location of %d bytes", who, route, len(loc))
				}
				if strings.Contains(p.Body, "xxxxxxxx") {
					t.Errorf("%s POST %s: the form is echoed", who, route)
				}
			}
		}
	}
}

// A NUL byte or invalid UTF-8 in any field of any form is a 400 with a clear message, never a 500
// (PostgreSQL refuses both bytes), for a customer and for an operator; the sign-in form comes back.
func TestFormsRefuseBadBytes(t *testing.T) {
	t.Parallel()
	f := newFormFixture(t)
	for _, route := range postRoutes(t, f.e) {
		fields, ok := postFields[route]
		if !ok {
			t.Errorf("POST %s has no entry in postFields: add its form fields", route)
			continue
		}
		if len(fields) == 0 {
			fields = []string{"filler"} // a form without fields still has its body checked
		}
		for _, field := range fields {
			for name, bad := range map[string]string{"NUL": "a\x00b", "invalid UTF-8": "a\xff\xfeb"} {
				for who, c := range map[string]*client{"customer": noRedirects(f.customer), "admin": noRedirects(f.admin)} {
					form := validValues(fields)
					form.Set(field, bad)
					p := c.post(f.path(t, route), form)
					if p.Status != http.StatusBadRequest {
						t.Errorf("%s POST %s, %s in %q: %d, want 400", who, route, name, field, p.Status)
						continue
					}
					if !strings.Contains(p.text(), "NUL byte or text that is not valid UTF-8") || !strings.Contains(p.text(), "“"+field+"”") {
						t.Errorf("%s POST %s, %s in %q: the page does not say what is wrong: %q", who, route, name, field, p.text())
					}
					if route == "/login" && len(byTestID(p.Doc, "login-form")) != 1 {
						t.Errorf("%s POST /login, %s in %q: the sign-in form is not shown again", who, name, field)
					}
				}
			}
		}
	}
	// And not only through a browser's encoding: the raw bytes in a body and in a field's name.
	for _, body := range []string{"email=a%00b&password=x", "email=\xff&password=x", "em%00ail=a&password=x"} {
		req, _ := http.NewRequest(http.MethodPost, f.e.base+"/login", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", f.e.base)
		if p := f.e.client().do(req); p.Status != http.StatusBadRequest {
			t.Errorf("sign-in body %q: %d, want 400", body, p.Status)
		}
	}
}

// Recover leads back to a fixed URL: the since that was typed is shown again by the page (carried in the
// session), never copied into Location.
func TestRecoverRedirectCarriesNothingTyped(t *testing.T) {
	t.Parallel()
	f := newFormFixture(t)
	c := noRedirects(f.customer)
	subPath := "/subscriptions/" + f.ids["/subscriptions/"]
	long := "2026-01-02T03:04" + strings.Repeat("z", 8000)
	for _, since := range []string{long, "2026-01-02T03:04"} {
		p := c.post(subPath+"/recover", url.Values{"since": {since}, "action": {"confirm"}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("recover: %d, want 303", p.Status)
		}
		if loc := p.Header.Get("Location"); loc != subPath {
			t.Errorf("recover since %d bytes: Location %.80q, want %s", len(since), loc, subPath)
		}
	}
	// The short since comes back in the form once.
	p := f.customer.get(subPath)
	if got := recoverSinceValue(p); got != "2026-01-02T03:04" {
		t.Errorf("the form shows since %q, want the typed 2026-01-02T03:04", got)
	}
	if got := recoverSinceValue(f.customer.get(subPath)); got == "2026-01-02T03:04" {
		t.Errorf("the typed since is still shown on a later visit")
	}
}

func recoverSinceValue(p *page) string {
	for _, form := range byTestID(p.Doc, "recover-form") {
		for _, in := range findAll(form, tag("input")) {
			if attr(in, "name") == "since" {
				return attr(in, "value")
			}
		}
	}
	return ""
}
