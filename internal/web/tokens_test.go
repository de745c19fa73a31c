package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/tenants"
)

// The operator's tenant page lists the tenant's API tokens (name, scopes, created, last used; never the
// value) and revokes one with a POST; the revoked token no longer authenticates.
func TestAdminTenantPageListsAndRevokesTokens(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, withAdmin)
	ctx := activity.System(context.Background(), "test setup")
	tn := e.newTenant("tokens")
	other := e.newTenant("tokens-other")
	ci, err := e.srv.Tenants.CreateToken(ctx, tn.ID, "ci deploys", []string{"events:write"})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := e.srv.Tenants.CreateToken(ctx, tn.ID, "ops console", []string{"events:write", "subscriptions:read"})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := e.srv.Tenants.CreateToken(ctx, other.ID, "someone else's", []string{"events:write"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.Tenants.Authenticate(ctx, ops.Token); err != nil { // sets last used
		t.Fatal(err)
	}

	c := e.client()
	c.login(adminEmail)
	p := c.get("/admin/tenants/" + tn.ID.String())
	rows := byTestID(p.Doc, "token")
	if p.Status != http.StatusOK || len(rows) != 2 {
		t.Fatalf("tenant page: %s with %d tokens", p, len(rows))
	}
	for _, tok := range []string{ci.Token, ops.Token, foreign.Token} {
		if strings.Contains(p.Body, tok) {
			t.Error("the page shows a token's value")
		}
	}
	byID := map[string]string{}
	for _, r := range rows {
		byID[attr(r, "data-id")] = text(one(t, r, "token-name")) + " | " + text(one(t, r, "token-scopes")) + " | " +
			text(one(t, r, "token-last-used"))
		if text(one(t, r, "token-created")) == "" {
			t.Error("no creation time")
		}
	}
	if got := byID[ci.ID.String()]; got != "ci deploys | events:write | never" {
		t.Errorf("ci token row %q", got)
	}
	if got := byID[ops.ID.String()]; !strings.HasPrefix(got, "ops console | events:write, subscriptions:read | ") || strings.Contains(got, "never") {
		t.Errorf("ops token row %q", got)
	}

	// Revoke: a POST from the page's form.
	var action string
	for _, r := range rows {
		if attr(r, "data-id") == ci.ID.String() {
			form := one(t, r, "revoke-form")
			if attr(form, "method") != "post" {
				t.Errorf("revoke form method %q", attr(form, "method"))
			}
			action = attr(form, "action")
		}
	}
	p = c.post(action, nil)
	if p.Status != http.StatusOK || p.URL.Path != "/admin/tenants/"+tn.ID.String() || !strings.Contains(text(one(t, p.Doc, "flash")), "Token revoked") {
		t.Fatalf("revoke: %s %q", p, p.text())
	}
	if rows := byTestID(p.Doc, "token"); len(rows) != 1 || attr(rows[0], "data-id") != ops.ID.String() {
		t.Errorf("after revoking, %d tokens listed", len(rows))
	}
	if _, err := e.srv.Tenants.Authenticate(ctx, ci.Token); err == nil {
		t.Error("the revoked token still authenticates")
	}
	if _, err := e.srv.Tenants.Authenticate(ctx, ops.Token); err != nil {
		t.Errorf("the other token stopped working: %v", err)
	}

	checkRevokeRefused(t, e, c, tn, action, ops, foreign)
}

// checkRevokeRefused checks what may not revoke a token cannot: the revoked one again (action), another
// tenant's token through tn's page, a garbled id, a customer, another site (CSRF); ops and foreign keep working.
func checkRevokeRefused(t *testing.T, e *env, c *client, tn tenant, action string, ops, foreign tenants.CreatedToken) {
	t.Helper()
	ctx := activity.System(context.Background(), "test setup")
	// Again, another tenant's token through this tenant's page, or a garbled id: the 404 page.
	for _, path := range []string{
		action,
		"/admin/tenants/" + tn.ID.String() + "/tokens/" + foreign.ID.String() + "/revoke",
		"/admin/tenants/" + tn.ID.String() + "/tokens/" + uuid.NewString() + "/revoke",
		"/admin/tenants/" + tn.ID.String() + "/tokens/nope/revoke",
	} {
		if p := c.post(path, nil); p.Status != http.StatusNotFound {
			t.Errorf("POST %s: %s", path, p)
		}
	}
	if _, err := e.srv.Tenants.Authenticate(ctx, foreign.Token); err != nil {
		t.Errorf("another tenant's token was revoked: %v", err)
	}

	// A customer cannot revoke (the admin pages are a 404 to them), nor can another site (CSRF).
	cust := e.client()
	cust.login(tn.Email)
	if p := cust.post("/admin/tenants/"+tn.ID.String()+"/tokens/"+ops.ID.String()+"/revoke", nil); p.Status != http.StatusNotFound {
		t.Errorf("a customer's revoke: %s", p)
	}
	req, _ := http.NewRequest(http.MethodPost, e.base+"/admin/tenants/"+tn.ID.String()+"/tokens/"+ops.ID.String()+"/revoke", strings.NewReader(url.Values{}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := c.do(req); p.Status != http.StatusForbidden {
		t.Errorf("a cross-site revoke: %s", p)
	}
	if _, err := e.srv.Tenants.Authenticate(ctx, ops.Token); err != nil {
		t.Errorf("a refused revoke revoked: %v", err)
	}
}
