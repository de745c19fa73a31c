package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/net/html"
)

// inputOf is the input named name inside n.
func inputOf(t *testing.T, n *html.Node, name string) *html.Node {
	t.Helper()
	for _, in := range findAll(n, tag("input")) {
		if attr(in, "name") == name {
			return in
		}
	}
	t.Fatalf("no input named %q", name)
	return nil
}

// fieldError checks that the page is status, and that the field's input carries the message beside it:
// the input is aria-invalid and described by the message's element.
func fieldError(t *testing.T, p *page, status int, input *html.Node, want string) {
	t.Helper()
	if p.Status != status {
		t.Fatalf("status %s, want %d: %q", p, status, p.text())
	}
	id := attr(input, "aria-describedby")
	if attr(input, "aria-invalid") != "true" || id == "" {
		t.Fatalf("input %q is not marked invalid", attr(input, "name"))
	}
	msg := one(t, p.Doc, id)
	if !strings.Contains(text(msg), want) {
		t.Errorf("beside %q: %q, want %q", attr(input, "name"), text(msg), want)
	}
	if msg.Parent != input.Parent {
		t.Errorf("the message of %q is not beside it", attr(input, "name"))
	}
}

func TestAdminCreatesTenant(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	customer := e.client()
	customer.login(e.newTenant("not-an-operator").Email)
	admin := e.client()
	admin.login(adminEmail)

	if p := admin.get("/admin"); attr(one(t, p.Doc, "new-tenant"), "href") != "/admin/tenants/new" {
		t.Error("the overview does not link to the new tenant form")
	}
	p := admin.get("/admin/tenants/new")
	if p.Status != http.StatusOK {
		t.Fatalf("form: %s", p)
	}
	form := one(t, p.Doc, "new-tenant-form")
	if attr(form, "method") != "post" || attr(form, "action") != "/admin/tenants" {
		t.Errorf("form posts %s to %s", attr(form, "method"), attr(form, "action"))
	}
	inputOf(t, form, "name")

	p = admin.post("/admin/tenants", url.Values{"name": {"   "}})
	fieldError(t, p, http.StatusBadRequest, inputOf(t, one(t, p.Doc, "new-tenant-form"), "name"), "Name must be 1 to 200 characters")
	long := strings.Repeat("n", 201)
	p = admin.post("/admin/tenants", url.Values{"name": {long}})
	in := inputOf(t, one(t, p.Doc, "new-tenant-form"), "name")
	fieldError(t, p, http.StatusBadRequest, in, "Name must be 1 to 200 characters")
	if attr(in, "value") != long {
		t.Error("the typed name is not kept")
	}

	name := "Created " + uuid.NewString()[:8]
	p = admin.post("/admin/tenants", url.Values{"name": {name}})
	if p.Status != http.StatusOK || !strings.HasPrefix(p.URL.Path, "/admin/tenants/") {
		t.Fatalf("create: %s", p)
	}
	if got := text(one(t, p.Doc, "tenant-name")); got != name {
		t.Errorf("led to %q, want the new tenant %q", got, name)
	}
	if !strings.Contains(p.text(), "Tenant created") {
		t.Error("no message says the tenant was created")
	}
	id := uuid.MustParse(strings.TrimPrefix(p.URL.Path, "/admin/tenants/"))
	if tn, err := e.srv.Tenants.GetTenant(context.Background(), id); err != nil || tn.Name != name {
		t.Errorf("stored: %+v, %v", tn, err)
	}
	if attr(one(t, p.Doc, "tenant-users"), "href") != "/admin/tenants/"+id.String()+"/users" ||
		attr(one(t, p.Doc, "tenant-new-token"), "href") != "/admin/tenants/"+id.String()+"/tokens/new" {
		t.Error("the tenant page does not link to its users and to a new token")
	}

	// A customer finds nothing here, and creates nothing.
	if p := customer.get("/admin/tenants/new"); p.Status != http.StatusNotFound {
		t.Errorf("customer GET the form: %s", p)
	}
	if p := customer.post("/admin/tenants", url.Values{"name": {"by a customer"}}); p.Status != http.StatusNotFound {
		t.Errorf("customer POST: %s", p)
	}
	// Nor does another site, with the operator's cookie.
	req, _ := http.NewRequest(http.MethodPost, e.base+"/admin/tenants", strings.NewReader(url.Values{"name": {"by another site"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := admin.do(req); p.Status != http.StatusForbidden {
		t.Errorf("cross-origin POST: %s", p)
	}
	ts, _ := e.srv.Tenants.ListTenants(context.Background())
	for _, tn := range ts {
		if tn.Name == "by a customer" || tn.Name == "by another site" {
			t.Errorf("tenant %q created", tn.Name)
		}
	}
}

// userRow is the users page's row of email.
func userRow(t *testing.T, p *page, email string) *html.Node {
	t.Helper()
	for _, n := range byTestID(p.Doc, "user-row") {
		if text(one(t, n, "user-email")) == email {
			return n
		}
	}
	t.Fatalf("user %s not listed: %q", email, p.text())
	return nil
}

func TestAdminManagesUsers(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	tn := e.newTenant("users page")
	other := e.newTenant("users page other")
	admin := e.client()
	admin.login(adminEmail)
	base := "/admin/tenants/" + tn.ID.String() + "/users"

	p := admin.get(base)
	if p.Status != http.StatusOK {
		t.Fatalf("users page: %s", p)
	}
	userRow(t, p, tn.Email)
	if strings.Contains(p.text(), other.Email) {
		t.Error("another tenant's user is listed")
	}
	add := one(t, p.Doc, "add-user-form")
	if attr(add, "action") != base {
		t.Errorf("add form posts to %s", attr(add, "action"))
	}

	email := "new-" + uuid.NewString()[:8] + "@example.com"
	p = admin.post(base, url.Values{"email": {"not an address"}, "password": {password}})
	fieldError(t, p, http.StatusBadRequest, inputOf(t, one(t, p.Doc, "add-user-form"), "email"), "Email is not a valid address")
	p = admin.post(base, url.Values{"email": {email}, "password": {"short"}})
	form := one(t, p.Doc, "add-user-form")
	fieldError(t, p, http.StatusBadRequest, inputOf(t, form, "password"), "Password must be at least 10 characters; it has 5")
	if attr(inputOf(t, form, "email"), "value") != email || attr(inputOf(t, form, "password"), "value") != "" {
		t.Error("the email is not kept, or the password is echoed")
	}
	p = admin.post(base, url.Values{"email": {other.Email}, "password": {password}})
	fieldError(t, p, http.StatusConflict, inputOf(t, one(t, p.Doc, "add-user-form"), "email"), "already a user's")

	p = admin.post(base, url.Values{"email": {email}, "password": {password}})
	if p.Status != http.StatusOK || p.URL.Path != base || !strings.Contains(p.text(), "User "+email+" added") {
		t.Fatalf("add: %s %q", p, p.text())
	}
	row := userRow(t, p, email)
	userID := attr(row, "data-id")

	// The new user signs in to the tenant's dashboard.
	user := e.client()
	user.login(email)
	if p := user.get("/"); p.Status != http.StatusOK || p.URL.Path != "/" {
		t.Fatalf("the new user's home: %s", p)
	}

	checkNewPassword(t, admin, user, tn, base, userID, email)

	checkUsersRefused(t, admin, user, other, base, userID)

	// Removed: the user's session ends at its next request.
	p = admin.post(base+"/"+userID+"/remove", nil)
	if p.Status != http.StatusOK || !strings.Contains(p.text(), "User removed") {
		t.Fatalf("remove: %s %q", p, p.text())
	}
	for _, n := range byTestID(p.Doc, "user-email") {
		if text(n) == email {
			t.Error("the removed user is still listed")
		}
	}
	if p := user.get("/"); p.URL.Path != "/login" {
		t.Errorf("the removed user's next request: %s, want the sign-in page", p)
	}
	if p := user.get("/deliveries"); p.URL.Path != "/login" {
		t.Errorf("the removed user's later request: %s", p)
	}
	if p := admin.post(base+"/"+userID+"/remove", nil); p.Status != http.StatusNotFound {
		t.Errorf("removing twice: %s", p)
	}
}

// checkUsersRefused checks another tenant's user through this tenant's path (base) and made-up ids are
// the 404 page, and a customer of this tenant (user) finds none of the users pages.
func checkUsersRefused(t *testing.T, admin, user *client, other tenant, base, userID string) {
	t.Helper()
	// Another tenant's user through this tenant's path, and made-up ids, are the 404 page.
	otherID := ""
	for _, n := range byTestID(admin.get("/admin/tenants/"+other.ID.String()+"/users").Doc, "user-row") {
		otherID = attr(n, "data-id")
	}
	for _, path := range []string{base + "/" + otherID + "/remove", base + "/" + otherID + "/password", base + "/" + uuid.NewString() + "/remove", base + "/nope/remove"} {
		if p := admin.post(path, url.Values{"password": {"another password"}}); p.Status != http.StatusNotFound {
			t.Errorf("POST %s: %s", path, p)
		}
	}
	if p := admin.get("/admin/tenants/" + uuid.NewString() + "/users"); p.Status != http.StatusNotFound {
		t.Errorf("users of an unknown tenant: %s", p)
	}

	// A customer, even of this tenant, finds none of it.
	for _, path := range []string{base, base + "/" + userID + "/remove"} {
		var p *page
		if strings.HasSuffix(path, "/remove") {
			p = user.post(path, nil)
		} else {
			p = user.get(path)
		}
		if p.Status != http.StatusNotFound {
			t.Errorf("customer %s: %s", path, p)
		}
	}
}

// checkNewPassword sets a new password for the user: too short is refused beside that user's field, then it
// is set, the session signed in with the old one ends and the new one signs in.
func checkNewPassword(t *testing.T, admin, user *client, tn tenant, base, userID, email string) {
	t.Helper()
	// A new password: too short is refused beside that user's field, then set.
	p := admin.post(base+"/"+userID+"/password", url.Values{"password": {"short"}})
	fieldError(t, p, http.StatusBadRequest, inputOf(t, one(t, userRow(t, p, email), "password-form"), "password"), "Password must be at least 10 characters; it has 5")
	if byTestID(userRow(t, p, tn.Email), "password-"+userID+"-error") != nil {
		t.Error("the message is beside another user too")
	}
	p = admin.post(base+"/"+userID+"/password", url.Values{"password": {"a brand new password"}})
	if p.Status != http.StatusOK || !strings.Contains(p.text(), "Password set") {
		t.Fatalf("reset: %s %q", p, p.text())
	}
	// The user's session signed in with the old password ends; the new one signs in.
	if p := user.get("/"); p.URL.Path != "/login" {
		t.Errorf("the user's session after a new password: %s, want the sign-in page", p)
	}
	if p := user.post("/login", url.Values{"email": {email}, "password": {password}}); p.Status != http.StatusUnauthorized {
		t.Errorf("sign-in with the old password: %s", p)
	}
	if p := user.post("/login", url.Values{"email": {email}, "password": {"a brand new password"}}); p.URL.Path != "/" {
		t.Errorf("sign-in with the new password: %s", p)
	}
	if p := user.get("/deliveries"); p.URL.Path != "/deliveries" {
		t.Errorf("signed in again with the new password: %s", p)
	}
}

func TestAdminCreatesToken(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	tn := e.newTenant("token page")
	admin := e.client()
	admin.login(adminEmail)
	base := "/admin/tenants/" + tn.ID.String() + "/tokens"

	p := admin.get(base + "/new")
	if p.Status != http.StatusOK {
		t.Fatalf("form: %s", p)
	}
	form := one(t, p.Doc, "new-token-form")
	var scopes []string
	for _, in := range findAll(form, tag("input")) {
		if attr(in, "type") == "checkbox" && attr(in, "name") == "scope" {
			scopes = append(scopes, attr(in, "value"))
		}
	}
	if strings.Join(scopes, " ") != "subscriptions:read subscriptions:write events:write deliveries:read deliveries:write portal:write" {
		t.Errorf("scope checkboxes: %v", scopes)
	}

	p = admin.post(base, url.Values{"name": {"ci"}})
	if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "scopes-error")), "Scopes must list at least one") {
		t.Errorf("no scope: %s %q", p, p.text())
	}
	p = admin.post(base, url.Values{"name": {""}, "scope": {"deliveries:read"}})
	form = one(t, p.Doc, "new-token-form")
	fieldError(t, p, http.StatusBadRequest, inputOf(t, form, "name"), "Name must be 1 to 200 characters")
	for _, in := range findAll(form, tag("input")) {
		if attr(in, "name") == "scope" && (attr(in, "value") == "deliveries:read") != hasAttr(in, "checked") {
			t.Errorf("scope %s: checked kept wrong", attr(in, "value"))
		}
	}
	p = admin.post(base, url.Values{"name": {"ci"}, "scope": {"deliveries:read", "admin"}})
	if p.Status != http.StatusBadRequest || !strings.Contains(text(one(t, p.Doc, "scopes-error")), `Unknown scope "admin"`) {
		t.Errorf("unknown scope: %s %q", p, p.text())
	}

	p = admin.post(base, url.Values{"name": {"ci deploys"}, "scope": {"subscriptions:read", "deliveries:read"}})
	if p.Status != http.StatusCreated {
		t.Fatalf("create: %s %q", p, p.text())
	}
	token := text(one(t, p.Doc, "token-value"))
	if !strings.HasPrefix(token, "hl_") || text(one(t, p.Doc, "created-scopes")) != "subscriptions:read, deliveries:read" {
		t.Fatalf("shown: %q, %q", token, text(one(t, p.Doc, "created-scopes")))
	}
	if p.Header.Get("Cache-Control") != "no-store" {
		t.Error("the page with the token may be cached")
	}
	checkTokenWorks(t, e, tn, token)

	// Listed on the tenant's page without its value; shown nowhere again.
	p = admin.get("/admin/tenants/" + tn.ID.String())
	found := false
	for _, n := range byTestID(p.Doc, "token") {
		found = found || text(one(t, n, "token-name")) == "ci deploys"
	}
	if !found || strings.Contains(p.Body, token) {
		t.Errorf("tenant page: listed %v, value shown %v", found, strings.Contains(p.Body, token))
	}
	if p := admin.get(base + "/new"); strings.Contains(p.Body, token) {
		t.Error("the form shows the token again")
	}

	customer := e.client()
	customer.login(tn.Email)
	if p := customer.get(base + "/new"); p.Status != http.StatusNotFound {
		t.Errorf("customer GET: %s", p)
	}
	if p := customer.post(base, url.Values{"name": {"mine"}, "scope": {"deliveries:read"}}); p.Status != http.StatusNotFound || strings.Contains(p.Body, "hl_") {
		t.Errorf("customer POST: %s", p)
	}
}

// checkTokenWorks checks token works with the API within its scopes (subscriptions:read, deliveries:read).
func checkTokenWorks(t *testing.T, e *env, tn tenant, token string) {
	t.Helper()
	// The token works with the API, within its scopes.
	for path, want := range map[string]int{"/subscriptions": http.StatusOK, "/events": http.StatusForbidden} {
		method := http.MethodGet
		if path == "/events" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, e.base+"/api/v1/tenants/"+tn.ID.String()+path, strings.NewReader(`{"type":"x","payload":{}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("API %s %s with the new token: %d, want %d", method, path, res.StatusCode, want)
		}
	}
}
