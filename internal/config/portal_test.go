package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Framing needs an https public URL; the origins are scheme, host and port only.
func TestPortalFrameAncestorsAreValidated(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(map[string]string{"HOOKLINE_PUBLIC_URL": "https://hooks.example.com",
		"HOOKLINE_PORTAL_FRAME_ANCESTORS": " https://app.example.com  http://localhost:8090 https://EU.example.com:8443/"}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := ParseFrameAncestors(c.PortalFrameAncestors)
	if want := []string{"https://app.example.com", "http://localhost:8090", "https://eu.example.com:8443"}; !slices.Equal(got, want) {
		t.Errorf("parsed %v, want %v", got, want)
	}
	for _, bad := range []string{"app.example.com", "https://*.example.com", "https://app.example.com/embed", "'self'",
		"https://app.example.com?x=1", "ftp://app.example.com", "https://u@app.example.com", "https://app.example.com:0", "*"} {
		_, err := Load(nil, env(map[string]string{"HOOKLINE_PUBLIC_URL": "https://hooks.example.com", "HOOKLINE_PORTAL_FRAME_ANCESTORS": bad}))
		if err == nil || !strings.Contains(err.Error(), "HOOKLINE_PORTAL_FRAME_ANCESTORS") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, public := range []string{"", "http://hooks.example.com"} {
		_, err := Load(nil, env(map[string]string{"HOOKLINE_PUBLIC_URL": public, "HOOKLINE_PORTAL_FRAME_ANCESTORS": "https://app.example.com"}))
		if err == nil || !strings.Contains(err.Error(), "needs an https HOOKLINE_PUBLIC_URL") {
			t.Errorf("framing with public URL %q: %v, want refused", public, err)
		}
	}
}

// A brand that cannot work is refused at start, naming the variable.
func TestBrandIsValidated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	txt := filepath.Join(dir, "logo.png")
	_ = os.WriteFile(txt, []byte("not an image"), 0o600)
	for name, vars := range map[string]map[string]string{
		"HOOKLINE_BRAND_COLOR": {"HOOKLINE_BRAND_COLOR": "#ffffff"},
		"HOOKLINE_BRAND_LOGO":  {"HOOKLINE_BRAND_LOGO": txt},
		"HOOKLINE_BRAND_NAME":  {"HOOKLINE_BRAND_NAME": strings.Repeat("n", 101)},
	} {
		if _, err := Load(nil, env(vars)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v, want refused naming %s", vars, err, name)
		}
	}
	if c, err := Load(nil, env(map[string]string{"HOOKLINE_BRAND_COLOR": "#635bff", "HOOKLINE_BRAND_NAME": "Acme"})); err != nil || c.BrandName != "Acme" {
		t.Errorf("a good brand: %v", err)
	}
}
