package web_test

import (
	"context"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/subscriptions"
)

// parentPage is the platform's page that frames the portal: the README's snippet (plain JavaScript),
// recording what it was told so the test can read it, and (onload, the test's own) how many times the
// frame's navigation has ended, loaded or refused.
var parentPage = template.Must(template.New("parent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform</title></head>
<body style="margin:0">
<h1>The platform's own app</h1>
<iframe id="hookline" src="{{.Src}}" title="Webhooks" style="width:100%; height:150px; border:0" onload="window.frameLoads = (window.frameLoads || 0) + 1"></iframe>
<script>
  window.resizes = [];
  const hooklineOrigin = {{.Origin}};
  window.addEventListener("message", (event) => {
    if (event.origin !== hooklineOrigin) return;
    if (event.data && event.data.type === "hookline:resize") {
      document.getElementById("hookline").style.height = event.data.height + "px";
      window.resizes.push(event.data.height);
    }
  });
</script>
</body></html>`))

// platform serves parentPage on its own port, reached as http://localhost:<port>: another origin (and
// another site) than the dashboard's http://127.0.0.1:<port>.
type platform struct {
	*httptest.Server
	origin     string
	src        atomic.Value // the iframe's src
	hookOrigin string
}

func newPlatform(t *testing.T) *platform {
	p := &platform{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		src, _ := p.src.Load().(string)
		_ = parentPage.Execute(w, map[string]any{"Src": template.URL(src), "Origin": p.hookOrigin})
	}))
	t.Cleanup(p.Close)
	_, port, _ := net.SplitHostPort(p.Listener.Addr().String())
	p.origin = "http://localhost:" + port
	return p
}

// frameContext attaches to the portal's iframe (a cross-site frame runs as a target of its own).
func (b *browser) frameContext(urlPrefix string) context.Context {
	b.t.Helper()
	var frame context.Context
	var seen []string
	eventually(b.t, 15*time.Second, 100*time.Millisecond, func() bool {
		infos, err := chromedp.Targets(b.ctx)
		if err != nil {
			b.t.Fatal(err)
		}
		seen = seen[:0]
		for _, info := range infos {
			if info.Type == "iframe" && strings.HasPrefix(info.URL, urlPrefix) {
				ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(info.TargetID))
				b.t.Cleanup(cancel)
				frame = ctx
				return true
			}
			seen = append(seen, info.Type+" "+info.URL)
		}
		return false
	}, func() string { return fmt.Sprintf("no iframe target at %s; targets: %v", urlPrefix, seen) })
	return frame
}

// The embedded portal: a platform page on another origin frames a portal link; the customer lands in
// the tenant's dashboard inside the frame (the SameSite=None; Secure; Partitioned cookie holds), the
// frame takes the height the page posts, and the customer pauses a subscription inside it. A platform
// origin not in HOOKLINE_PORTAL_FRAME_ANCESTORS gets no page in its frame.
func TestBrowserPortalEmbedded(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	allowed, other := newPlatform(t), newPlatform(t)
	e := setup(t, withBackground, func(c *config.Config) {
		c.PublicURL = "https://hooks.example.com" // framing needs https; the test reaches the server on 127.0.0.1
		c.PortalFrameAncestors = allowed.origin
	})
	allowed.hookOrigin, other.hookOrigin = e.base, e.base
	tn := e.newTenant("embedded")
	sub := e.newSubscription(tn, "/ok", "Embedded endpoint")

	allowed.src.Store(e.base + e.portalLink(tn, portal.LinkRequest{User: portal.User{Name: "Erin Embedded"}}))
	b.run("open the platform's page", chromedp.Navigate(allowed.origin+"/"), chromedp.WaitReady(chromedp.CSS(`#hookline`)))
	b.waitJS("the frame tells its height", `window.resizes.length > 0`)
	frame := b.frameContext(e.base)
	if _, err := chromedp.Run(frame, chromedp.WaitVisible(chromedp.CSS(`[data-testid=user]`))); err != nil {
		t.Fatalf("the portal in the frame: %v", err)
	}
	if who, _ := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`[data-testid=user]`))); strings.TrimSpace(who) != "Erin Embedded" {
		t.Errorf("the framed header names %q", who)
	}
	first := eval[int](b, `window.resizes[window.resizes.length - 1]`)
	if h := eval[string](b, `document.getElementById("hookline").style.height`); h != fmt.Sprintf("%dpx", first) || first <= 150 {
		t.Errorf("the frame is %s high after being told %d", h, first)
	}

	// Into the subscription, then Pause, all inside the frame.
	if err := chromedp.Do(frame, chromedp.Navigate(e.base+"/subscriptions/"+sub.ID.String()),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=pause]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=pause]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=resume]`))); err != nil {
		t.Fatalf("pause inside the frame: %v", err)
	}
	if s, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, sub.ID); err != nil || s.State != subscriptions.Paused {
		t.Fatalf("after Pause in the frame the subscription is %q (%v)", s.State, err)
	}
	b.waitJS("the frame resized for the subscription page", fmt.Sprintf(`window.resizes.some(h => h !== %d)`, first))
	last := eval[int](b, `window.resizes[window.resizes.length - 1]`)
	if h := eval[string](b, `document.getElementById("hookline").style.height`); h != fmt.Sprintf("%dpx", last) || last == first {
		t.Errorf("after the subscription page the frame is %s high, told %d (first %d)", h, last, first)
	}

	// A platform origin that is not allowed: the page is refused in its frame.
	other.src.Store(e.base + e.portalLink(tn, portal.LinkRequest{}))
	b.run("open another platform's page", chromedp.Navigate(other.origin+"/"), chromedp.WaitReady(chromedp.CSS(`#hookline`)))
	// The frame's load event fires in the parent once its navigation has ended, the page loaded or
	// refused. A loaded page posts its height while it loads, before that event; a message the parent then
	// posts itself is delivered after any the frame posted, so once it is, none is still on its way.
	b.waitJS("the frame's navigation ended", `window.frameLoads > 0`)
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`new Promise(done => {
		const flushed = (event) => { if (event.source === window && event.data === "flush") { window.removeEventListener("message", flushed); done(true) } };
		window.addEventListener("message", flushed);
		window.postMessage("flush", window.location.origin);
	})`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("the parent's own message: %v", err)
	}
	if n := eval[int](b, `window.resizes.length`); n != 0 {
		t.Errorf("a frame on a parent not allowed posted %d heights", n)
	}
	infos, err := chromedp.Targets(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Type == "iframe" && strings.HasPrefix(info.URL, e.base) {
			fctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(info.TargetID))
			loaded, err := chromedp.Run(fctx, chromedp.Evaluate[bool](`!!document.querySelector("footer")`))
			cancel()
			if err == nil && loaded {
				t.Errorf("the dashboard loaded in a frame of %s, which is not allowed", other.origin)
			}
		}
	}
}
