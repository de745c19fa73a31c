package web_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/portal"
)

const testLogo = `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="#c00"/></svg>`

func withBrand(t *testing.T) func(*config.Config) {
	logo := filepath.Join(t.TempDir(), "logo.svg")
	if err := os.WriteFile(logo, []byte(testLogo), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *config.Config) {
		c.BrandName, c.BrandColor, c.BrandLogo = "Acme Webhooks", "#ff0000", logo
	}
}

// Under a brand, a portal session's pages (every GET route the dashboard serves, and the 410 and ended
// pages) never name Hookline: titles, header, footer, logo and request headers; the accent colour and the
// logo are served at fixed URLs with the right types; a link's theme forces the scheme.
func TestPortalBrandNeverNamesHookline(t *testing.T) {
	e := setup(t, withBackground, withBrand(t))
	tn := e.newTenant("portal brand")
	sub := e.newSubscription(tn, "/ok", "branded endpoint")
	ids := e.publish(tn, "order.created", map[string]any{"n": 1})
	d := e.waitState(tn, ids[0], delivery.Delivered)
	c := e.portalClient(e.portalLink(tn, portal.LinkRequest{Theme: portal.ThemeDark, User: portal.User{Name: "Ann"}}))

	fill := strings.NewReplacer("{id}", sub.ID.String(), "{token}", "unknown-link")
	checked := 0
	for _, rt := range walkWeb(t, e) {
		if rt.method != http.MethodGet || rt.pattern == "/static/*" || rt.pattern == "/favicon.ico" {
			continue
		}
		paths := []string{fill.Replace(rt.pattern)}
		switch rt.pattern {
		case "/deliveries/{id}":
			paths = []string{"/deliveries/" + d.ID.String()}
		case "/events/{id}":
			paths = []string{"/events/" + d.EventID.String()}
		case "/find":
			paths = []string{"/find?q=" + d.EventID.String()[:8]}
		}
		for _, path := range paths {
			p := c.get(path)
			checked++
			if strings.Contains(p.Body, "Hookline") {
				i := strings.Index(p.Body, "Hookline")
				t.Errorf("GET %s (%d) in a branded portal session names Hookline: …%s…", path, p.Status, p.Body[max(0, i-80):min(len(p.Body), i+40)])
			}
			if p.Status == http.StatusOK && !strings.Contains(p.Body, "Acme Webhooks") {
				t.Errorf("GET %s does not name the brand", path)
			}
			if p.URL.Path == path && p.Status == http.StatusOK && !strings.Contains(p.Body, `data-theme="dark"`) {
				t.Errorf("GET %s in a dark portal session: no data-theme=dark", path)
			}
		}
	}
	if checked < 6 {
		t.Fatalf("checked only %d pages", checked)
	}
	c.post("/logout", nil)
	for _, p := range []*page{c.get("/"), e.client().get("/portal/unknown"), e.client().get("/login")} {
		if strings.Contains(p.Body, "Hookline") || !strings.Contains(p.Body, "Acme Webhooks") {
			t.Errorf("%s (%d): names Hookline or not the brand: %q", p.URL, p.Status, p.text())
		}
	}
	if p := e.client().get("/portal/unknown"); !strings.Contains(p.text(), "Ask Acme Webhooks for a new one.") {
		t.Errorf("the 410 page: %q", p.text())
	}
	if p := e.portalClient(e.portalLink(tn, portal.LinkRequest{})).get("/"); strings.Contains(p.Body, "data-theme") {
		t.Errorf("an auto-theme portal session forces a theme")
	}

	css := e.client().get("/static/brand.css")
	red, _ := brand.ParseColor("#ff0000")
	shades, _ := brand.ShadesFor(red)
	if css.Status != 200 || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") ||
		!strings.Contains(css.Body, "--accent: "+shades.Light.Hex()) || !strings.Contains(css.Body, "--accent: "+shades.Dark.Hex()) {
		t.Errorf("brand.css: %d %s %q", css.Status, css.Header.Get("Content-Type"), css.Body)
	}
	logo := e.client().get("/static/brand-logo")
	if logo.Status != 200 || logo.Header.Get("Content-Type") != "image/svg+xml" || logo.Header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(logo.Header.Get("Content-Security-Policy"), "sandbox") || logo.Body != testLogo {
		t.Errorf("brand logo: %d %v", logo.Status, logo.Header)
	}
}

// Framing off (the default): no page may be framed, as before. Framing on: CSP frame-ancestors names the
// origins, no X-Frame-Options, the session cookie is SameSite=None; Secure; Partitioned and pages name
// the origins app.js may post their height to.
func TestPortalFramingHeaders(t *testing.T) {
	noRedirect := func(c *client) *client {
		c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return c
	}
	off := setup(t, httpOnly, nil)
	tn := off.newTenant("framing off")
	p := noRedirect(off.client()).get(off.portalLink(tn, portal.LinkRequest{}))
	if csp := p.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || p.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("framing off: CSP %q, X-Frame-Options %q", csp, p.Header.Get("X-Frame-Options"))
	}
	if ck := p.Header.Get("Set-Cookie"); !strings.Contains(ck, "SameSite=Lax") || strings.Contains(ck, "Partitioned") {
		t.Errorf("framing off: cookie %q", ck)
	}
	if page := off.client().get("/login"); strings.Contains(page.Body, "data-frame-origins") {
		t.Errorf("framing off: the page names frame origins")
	}

	on := setup(t, httpOnly, func(c *config.Config) {
		c.PublicURL = "https://hooks.example.com"
		c.PortalFrameAncestors = "https://app.example.com http://localhost:9400"
	})
	tn = on.newTenant("framing on")
	p = noRedirect(on.client()).get(on.portalLink(tn, portal.LinkRequest{}))
	if p.Status != http.StatusSeeOther {
		t.Fatalf("portal link: %d", p.Status)
	}
	if csp := p.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors https://app.example.com http://localhost:9400;") {
		t.Errorf("framing on: CSP %q", csp)
	}
	if xfo := p.Header.Values("X-Frame-Options"); len(xfo) > 0 {
		t.Errorf("framing on: X-Frame-Options %q", xfo)
	}
	ck := p.Header.Get("Set-Cookie")
	for _, attr := range []string{"SameSite=None", "Secure", "Partitioned", "HttpOnly"} {
		if !strings.Contains(ck, attr) {
			t.Errorf("framing on: cookie %q lacks %s", ck, attr)
		}
	}
	page := on.client().get("/login")
	if !strings.Contains(page.Body, `data-frame-origins="https://app.example.com http://localhost:9400"`) {
		t.Errorf("framing on: the page does not name its frame origins")
	}
	if xfo := page.Header.Values("X-Frame-Options"); len(xfo) > 0 {
		t.Errorf("framing on: /login sends X-Frame-Options %q", xfo)
	}
}
