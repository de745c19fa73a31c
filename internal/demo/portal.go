package demo

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/principal"
)

// EmbedAddr is where `make run` serves the embedding demo: a page of a made-up platform, on another origin
// than the dashboard, that frames a customer portal link (http://localhost:8091/).
const EmbedAddr = "127.0.0.1:8091"

// EmbedOrigin is the embedding demo's origin, as HOOKLINE_PORTAL_FRAME_ANCESTORS must name it.
const EmbedOrigin = "http://localhost:8091"

// Demo brand: what `make run` shows unless HOOKLINE_BRAND_NAME or HOOKLINE_BRAND_COLOR is set.
const (
	BrandName  = "Acme Cloud"
	BrandColor = "#0f766e"
)

// UseBrand gives the demo its platform's brand when none is configured.
func UseBrand(cfg *config.Config) {
	if (cfg.BrandName == "" || cfg.BrandName == brand.DefaultName) && cfg.BrandColor == "" {
		cfg.BrandName, cfg.BrandColor = BrandName, BrandColor
	}
}

// embedPage is the platform's page: its own header, and the portal in a frame that takes the height the
// portal posts (docs/portal.md's plain JavaScript snippet).
var embedPage = template.Must(template.New("embed").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Brand}}: webhooks</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { margin: 0; font: 15px/1.5 system-ui, sans-serif; background: #eef2f1; color: #1d2433; }
  header { background: #0f766e; color: #fff; padding: 12px 24px; }
  main { max-width: 1100px; margin: 24px auto; padding: 0 16px; }
  iframe { width: 100%; height: 400px; border: 1px solid #c9d3d1; border-radius: 8px; background: #fff; }
  .note { background: #fff7e0; border: 1px solid #e8d08a; padding: 8px 12px; border-radius: 6px; }
  code { font-size: 13px; overflow-wrap: anywhere; } /* the note's command is one long word: wrapped on a phone */
</style></head>
<body>
<header><strong>{{.Brand}}</strong> · Settings · Webhooks</header>
<main>
  <h1>Webhooks</h1>
  <p>This page is the platform's own app ({{.Origin}}). Its server made a single-use portal link for the
  demo tenant just now and put it in the frame below: reload for a new one
  (<a href="/?role=view">view-only</a>, <a href="/?theme=dark">dark</a>, <a href="/">manage</a>).</p>
  {{if not .Framing}}<p class="note">Framing is off, so the frame below stays empty (the dashboard refuses to be
  framed). Start with <code>HOOKLINE_PUBLIC_URL=https://localhost:{{.Port}} HOOKLINE_PORTAL_FRAME_ANCESTORS={{.Origin}} make run</code>
  and open this page in Chromium or Chrome; docs/portal.md says why.</p>{{end}}
  <iframe id="hookline" src="{{.Src}}" title="Webhooks"></iframe>
</main>
<script>
  const hooklineOrigin = {{.HooklineOrigin}};
  window.addEventListener("message", (event) => {
    if (event.origin !== hooklineOrigin) return;
    if (event.data && event.data.type === "hookline:resize") {
      document.getElementById("hookline").style.height = event.data.height + "px";
    }
  });
</script>
</body></html>`))

// StartEmbed serves the embedding demo on EmbedAddr until ctx ends. The frame opens the link's path at
// LocalBase, how a browser on this machine reaches the dashboard (http://localhost:<port>), since
// HOOKLINE_PUBLIC_URL may name an https address nothing serves locally.
func StartEmbed(ctx context.Context, srv Services, s Seeded, cfg config.Config, log *slog.Logger) error {
	hooklineBase := LocalBase(cfg)
	origins, _ := config.ParseFrameAncestors(cfg.PortalFrameAncestors)
	_, port, _ := net.SplitHostPort(hooklineBase[len("http://"):])
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		in := portal.LinkRequest{Role: r.URL.Query().Get("role"), Theme: r.URL.Query().Get("theme"),
			User: portal.User{ID: "acme-user-17", Email: creds.DemoEmail, Name: "Dana Demo"}}
		// The platform's server would call the API with a portal:write token; this one runs in Hookline's
		// own process, so its links are the operator's, named as the demo in the tenant's activity log.
		demo := activity.Actor{Kind: activity.ActorAdmin, Name: "embedding demo (" + EmbedOrigin + ")"}
		l, err := srv.Portal.CreateLink(activity.WithActor(r.Context(), demo), s.TenantID, principal.Operator(demo), in)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u, _ := url.Parse(l.URL)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = embedPage.Execute(w, map[string]any{"Brand": srv.Brand, "Origin": EmbedOrigin, "Port": port,
			"Framing": slices.Contains(origins, EmbedOrigin), "Src": template.URL(hooklineBase + u.Path),
			"HooklineOrigin": hooklineBase})
	})
	ln, err := net.Listen("tcp", EmbedAddr)
	if err != nil {
		return fmt.Errorf("embedding demo on %s: %w", EmbedAddr, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("embedding demo stopped", "err", err)
		}
	}()
	return nil
}

// PrintPortalWelcome tells how to try the customer portal.
func PrintPortalWelcome(w io.Writer, cfg config.Config, s Seeded, embedding bool) {
	host := cfg.Addr
	if h, p, err := net.SplitHostPort(cfg.Addr); err == nil && (h == "" || h == "0.0.0.0" || h == "::") {
		host = "localhost:" + p
	}
	fmt.Fprintf(w, "  Customer portal: curl -X POST -H 'Authorization: Bearer %s' http://%s/api/v1/tenants/%s/portal-links\n",
		cfg.AdminToken, host, s.TenantID)
	if embedding {
		fmt.Fprintf(w, "  Embedding demo (a platform page framing the portal): %s/\n", EmbedOrigin)
	}
	fmt.Fprintln(w)
}

// LocalBase is how a browser on this machine reaches the server: http://localhost:<port>.
func LocalBase(cfg config.Config) string {
	if _, p, err := net.SplitHostPort(cfg.Addr); err == nil {
		return "http://localhost:" + p
	}
	return "http://" + cfg.Addr
}
