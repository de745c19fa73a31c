package demo

import (
	"html/template"
	"io"
	"net/http"
	"sync"
	"time"
)

// The receiver's /inspect endpoint is a request bin for trying endpoint self-service by hand: point a
// subscription at http://127.0.0.1:8081/inspect, send it an event, and open the same address in a browser
// to see exactly what arrived (the Standard Webhooks headers and the raw body) and check each signature
// with the subscription's revealed secret, as a receiver would. It keeps the newest inspectKept requests,
// in memory only.

// inspectKept is how many requests /inspect shows; inspectBody the most of a body it keeps.
const (
	inspectKept = 20
	inspectBody = 64 << 10
)

// inspected is one request /inspect received.
type inspected struct {
	At                        time.Time
	ID, Timestamp, Signature  string
	ContentType, Body         string
	Verified, VerifyAttempted bool
}

// inspectBin holds the newest requests, newest first.
type inspectBin struct {
	mu   sync.Mutex
	reqs []inspected
}

func (b *inspectBin) add(r inspected) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reqs = append([]inspected{r}, b.reqs...)
	if len(b.reqs) > inspectKept {
		b.reqs = b.reqs[:inspectKept]
	}
}

func (b *inspectBin) list() []inspected {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]inspected(nil), b.reqs...)
}

var inspectPage = template.Must(template.New("inspect").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Demo receiver: what /inspect received</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1b1f24}
pre{background:#f3f4f6;padding:.75rem;overflow:auto;white-space:pre-wrap;word-break:break-all}
.ok{color:#166534;font-weight:600}.bad{color:#991b1b;font-weight:600}li{margin-bottom:1.5rem}
label{display:block;font-weight:600}input{font:inherit;width:100%;max-width:36rem;padding:.3rem}</style></head>
<body><h1>Demo receiver: what <code>/inspect</code> received</h1>
<p>Point a subscription at <code>{{.URL}}</code> and send it an event. The newest {{.Kept}} requests are shown, newest first, as they
arrived. To check their signatures the way your receiver would, paste the subscription's signing secret (its page's
<strong>Reveal secret</strong>):</p>
<form method="post" action="/inspect/verify"><label for="secret">Signing secret</label>
<input id="secret" name="secret" autocomplete="off" placeholder="whsec_…" value="{{.Secret}}">
<p><button type="submit">Check signatures</button></p></form>
{{if not .Requests}}<p id="none">Nothing received yet.</p>{{end}}
<ol>{{range .Requests}}<li class="request">
<p><strong>{{.At.UTC.Format "2006-01-02 15:04:05 UTC"}}</strong>{{if .VerifyAttempted}} ·
{{if .Verified}}<span class="ok verified">signature valid with this secret ✓</span>{{else}}<span class="bad unverified">signature not valid with this secret ✗</span>{{end}}{{end}}</p>
<pre>webhook-id: {{.ID}}
webhook-timestamp: {{.Timestamp}}
webhook-signature: {{.Signature}}
content-type: {{.ContentType}}</pre>
<pre class="body">{{.Body}}</pre></li>{{end}}</ol>
</body></html>`))

// serveInspect adds /inspect to mux: POST records, GET shows, POST /inspect/verify shows with each
// signature checked against the posted secret.
func (r *Receiver) serveInspect(mux *http.ServeMux) {
	mux.HandleFunc("POST /inspect", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, inspectBody))
		r.inspect.add(inspected{At: time.Now(), ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"),
			Signature: req.Header.Get("webhook-signature"), ContentType: req.Header.Get("Content-Type"), Body: string(body)})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"received":true}`))
	})
	show := func(w http.ResponseWriter, secret string) {
		reqs := r.inspect.list()
		if secret != "" {
			for i := range reqs {
				h := http.Header{}
				h.Set("webhook-id", reqs[i].ID)
				h.Set("webhook-timestamp", reqs[i].Timestamp)
				h.Set("webhook-signature", reqs[i].Signature)
				reqs[i].VerifyAttempted, reqs[i].Verified = true, verifySignature(secret, h, []byte(reqs[i].Body))
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = inspectPage.Execute(w, map[string]any{"URL": r.URL("/inspect"), "Kept": inspectKept, "Requests": reqs, "Secret": secret})
	}
	mux.HandleFunc("GET /inspect", func(w http.ResponseWriter, req *http.Request) { show(w, "") })
	mux.HandleFunc("POST /inspect/verify", func(w http.ResponseWriter, req *http.Request) {
		req.Body = http.MaxBytesReader(w, req.Body, 4<<10)
		show(w, req.PostFormValue("secret"))
	})
}
