// Package brand is the platform's branding of the dashboard: its name (HOOKLINE_BRAND_NAME), logo
// (HOOKLINE_BRAND_LOGO, a PNG or SVG file) and accent colour (HOOKLINE_BRAND_COLOR), checked at start.
//
// The colour is used for links, buttons and the focus ring on both colour schemes, so it is shaded for
// each: keeping its hue and saturation (HSL), its lightness is moved, as little as needed, until it reaches
// WCAG AA contrast (4.5:1) against every background of that scheme and against the button text on it. A
// shade that would have to move more than MaxLightnessShift would no longer be the platform's colour, so
// such a colour is refused at start with the contrast it reaches, rather than silently replaced.
package brand

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultName is the product's own name, used when no brand is set.
const DefaultName = "Hookline"

// MaxLogoBytes is the largest logo file accepted.
const MaxLogoBytes = 256 << 10

// MaxNameLength bounds HOOKLINE_BRAND_NAME, in characters.
const MaxNameLength = 100

// AA is WCAG 2's AA contrast ratio for normal text.
const AA = 4.5

// MaxLightnessShift is how far (in HSL lightness, 0 to 1) a shade may move from the given colour.
const MaxLightnessShift = 0.5

// Color is an sRGB colour.
type Color struct{ R, G, B uint8 }

// Hex writes c as #rrggbb.
func (c Color) Hex() string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// ParseColor reads #rrggbb.
func ParseColor(s string) (Color, error) {
	if len(s) != 7 || s[0] != '#' {
		return Color{}, fmt.Errorf("%q is not a colour written #rrggbb", s)
	}
	n, err := strconv.ParseUint(s[1:], 16, 32)
	if err != nil {
		return Color{}, fmt.Errorf("%q is not a colour written #rrggbb", s)
	}
	return Color{uint8(n >> 16), uint8(n >> 8), uint8(n)}, nil
}

