package demo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// The parent page fits a phone's width with framing off too: the note's command, one long word, wraps
// instead of pushing the page sideways (seen at 390 px in Chromium).
func TestEmbedPageFitsAPhone(t *testing.T) {
	t.Parallel()
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("CI") == "true" || os.Getenv("HOOKLINE_BROWSER_TESTS") == "1" {
			t.Fatal("chromium is not installed")
		}
		t.Skip("chromium is not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = demo.EmbedPage.Execute(w, map[string]any{"Brand": "Acme Cloud", "Origin": demo.EmbedOrigin, "Port": "8080",
			"Framing": false, "Src": "about:blank", "HooklineOrigin": "http://localhost:8080"})
	}))
	defer srv.Close()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[2]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if err != nil {
		t.Fatal(err)
	}
	if widths[0] > widths[1] {
		t.Errorf("at 390 px the page is %d px wide: it scrolls sideways", widths[0])
	}
}
