package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
)

// tokenServer is an OAuth 2 authorization server's token endpoint (RFC 6749 §4.4): it answers a
// client_credentials grant from clientID and clientSecret (HTTP Basic, the default way) with token.
type tokenServer struct {
	*httptest.Server
	mu     sync.Mutex
	grants []string // the scopes asked for, one entry per token issued
}

func newTokenServer(t *testing.T, clientID, clientSecret, token string) *tokenServer {
	ts := &tokenServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if r.Method != http.MethodPost || r.URL.Path != "/token" || r.PostFormValue("grant_type") != "client_credentials" {
			http.Error(w, `{"error": "invalid_request"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if !ok || id != clientID || secret != clientSecret {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": "invalid_client"}`))
			return
		}
		ts.mu.Lock()
		ts.grants = append(ts.grants, r.PostFormValue("scope"))
		ts.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) issued() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.grants...)
}

// A customer adds an endpoint that wants an OAuth 2 access token and a client certificate, tests a
// payload filter against a catalogue type's example (the form comes back with what was typed, but the
// secrets), saves with Enter, sends the example to it, and sees it delivered with its request as sent
// carrying authorization: Bearer ••••, and the certificate's expiry on the endpoint page. At 390 px wide
// nothing scrolls sideways; axe finds nothing on the form and the endpoint page.
func TestBrowserReceiverStory(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := setup(t, withBackground, nil)
	types := e.seedCatalogue("receiverstory")
	tn := e.newTenant("receiver story")
	token := "tok-" + uuid.NewString()
	auth := newTokenServer(t, "hookline-client", "client-secret-typed", token)
	cert := newTestCertificate(t, "receiver.example.com", time.Now().Add(95*24*time.Hour+time.Hour), nil)
	path := "/oauth-story/" + uuid.NewString()[:8]

	b.login(e.base, tn.Email)
	b.run("add endpoint",
		chromedp.Click(chromedp.CSS(`[data-testid=add-endpoint]`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoint-url`)),
	)
	// With script only the chosen type's fields show.
	if eval[bool](b, `document.querySelector('#auth-token-url').offsetParent !== null`) {
		t.Error("OAuth 2's fields show before OAuth 2 is chosen")
	}
	b.run("fill the form",
		chromedp.SendKeys(chromedp.CSS(`#endpoint-url`), e.recv.URL+path),
		chromedp.SendKeys(chromedp.CSS(`#endpoint-description`), "Ledger (OAuth 2)"),
		chromedp.Click(chromedp.CSS(`#auth-oauth2`)),
		chromedp.WaitVisible(chromedp.CSS(`#auth-token-url`)),
		chromedp.SendKeys(chromedp.CSS(`#auth-token-url`), auth.URL+"/token"),
		chromedp.SendKeys(chromedp.CSS(`#auth-client-id`), "hookline-client"),
		chromedp.SendKeys(chromedp.CSS(`#auth-client-secret`), "client-secret-typed"),
		chromedp.SendKeys(chromedp.CSS(`#auth-scopes`), "ledger:write"),
		chromedp.SetValue(chromedp.CSS(`#certificate-pem`), cert.chain),
		chromedp.SetValue(chromedp.CSS(`#certificate-key`), cert.key),
		chromedp.SetValue(chromedp.CSS(`#filter-json`), `{"data": {"status": "placed"}}`),
		chromedp.SetValue(chromedp.CSS(`#filter-test-type`), types.placed),
	)
	b.axeCheck("endpoint form, filled")
	b.screenshot("form-filled")

	// Test filter: the same form back, with the result beside the filter.
	b.run("test the filter",
		chromedp.ScrollIntoView(chromedp.CSS(`[data-testid=test-filter]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=test-filter]`)),
	)
	b.waitJS("the result", `location.pathname === '/subscriptions/filter-test' && document.querySelector('[data-testid=filter-test-result]')`)
	if got := b.text(`[data-testid=filter-test-result]`); !strings.HasPrefix(got, "Matches: the example of "+types.placed) {
		t.Errorf("the filter test says %q", got)
	}
	kept := eval[map[string]string](b, `Object.fromEntries(['endpoint-url', 'endpoint-description', 'auth-token-url', 'auth-client-id',
		'auth-scopes', 'auth-client-secret', 'certificate-key', 'filter-test-type'].map(id => [id, document.getElementById(id).value]))`)
	want := map[string]string{"endpoint-url": e.recv.URL + path, "endpoint-description": "Ledger (OAuth 2)", "auth-token-url": auth.URL + "/token",
		"auth-client-id": "hookline-client", "auth-scopes": "ledger:write", "auth-client-secret": "", "certificate-key": "", "filter-test-type": types.placed}
	for id, v := range want {
		if kept[id] != v {
			t.Errorf("after Test filter #%s holds %q, want %q", id, kept[id], v)
		}
	}
	if !eval[bool](b, `document.querySelector('#auth-oauth2').checked && document.querySelector('#auth-token-url').offsetParent !== null`) {
		t.Error("after Test filter OAuth 2 is not chosen and shown")
	}
	if got := b.text(`[data-testid=secrets-note]`); !strings.Contains(got, "client secret and private key") {
		t.Errorf("the secrets note %q", got)
	}
	b.axeCheck("endpoint form, filter tested")
	b.screenshot("filter-tested")

	// The secrets again, custom delays, and Enter in a field saves (not tests).
	b.run("finish and save with Enter",
		chromedp.SendKeys(chromedp.CSS(`#auth-client-secret`), "client-secret-typed"),
		chromedp.SetValue(chromedp.CSS(`#certificate-key`), cert.key),
		chromedp.Click(chromedp.CSS(`#schedule-custom`)),
		chromedp.WaitVisible(chromedp.CSS(`#schedule-delays`)),
		chromedp.SendKeys(chromedp.CSS(`#schedule-delays`), "30s, 5m, 1h"),
		chromedp.SendKeys(chromedp.CSS(`#endpoint-description`), kb.Enter),
	)
	b.waitJS("saved", `/^\/subscriptions\/[0-9a-f-]{36}$/.test(location.pathname) && document.querySelector('[data-testid=auth-line]')`)
	subID := strings.TrimPrefix(eval[string](b, `location.pathname`), "/subscriptions/")
	wantLines := map[string]string{
		"auth-line":        "OAuth 2 client credentials via " + strings.TrimPrefix(auth.URL, "http://") + ", client hookline-client, scopes ledger:write",
		"schedule-line":    "Custom: 30s → 5m → 1h, then the delivery expires.",
		"certificate-line": cert.subject + ", expires " + cert.notAfter.UTC().Format("2 Jan 2006") + " (in 95 days)",
	}
	for id, v := range wantLines {
		if got := b.text(`[data-testid=` + id + `]`); got != v {
			t.Errorf("the endpoint page's %s says %q, want %q", id, got, v)
		}
	}
	if got := b.text(`[data-testid=filter-json]`); got != `{ "data": { "status": "placed" } }` {
		t.Errorf("the endpoint page's filter %q", got)
	}
	b.axeCheck("endpoint page")
	b.screenshot("endpoint-page")

	// Send the catalogue's example to it: delivered with a bearer token from the token server.
	b.run("the catalogue", chromedp.Navigate(e.base+"/event-types?q="+types.marker), chromedp.WaitReady(chromedp.CSS(`footer`)))
	card := fmt.Sprintf(`[data-testid=event-type][data-name=%q]`, types.placed)
	b.run("send the example",
		chromedp.SetValue(chromedp.CSS(card+` select[name=subscription_id]`), subID),
		chromedp.ScrollIntoView(chromedp.CSS(card+` [data-testid=send-example]`)),
		chromedp.Click(chromedp.CSS(card+` [data-testid=send-example]`)),
	)
	b.waitJS("delivered", `location.pathname.startsWith('/deliveries/') &&
		document.querySelector('[data-testid=summary-headline]')?.textContent.trim() === 'Delivered on the first attempt'`)
	e.recv.waitHits(t, path, 1)
	for _, h := range e.recv.all() {
		if h.Path == path && h.Headers.Get("Authorization") != "Bearer "+token {
			t.Errorf("the endpoint got Authorization %q, want the token server's bearer token", h.Headers.Get("Authorization"))
		}
	}
	if got := auth.issued(); len(got) != 1 || got[0] != "ledger:write" {
		t.Errorf("the token server issued %v, want one token for scope ledger:write", got)
	}
	b.run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid=headers]`)))
	sent := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll('[data-testid=headers] tr')].map(r => [r.querySelector('th').textContent.trim(), r.querySelector('td').textContent.trim()]))`)
	if sent["authorization"] != "Bearer ••••" {
		t.Errorf("the request as sent shows authorization %q, want Bearer ••••", sent["authorization"])
	}
	if body := eval[string](b, `document.body.innerText`); strings.Contains(body, token) || strings.Contains(body, "client-secret-typed") {
		t.Error("the delivery's page shows the token or the client secret")
	}
	b.screenshot("delivered")

	// 390 px wide: nothing scrolls sideways; axe on the form and the endpoint page.
	b.run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	for _, p := range []struct{ name, path string }{
		{"edit form", "/subscriptions/" + subID + "/edit"},
		{"endpoint page", "/subscriptions/" + subID},
		{"delivery", eval[string](b, `location.pathname`)},
	} {
		b.run("open "+p.name, chromedp.Navigate(e.base+p.path), chromedp.WaitReady(chromedp.CSS(`footer`)))
		if overflow := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); overflow > 1 {
			t.Errorf("the %s at 390 px is %d px wider than the screen", p.name, overflow)
		}
		if p.name != "delivery" {
			b.axeCheck("phone " + p.name)
		}
		b.screenshot("phone-" + strings.ReplaceAll(p.name, " ", "-"))
	}
}