func channel(v uint8) float64 {
	c := float64(v) / 255
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

// Luminance is WCAG's relative luminance.
func (c Color) Luminance() float64 {
	return 0.2126*channel(c.R) + 0.7152*channel(c.G) + 0.0722*channel(c.B)
}

// Contrast is WCAG's contrast ratio of two colours (1 to 21).
func Contrast(a, b Color) float64 {
	la, lb := a.Luminance(), b.Luminance()
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func (c Color) hsl() (h, s, l float64) {
	r, g, b := float64(c.R)/255, float64(c.G)/255, float64(c.B)/255
	mx, mn := max(r, g, b), min(r, g, b)
	l = (mx + mn) / 2
	if mx == mn {
		return 0, 0, l
	}
	d := mx - mn
	if l > 0.5 {
		s = d / (2 - mx - mn)
	} else {
		s = d / (mx + mn)
	}
	switch mx {
	case r:
		h = (g - b) / d
		if g < b {
			h += 6
		}
	case g:
		h = (b-r)/d + 2
	default:
		h = (r-g)/d + 4
	}
	return h / 6, s, l
}

func fromHSL(h, s, l float64) Color {
	if s == 0 {
		v := uint8(math.Round(l * 255))
		return Color{v, v, v}
	}
	q := l * (1 + s)
	if l >= 0.5 {
		q = l + s - l*s
	}
	p := 2*l - q
	hue := func(t float64) uint8 {
		switch {
		case t < 0:
			t++
		case t > 1:
			t--
		}
		var v float64
		switch {
		case t < 1.0/6:
			v = p + (q-p)*6*t
		case t < 1.0/2:
			v = q
		case t < 2.0/3:
			v = p + (q-p)*(2.0/3-t)*6
		default:
			v = p
		}
		return uint8(math.Round(math.Max(0, math.Min(1, v)) * 255))
	}
	return Color{hue(h + 1.0/3), hue(h), hue(h - 1.0/3)}
}

// Scheme is one colour scheme's backgrounds and the text drawn on an accent-coloured button.
type Scheme struct {
	Name        string
	Backgrounds []Color
	ButtonText  Color
	// Darken: shades for this scheme get darker (light backgrounds) or lighter (dark ones).
	Darken bool
}

// The dashboard's schemes (web/static/app.css: --bg, --surface, --surface-2 and --accent-text).
var (
	Light = Scheme{Name: "light", Darken: true, ButtonText: Color{0xff, 0xff, 0xff},
		Backgrounds: []Color{{0xf5, 0xf6, 0xfa}, {0xff, 0xff, 0xff}, {0xf0, 0xf2, 0xf7}}}
	Dark = Scheme{Name: "dark", Darken: false, ButtonText: Color{0x0d, 0x10, 0x20},
		Backgrounds: []Color{{0x10, 0x13, 0x1a}, {0x18, 0x1c, 0x25}, {0x20, 0x25, 0x32}}}
)

// worst is the lowest contrast of c against the scheme's backgrounds and its button text.
func (s Scheme) worst(c Color) float64 {
	w := Contrast(c, s.ButtonText)
	for _, bg := range s.Backgrounds {
		w = min(w, Contrast(c, bg))
	}
	return w
}

// Shade is c moved in lightness, as little as needed, to reach AA on every background of the scheme and
// under its button text. It fails, saying the best contrast reachable, when that takes a move of more
// than MaxLightnessShift.
func (s Scheme) Shade(c Color) (Color, error) {
	if s.worst(c) >= AA {
		return c, nil
	}
	h, sat, l := c.hsl()
	best, bestContrast := c, s.worst(c)
	for step := 1; step <= 1000; step++ {
		d := float64(step) / 1000
		if d > MaxLightnessShift {
			break
		}
		nl := l + d
		if s.Darken {
			nl = l - d
		}
		if nl < 0 || nl > 1 {
			break
		}
		cand := fromHSL(h, sat, nl)
		w := s.worst(cand)
		if w >= AA {
			return cand, nil
		}
		if w > bestContrast {
			best, bestContrast = cand, w
		}
	}
	return Color{}, fmt.Errorf("%s cannot be shaded to reach WCAG AA contrast (%.1f:1) on the %s background: "+
		"the closest shade, %s, reaches %.2f:1; choose a more mid-toned colour",
		c.Hex(), AA, s.Name, best.Hex(), bestContrast)
}

// Shades are the accent's shades for both schemes.
type Shades struct {
	Given, Light, Dark Color
}

// ShadesFor checks and shades an accent colour for both schemes.
func ShadesFor(c Color) (Shades, error) {
	light, err := Light.Shade(c)
	if err != nil {
		return Shades{}, err
	}
	dark, err := Dark.Shade(c)
	if err != nil {
		return Shades{}, err
	}
	return Shades{Given: c, Light: light, Dark: dark}, nil
}

// CSS is the stylesheet that sets the accent: custom properties for the light scheme, the dark scheme
// (when the viewer prefers it, unless the page forces light) and a page forced dark.
func (s Shades) CSS() string {
	light := fmt.Sprintf("--accent: %s; --focus: %s; --accent-text: %s;", s.Light.Hex(), s.Light.Hex(), Light.ButtonText.Hex())
	dark := fmt.Sprintf("--accent: %s; --focus: %s; --accent-text: %s;", s.Dark.Hex(), s.Dark.Hex(), Dark.ButtonText.Hex())
	return "/* The platform's accent colour (HOOKLINE_BRAND_COLOR " + s.Given.Hex() + "), shaded for WCAG AA. */\n" +
		":root { " + light + " }\n" +
		"@media (prefers-color-scheme: dark) { :root:not([data-theme=\"light\"]) { " + dark + " } }\n" +
		":root[data-theme=\"dark\"] { " + dark + " }\n"
}

// Logo is the platform's logo file.
type Logo struct {
	Data        []byte
	ContentType string // image/png or image/svg+xml
}

// SVG reports whether the logo is an SVG image.
func (l Logo) SVG() bool { return l.ContentType == "image/svg+xml" }

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// ReadLogo reads and checks a logo file: at most MaxLogoBytes, a PNG or an SVG by its content (not its name).
func ReadLogo(path string) (Logo, error) {
	f, err := os.Open(path)
	if err != nil {
		return Logo{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxLogoBytes+1))
	if err != nil {
		return Logo{}, err
	}
	if len(data) > MaxLogoBytes {
		return Logo{}, fmt.Errorf("%s is larger than %d KiB", path, MaxLogoBytes>>10)
	}
	return CheckLogo(data)
}

// CheckLogo tells a PNG from an SVG by content and refuses anything else.
func CheckLogo(data []byte) (Logo, error) {
	if bytes.HasPrefix(data, pngMagic) {
		return Logo{Data: data, ContentType: "image/png"}, nil
	}
	if isSVG(data) {
		return Logo{Data: data, ContentType: "image/svg+xml"}, nil
	}
	return Logo{}, errors.New("the logo is neither a PNG nor an SVG image")
}

// isSVG reports whether data is XML whose root element is <svg>.
func isSVG(data []byte) bool {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local == "svg"
		}
	}
}

