package brand

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestContrastKnownValues(t *testing.T) {
	t.Parallel()
	white, black := Color{255, 255, 255}, Color{0, 0, 0}
	if c := Contrast(white, black); c < 20.99 || c > 21.01 {
		t.Errorf("white on black: %.3f, want 21", c)
	}
	if c := Contrast(Color{0x76, 0x76, 0x76}, white); c < 4.5 || c > 4.6 {
		t.Errorf("#767676 on white: %.3f, want 4.54", c)
	}
}

// A colour that can reach AA on both schemes is shaded (as little as needed) and its shades reach AA on
// every background and under the button text; one that cannot is refused, saying why.
func TestShadesMeetAAOrAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		color   string
		refused string // part of the error, when refused
	}{
		{color: "#3b5bdb"}, // the built-in accent: fine on light, lightened for dark
		{color: "#ff0000"},
		{color: "#ffff00"}, // darkened to an olive on light backgrounds
		{color: "#0a2540"}, // a dark navy: lightened for the dark scheme
		{color: "#777777"}, // mid grey
		{color: "#635bff"},
		{color: "#ffffff", refused: "light background"},
		{color: "#fafafa", refused: "light background"},
		{color: "#000000", refused: "dark background"},
		{color: "#050505", refused: "dark background"},
	} {
		c, err := ParseColor(tc.color)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ShadesFor(c)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "WCAG AA") {
				t.Errorf("%s: %v, want refused on the %s", tc.color, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: refused: %v", tc.color, err)
			continue
		}
		for _, sc := range []struct {
			scheme Scheme
			shade  Color
		}{{Light, s.Light}, {Dark, s.Dark}} {
			for _, bg := range append(sc.scheme.Backgrounds, sc.scheme.ButtonText) {
				if got := Contrast(sc.shade, bg); got < AA {
					t.Errorf("%s on %s: shade %s reaches %.2f:1 against %s", tc.color, sc.scheme.Name, sc.shade.Hex(), got, bg.Hex())
				}
			}
			_, _, l0 := c.hsl()
			_, _, l1 := sc.shade.hsl()
			if d := l1 - l0; d > MaxLightnessShift+0.01 || d < -MaxLightnessShift-0.01 {
				t.Errorf("%s on %s: shade %s moved %.2f in lightness", tc.color, sc.scheme.Name, sc.shade.Hex(), d)
			}
		}
	}
	// A colour already meeting AA is kept as it is.
	navy := Color{0x0a, 0x25, 0x40}
	if s, _ := ShadesFor(navy); s.Light != navy {
		t.Errorf("navy on light: shaded to %s, want it kept", s.Light.Hex())
	}
}

func TestParseColor(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "red", "#fff", "#gggggg", "3b5bdb", "#3b5bdb0"} {
		if _, err := ParseColor(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if c, err := ParseColor("#3b5bdb"); err != nil || c != (Color{0x3b, 0x5b, 0xdb}) {
		t.Errorf("#3b5bdb: %v %v", c, err)
	}
}

func TestLogoCheckedByContent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if l, err := ReadLogo(write("a.txt", []byte(`<?xml version="1.0"?><!-- x --><svg xmlns="http://www.w3.org/2000/svg"/>`))); err != nil || !l.SVG() {
		t.Errorf("svg: %v %v", l.ContentType, err)
	}
	if l, err := ReadLogo(write("a.svg", append([]byte("\x89PNG\r\n\x1a\n"), 0, 0))); err != nil || l.ContentType != "image/png" {
		t.Errorf("png: %v %v", l.ContentType, err)
	}
	for name, data := range map[string][]byte{
		"html.svg": []byte(`<html><script>alert(1)</script></html>`),
		"gif.png":  []byte("GIF89a...."),
		"big.svg":  append([]byte(`<svg xmlns="http://www.w3.org/2000/svg">`), make([]byte, MaxLogoBytes)...),
	} {
		if _, err := ReadLogo(write(name, data)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := Load("", write("x.txt", []byte("hello")), ""); err == nil || !strings.Contains(err.Error(), "HOOKLINE_BRAND_LOGO") {
		t.Errorf("Load with a text logo: %v", err)
	}
	if _, err := Load("", "", "#ffffff"); err == nil || !strings.Contains(err.Error(), "HOOKLINE_BRAND_COLOR") {
		t.Errorf("Load with white: %v", err)
	}
	if b, err := Load("  ", "", ""); err != nil || b.Name != DefaultName || b.Custom() {
		t.Errorf("Load with no name: %+v %v", b, err)
	}
}
