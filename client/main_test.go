package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hookline/hookline/client"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
	"github.com/hookline/hookline/internal/testdb"
)

// dbURL is this package's fresh database, shared by every test server (each test works in its own tenants).
var dbURL string

func TestMain(m *testing.M) {
	testdb.Main(m, "client", func(u string) { dbURL = u })
}

const adminToken = "client-test-admin-token"

// env is one real Hookline server and an SDK client of it holding the admin token.
type env struct {
	t     *testing.T
	base  string
	admin *client.Client
}

// newEnv starts a server for one test (its HTTP side only, or with the background services when a test
// waits for a delivery); it stops when the test ends.
func newEnv(t *testing.T, background bool) *env {
	t.Helper()
	cfg := servertest.Config(t, dbURL)
	cfg.AdminToken = adminToken
	start := servertest.Start
	if background {
		start = servertest.StartWithBackground
	}
	_, base := start(t, cfg, nil, server.Options{})
	e := &env{t: t, base: base}
	e.admin = e.client(adminToken)
	return e
}

// client is an SDK client of the server holding token, on a transport of its own whose idle connections
// are closed when the test ends (no goroutine outlives the tests).
func (e *env) client(token string) *client.Client {
	e.t.Helper()
	tr := &http.Transport{}
	e.t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(e.base, token, client.WithHTTP(&http.Client{Transport: tr, Timeout: 20 * time.Second}))
	if err != nil {
		e.t.Fatalf("client.New: %v", err)
	}
	return c
}

// newTenant creates a tenant with the admin token and returns its id.
func (e *env) newTenant(ctx context.Context, name string) string {
	e.t.Helper()
	res, err := e.admin.CreateTenantWithResponse(ctx, nil, client.CreateTenantJSONRequestBody{Name: name})
	if err != nil || res.JSON201 == nil {
		e.t.Fatalf("create tenant: %v", err)
	}
	return res.JSON201.ID
}

// newToken issues a tenant token with scopes and returns it as created (its id and value).
func (e *env) newToken(ctx context.Context, tenantID string, scopes ...client.Scope) client.CreatedToken {
	e.t.Helper()
	res, err := e.admin.CreateTokenWithResponse(ctx, tenantID, nil, client.CreateTokenJSONRequestBody{Name: "sdk-test", Scopes: scopes})
	if err != nil || res.JSON201 == nil {
		e.t.Fatalf("create token: %v", err)
	}
	return *res.JSON201
}
