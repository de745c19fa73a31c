package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/testdb"
)

// Without HOOKLINE_SECRET_KEY the operator pages carry a standing warning; with one they do not, and
// customers never see it.
func TestAdminWarnsWithoutSecretKey(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, withAdmin)
	tn := e.newTenant("secret-key-banner")
	admin := e.client()
	admin.login(adminEmail)
	for _, path := range []string{"/admin", "/admin/dead"} {
		p := admin.get(path)
		if w := text(one(t, p.Doc, "warning-banner")); !strings.Contains(w, "HOOKLINE_SECRET_KEY") || !strings.Contains(w, "unencrypted") {
			t.Fatalf("%s: banner %q", path, w)
		}
	}
	customer := e.client()
	customer.login(tn.Email)
	if p := customer.get("/"); len(byTestID(p.Doc, "warning-banner")) != 0 {
		t.Fatal("a customer sees the operators' warning")
	}

	// A server with a key, on a database of its own: the start seals every plaintext row of its
	// database, which would lock the package's other (keyless) servers out of theirs.
	url, drop, err := testdb.Create(context.Background(), "web_secretkey")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	keyed := setup(t, withBackground, func(c *config.Config) {
		withAdmin(c)
		c.DatabaseURL = url
		c.SecretKey = secretbox.NewKey()
	})
	admin = keyed.client()
	admin.login(adminEmail)
	if p := admin.get("/admin"); len(byTestID(p.Doc, "warning-banner")) != 0 {
		t.Fatalf("warning shown although a key is configured: %q", text(one(t, p.Doc, "warning-banner")))
	}
}