// Brand is the checked branding.
type Brand struct {
	Name string
	// Logo is nil without HOOKLINE_BRAND_LOGO.
	Logo *Logo
	// Accent is nil without HOOKLINE_BRAND_COLOR.
	Accent *Shades
}

// Custom reports whether a brand name other than Hookline's own is set.
func (b Brand) Custom() bool { return b.Name != "" && b.Name != DefaultName }

// The dashboard's test event ("Send test event") has a type of its own, never a real one: a handler of
// invoice.paid must not receive a made-up invoice. Without a brand it is Hookline's; under a platform's
// brand it names no product, because the receivers of a white-labelled platform must not learn whose
// software sends its webhooks. Both are reserved (never in the event catalogue) and always accepted,
// whatever the brand is now, so a catalogue stays valid when a brand is set or removed later.
const (
	DefaultTestEventType = "hookline.test"
	NeutralTestEventType = "webhook.test"
)

// TestEventType is the type of the dashboard's test event under this brand.
func (b Brand) TestEventType() string {
	if b.Custom() {
		return NeutralTestEventType
	}
	return DefaultTestEventType
}

// IsTestEventType reports whether name is the dashboard's test event type under any brand.
func IsTestEventType(name string) bool {
	return name == DefaultTestEventType || name == NeutralTestEventType
}

// Load checks the three settings; empty ones take the defaults. Errors name the variable.
func Load(name, logoPath, color string) (Brand, error) {
	b := Brand{Name: strings.TrimSpace(name)}
	if b.Name == "" {
		b.Name = DefaultName
	}
	if !utf8.ValidString(b.Name) || utf8.RuneCountInString(b.Name) > MaxNameLength ||
		strings.IndexFunc(b.Name, unicode.IsControl) >= 0 {
		return Brand{}, fmt.Errorf("HOOKLINE_BRAND_NAME must be text of at most %d characters without control characters", MaxNameLength)
	}
	if logoPath != "" {
		l, err := ReadLogo(logoPath)
		if err != nil {
			return Brand{}, fmt.Errorf("HOOKLINE_BRAND_LOGO: %w", err)
		}
		b.Logo = &l
	}
	if color != "" {
		c, err := ParseColor(strings.ToLower(strings.TrimSpace(color)))
		if err != nil {
			return Brand{}, fmt.Errorf("HOOKLINE_BRAND_COLOR: %w", err)
		}
		s, err := ShadesFor(c)
		if err != nil {
			return Brand{}, fmt.Errorf("HOOKLINE_BRAND_COLOR: %w", err)
		}
		b.Accent = &s
	}
	return b, nil
}
