package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// The operator onboards a customer from the admin pages: a new tenant, a dashboard user for it, and that
// user signs in to the tenant's (empty) dashboard.
func TestBrowserOperatorOnboardsATenant(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, withAdmin)
	name := "Onboarded " + uuid.NewString()[:8]
	email := "first-user-" + uuid.NewString()[:8] + "@example.com"

	b.login(e.base, adminEmail)
	b.waitJS("overview", `location.pathname === '/admin'`)
	b.run("new tenant",
		chromedp.Click(chromedp.CSS(`[data-testid=new-tenant]`)),
		chromedp.WaitVisible(chromedp.CSS(`#tenant-name`)),
	)
	b.assetsLoaded("new tenant")
	// An empty name is refused by the browser (required); a blank one by the server, beside the field.
	b.run("blank name",
		chromedp.SendKeys(chromedp.CSS(`#tenant-name`), "   "),
		chromedp.Click(chromedp.CSS(`[data-testid=create-tenant]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=tenant-name-error]`)),
	)
	if msg := b.text(`[data-testid=tenant-name-error]`); !strings.Contains(msg, "Name must be 1 to 200 characters") {
		t.Errorf("beside the name: %q", msg)
	}
	b.run("create tenant",
		chromedp.SetValue(chromedp.CSS(`#tenant-name`), name),
		chromedp.Click(chromedp.CSS(`[data-testid=create-tenant]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=tenant-users]`)),
	)
	if got := b.text(`[data-testid=tenant-name]`); got != name {
		t.Fatalf("led to tenant %q, want %q", got, name)
	}

	b.run("users page",
		chromedp.Click(chromedp.CSS(`[data-testid=tenant-users]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=no-users]`)),
		chromedp.SendKeys(chromedp.CSS(`#user-email`), email),
		chromedp.SendKeys(chromedp.CSS(`#user-password`), password),
		chromedp.Click(chromedp.CSS(`[data-testid=add-user]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=user-row]`)),
	)
	if got := b.text(`[data-testid=user-email]`); got != email {
		t.Errorf("listed user %q, want %q", got, email)
	}
	b.signOut(e.base)

	b.login(e.base, email)
	b.waitJS("the new user's home", `location.pathname === '/'`)
	if got := b.text(`[data-testid=user]`); got != email {
		t.Errorf("signed in as %q, want %q", got, email)
	}
	if body := b.text(`main`); !strings.Contains(body, name) {
		t.Errorf("the home page does not name the tenant %q: %q", name, body)
	}
	status, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch('/admin').then(r => String(r.status))`, awaitPromise))
	if err != nil || status != "404" {
		t.Errorf("the new user opens /admin: %s %v", status, err)
	}
}
