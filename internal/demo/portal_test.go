package demo_test

import (
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/demo"
	"golang.org/x/net/html"
)

// The embedding demo's parent page lays itself out for the device's width, like the dashboard it frames:
// without a viewport meta a phone draws it 980 px wide and shrinks it, portal and all.
func TestEmbedPageHasAViewport(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	err := demo.EmbedPage.Execute(&b, map[string]any{"Brand": "Acme Cloud", "Origin": demo.EmbedOrigin, "Port": "8080",
		"Framing": true, "Src": "http://localhost:8080/portal/x", "HooklineOrigin": "http://localhost:8080"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var viewport []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "meta" {
			var name, content string
			for _, a := range n.Attr {
				switch a.Key {
				case "name":
					name = a.Val
				case "content":
					content = a.Val
				}
			}
			if name == "viewport" {
				viewport = append(viewport, content)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(viewport) != 1 || !strings.Contains(viewport[0], "width=device-width") {
		t.Errorf("viewport metas %q, want one with width=device-width", viewport)
	}
}
