package delivery

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A client secret with the characters RFC 6749 §2.3.1 has form-encoded before Basic authentication.
const testClientSecret = "s3cr:t/+ x&y=z"

// tokenServer is a real OAuth 2 token endpoint that counts its requests and keeps the last one's
// credentials and form.
type tokenServer struct {
	*httptest.Server
	requests atomic.Int64

	mu   sync.Mutex
	last tokenRequest
}

type tokenRequest struct {
	method, contentType, userAgent string
	basicUser, basicPass           string
	hasBasic                       bool
	form                           url.Values
}

// newTokenServer answers the nth token request (from 1) with answer.
func newTokenServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int64)) *tokenServer {
	t.Helper()
	ts := newUnstartedTokenServer(answer)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

func newUnstartedTokenServer(answer func(w http.ResponseWriter, r *http.Request, n int64)) *tokenServer {
	ts := &tokenServer{}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := ts.requests.Add(1)
		user, pass, ok := r.BasicAuth()
		_ = r.ParseForm()
		ts.mu.Lock()
		ts.last = tokenRequest{method: r.Method, contentType: r.Header.Get("Content-Type"), userAgent: r.UserAgent(),
			basicUser: user, basicPass: pass, hasBasic: ok, form: r.PostForm}
		ts.mu.Unlock()
		answer(w, r, n)
	}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	return ts
}

func (ts *tokenServer) lastRequest() tokenRequest {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.last
}

// tokensLasting answers token n with "tok-n" lasting expiresIn seconds (0: no expires_in).
func tokensLasting(expiresIn int) func(w http.ResponseWriter, r *http.Request, n int64) {
	return func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if expiresIn == 0 {
			fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"bearer"}`, n)
			return
		}
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"bearer","expires_in":%d}`, n, expiresIn)
	}
}

// bearerReceiver is an endpoint that records the Authorization of every request and answers 401 to the
// token in refuse.
type bearerReceiver struct {
	*httptest.Server
	refuse atomic.Value // string

	mu   sync.Mutex
	seen []string
}

func newBearerReceiver(t *testing.T) *bearerReceiver {
	t.Helper()
	rc := &bearerReceiver{}
	rc.refuse.Store("")
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		rc.mu.Lock()
		rc.seen = append(rc.seen, a)
		rc.mu.Unlock()
		if a == "Bearer "+rc.refuse.Load().(string) {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *bearerReceiver) authorizations() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.seen...)
}

func oauthAuth(tokenURL string) *Auth {
	return &Auth{Type: AuthOAuth2ClientCredentials, TokenURL: tokenURL, ClientID: "hookline client", ClientSecret: testClientSecret,
		Scopes: []string{"events:write", "audit"}, Audience: "https://api.example.com", ClientAuth: ClientAuthBasic}
}

func sendAuthed(s *Sender, url string, sub uuid.UUID, a *Auth, now func() time.Time) Response {
	return s.Send(context.Background(), Request{URL: url, MsgID: "msg_1", Body: []byte(`{}`),
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, SubscriptionID: sub, Auth: a}, now)
}

func fixedClock(at time.Time) (now func() time.Time, advance func(time.Duration)) {
	var mu sync.Mutex
	return func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return at
		}, func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			at = at.Add(d)
		}
}

// One token serves every attempt of a subscription while it is good: 20 at once share one token request,
// and 20 after them use the kept token. Another subscription, or an edited configuration, gets its own.
func TestOAuthTokenFetchedOnceForManyAttempts(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		time.Sleep(100 * time.Millisecond) // long enough for the concurrent attempts to find the request under way
		tokensLasting(3600)(w, r, n)
	})
	rc := newBearerReceiver(t)
	s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	t.Cleanup(s.CloseIdle)
	now, _ := fixedClock(time.Now())
	sub, a := uuid.New(), oauthAuth(ts.URL)

	var wg sync.WaitGroup
	results := make([]Response, 20)
	for i := range results {
		wg.Go(func() { results[i] = sendAuthed(s, rc.URL, sub, a, now) })
	}
	wg.Wait()
	for range 20 {
		results = append(results, sendAuthed(s, rc.URL, sub, a, now))
	}
	for i, res := range results {
		if res.Status != http.StatusOK || res.Err != "" || res.Headers["authorization"] != "Bearer "+Masked {
			t.Fatalf("attempt %d: %d %q, authorization shown as %q", i, res.Status, res.Err, res.Headers["authorization"])
		}
		for k, v := range res.Headers {
			if strings.Contains(v, "tok-") {
				t.Fatalf("attempt %d shows the token in %s: %q", i, k, v)
			}
		}
	}
	if n := ts.requests.Load(); n != 1 {
		t.Errorf("%d token requests for 40 attempts, want 1", n)
	}
	got := rc.authorizations()
	if len(got) != 40 {
		t.Fatalf("the endpoint got %d requests, want 40", len(got))
	}
	for _, a := range got {
		if a != "Bearer tok-1" {
			t.Fatalf("the endpoint got Authorization %q, want Bearer tok-1", a)
		}
	}

	if res := sendAuthed(s, rc.URL, uuid.New(), a, now); res.Status != http.StatusOK || ts.requests.Load() != 2 {
		t.Errorf("another subscription: %d %q after %d token requests, want its own (2)", res.Status, res.Err, ts.requests.Load())
	}
	edited := *a
	edited.Scopes = []string{"events:write"}
	if res := sendAuthed(s, rc.URL, sub, &edited, now); res.Status != http.StatusOK || ts.requests.Load() != 3 {
		t.Errorf("an edited configuration: %d %q after %d token requests, want a new token (3)", res.Status, res.Err, ts.requests.Load())
	}
	if got := rc.authorizations(); got[len(got)-1] != "Bearer tok-3" {
		t.Errorf("the edited configuration sent %q, want Bearer tok-3", got[len(got)-1])
	}
}

// A token is kept until 30 s before it expires on the sender's clock; one without expires_in, five minutes.
func TestOAuthTokenRenewedBeforeExpiry(t *testing.T) {
	t.Parallel()
	formEncoded := func(expiresIn string) func(w http.ResponseWriter, r *http.Request, n int64) {
		return func(w http.ResponseWriter, r *http.Request, n int64) {
			w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
			fmt.Fprintf(w, "access_token=tok-%d&token_type=bearer&expires_in=%s", n, expiresIn)
		}
	}
	quoted := func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","expires_in":"600"}`, n)
	}
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, n int64)
		keep   time.Duration
	}{
		{"expires_in 3600", tokensLasting(3600), 3600*time.Second - tokenKeepMargin},
		{"no expires_in", tokensLasting(0), tokenDefaultLifetime},
		{"form-encoded", formEncoded("1200"), 1200*time.Second - tokenKeepMargin},
		{"form-encoded with a fraction", formEncoded("1200.0"), 1200*time.Second - tokenKeepMargin},
		{"quoted", quoted, 600*time.Second - tokenKeepMargin},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ts := newTokenServer(t, c.answer)
			rc := newBearerReceiver(t)
			s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
			t.Cleanup(s.CloseIdle)
			now, advance := fixedClock(time.Now())
			sub, a := uuid.New(), oauthAuth(ts.URL)
			send := func() {
				t.Helper()
				if res := sendAuthed(s, rc.URL, sub, a, now); res.Status != http.StatusOK {
					t.Fatalf("send: %d %q", res.Status, res.Err)
				}
			}
			send()
			advance(c.keep - time.Second)
			send()
			if n := ts.requests.Load(); n != 1 {
				t.Errorf("a second before the token is dropped: %d token requests, want 1", n)
			}
			advance(time.Second)
			send()
			if n := ts.requests.Load(); n != 2 {
				t.Errorf("when the token is dropped: %d token requests, want 2", n)
			}
			if got := rc.authorizations(); got[len(got)-1] != "Bearer tok-2" {
				t.Errorf("sent %q after renewal, want Bearer tok-2", got[len(got)-1])
			}
		})
	}
}

// A 401 from the endpoint drops the kept token: that attempt is transient and the next one fetches anew. A
// 401 to a token already replaced does not drop its replacement.
func TestOAuthTokenDroppedOn401(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, tokensLasting(3600))
	rc := newBearerReceiver(t)
	rc.refuse.Store("tok-1")
	s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	t.Cleanup(s.CloseIdle)
	now, _ := fixedClock(time.Now())
	sub, a := uuid.New(), oauthAuth(ts.URL)

	res := sendAuthed(s, rc.URL, sub, a, now)
	if res.Status != http.StatusUnauthorized || !res.TokenRefused {
		t.Fatalf("with the refused token: %d, TokenRefused %v", res.Status, res.TokenRefused)
	}
	res = sendAuthed(s, rc.URL, sub, a, now)
	if res.Status != http.StatusOK || res.TokenRefused || ts.requests.Load() != 2 {
		t.Fatalf("after the 401: %d, TokenRefused %v, %d token requests (want 200, false, 2)", res.Status, res.TokenRefused, ts.requests.Load())
	}
	s.tokens.drop(sub, "tok-1") // a late 401 to the old token
	if res := sendAuthed(s, rc.URL, sub, a, now); res.Status != http.StatusOK || ts.requests.Load() != 2 {
		t.Errorf("a 401 to the old token dropped the new one: %d, %d token requests", res.Status, ts.requests.Load())
	}
	if got := rc.authorizations(); strings.Join(got, ",") != "Bearer tok-1,Bearer tok-2,Bearer tok-2" {
		t.Errorf("the endpoint got %v", got)
	}
}

// The token request is the client credentials grant as RFC 6749 §4.4 has it, with the client's credentials
// as §2.3.1 says (form-encoded in HTTP Basic, or in the body), the scopes space-separated, and the audience.
func TestOAuthTokenRequestAsRFC6749Says(t *testing.T) {
	t.Parallel()
	for _, clientAuth := range []string{ClientAuthBasic, ClientAuthBody, ""} {
		t.Run("client_auth "+clientAuth, func(t *testing.T) {
			t.Parallel()
			ts := newTokenServer(t, tokensLasting(3600))
			rc := newBearerReceiver(t)
			s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
			t.Cleanup(s.CloseIdle)
			a := oauthAuth(ts.URL)
			a.ClientAuth = clientAuth
			if res := sendAuthed(s, rc.URL, uuid.New(), a, time.Now); res.Status != http.StatusOK {
				t.Fatalf("send: %d %q", res.Status, res.Err)
			}
			r := ts.lastRequest()
			if r.method != http.MethodPost || r.contentType != "application/x-www-form-urlencoded" || r.userAgent != UserAgent {
				t.Errorf("request %s, %q, user agent %q", r.method, r.contentType, r.userAgent)
			}
			if g, sc, au := r.form.Get("grant_type"), r.form.Get("scope"), r.form.Get("audience"); g != "client_credentials" ||
				sc != "events:write audit" || au != "https://api.example.com" {
				t.Errorf("grant_type %q, scope %q, audience %q", g, sc, au)
			}
			switch clientAuth {
			case ClientAuthBody:
				if r.hasBasic || r.form.Get("client_id") != "hookline client" || r.form.Get("client_secret") != testClientSecret {
					t.Errorf("body: Basic %v, client_id %q, client_secret %q", r.hasBasic, r.form.Get("client_id"), r.form.Get("client_secret"))
				}
			default: // basic, also when not said
				user, _ := url.QueryUnescape(r.basicUser)
				pass, _ := url.QueryUnescape(r.basicPass)
				if !r.hasBasic || r.basicUser != url.QueryEscape("hookline client") || user != "hookline client" || pass != testClientSecret {
					t.Errorf("basic: %v %q %q", r.hasBasic, r.basicUser, r.basicPass)
				}
				if r.form.Has("client_secret") {
					t.Error("basic: the secret is in the body too")
				}
			}
			if n := ts.requests.Load(); n != 1 {
				t.Errorf("%d token requests, want 1 (no second try another way)", n)
			}
		})
	}
}

// Every way a token request fails is the attempt's error in words, transient, bounded in time and size,
// with no request to the endpoint, and neither the error nor the headers shown hold the secret or an address.
func TestOAuthTokenFailures(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	var redirected atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		tokensLasting(3600)(w, r, 1)
	}))
	t.Cleanup(elsewhere.Close)
	jsonAnswer := func(status int, body string) func(w http.ResponseWriter, r *http.Request, n int64) {
		return func(w http.ResponseWriter, r *http.Request, n int64) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, n int64)
		guard  bool   // the SSRF guard on (the endpoint alone allowed)
		url    string // a token URL of its own, no server
		want   string
	}{
		{name: "500", answer: jsonAnswer(500, `oops`), want: "the token endpoint answered 500"},
		{name: "401 invalid_client", answer: jsonAnswer(401, `{"error":"invalid_client","error_description":"Client authentication failed"}`),
			want: "the token endpoint answered 401 invalid_client: Client authentication failed"},
		{name: "an error repeating the secret", answer: jsonAnswer(400, `{"error":"invalid_client","error_description":"bad secret `+testClientSecret+`"}`),
			want: "the token endpoint answered 400 invalid_client"},
		{name: "hangs", answer: func(w http.ResponseWriter, r *http.Request, n int64) { <-r.Context().Done() },
			want: "the token endpoint did not answer within 1s"},
		{name: "redirects", answer: func(w http.ResponseWriter, r *http.Request, n int64) {
			http.Redirect(w, r, elsewhere.URL, http.StatusFound)
		}, want: "the token endpoint answered 302 (redirects are not followed)"},
		{name: "10 MiB", answer: func(w http.ResponseWriter, r *http.Request, n int64) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"access_token":"`+strings.Repeat("a", 10<<20)+`"}`)
		}, want: "the token endpoint's answer is larger than 64 KiB"},
		{name: "no access_token", answer: jsonAnswer(200, `{"token_type":"bearer","expires_in":3600}`),
			want: "the token endpoint's answer holds no access_token"},
		{name: "not JSON", answer: func(w http.ResponseWriter, r *http.Request, n int64) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>sign in</html>")
		}, want: "the token endpoint's answer is not a token response"},
		{name: "a token no header can carry", answer: jsonAnswer(200, `{"access_token":"a\r\nX-Injected: 1","expires_in":3600}`),
			want: "the token endpoint's access_token holds characters an HTTP header cannot carry"},
		{name: "private address with the guard on", answer: tokensLasting(3600), guard: true,
			want: "address not allowed: the token endpoint resolves to a loopback, private or other non-public address"},
		{name: "not an http URL", url: "ftp://tokens.example.com/token", want: "the token URL is not an http or https URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rc := newBearerReceiver(t)
			tokenURL := c.url
			var ts *tokenServer
			if c.answer != nil {
				ts = newTokenServer(t, c.answer)
				tokenURL = ts.URL + "/oauth/token"
			}
			o := SenderOptions{Timeout: timeout, AllowPrivate: true}
			if c.guard {
				o = SenderOptions{Timeout: timeout, AllowAddrs: []string{rc.Listener.Addr().String()}}
			}
			s := NewSender(o)
			t.Cleanup(s.CloseIdle)
			start := time.Now()
			res := sendAuthed(s, rc.URL, uuid.New(), oauthAuth(tokenURL), time.Now)
			if took := time.Since(start); took > timeout+time.Second {
				t.Errorf("the attempt took %s, over its %s timeout", took, timeout)
			}
			if res.Status != 0 || Classify(res.Status) != OutcomeRetry || res.Canceled {
				t.Errorf("status %d (canceled %v), want 0: transient", res.Status, res.Canceled)
			}
			if want := "could not get an access token: " + c.want; !strings.HasPrefix(res.Err, want) {
				t.Errorf("error %q, want %q", res.Err, want)
			}
			if len(res.Err) > ErrorLimit {
				t.Errorf("error of %d bytes", len(res.Err))
			}
			shown := res.Err
			for k, v := range res.Headers {
				shown += "\n" + k + ": " + v
			}
			for _, secret := range []string{testClientSecret, url.QueryEscape(testClientSecret),
				base64.StdEncoding.EncodeToString([]byte(url.QueryEscape("hookline client") + ":" + url.QueryEscape(testClientSecret))),
				"127.0.0.1"} {
				if strings.Contains(shown, secret) {
					t.Errorf("%q shows %q", shown, secret)
				}
			}
			if res.Headers["authorization"] != "Bearer "+Masked {
				t.Errorf("authorization shown as %q", res.Headers["authorization"])
			}
			if n := len(rc.authorizations()); n != 0 {
				t.Errorf("the endpoint got %d requests without a token", n)
			}
			if c.guard && ts.requests.Load() != 0 {
				t.Error("the guard let the token request through")
			}
			if s.tokens.len() != 0 {
				t.Error("a token was kept")
			}
		})
	}
	t.Cleanup(func() {
		if n := redirected.Load(); n != 0 {
			t.Errorf("the redirect was followed: %d requests to its target", n)
		}
	})
}

// Basic authentication: the credentials on the wire, over a custom Authorization header; shown masked.
func TestSenderBasicAuth(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r }))
	t.Cleanup(srv.Close)
	s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true})
	t.Cleanup(s.CloseIdle)
	res := s.Send(context.Background(), Request{URL: srv.URL, MsgID: "msg_1", Body: []byte(`{}`),
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, CustomHeaders: map[string]string{"authorization": "forged"},
		Auth: &Auth{Type: AuthBasic, Username: "hook", Password: "pa:ss wörd"}}, time.Now)
	if res.Status != http.StatusOK || res.Err != "" {
		t.Fatalf("send: %d %q", res.Status, res.Err)
	}
	r := <-got
	user, pass, ok := r.BasicAuth()
	if !ok || user != "hook" || pass != "pa:ss wörd" || len(r.Header.Values("Authorization")) != 1 {
		t.Errorf("Authorization %q", r.Header.Values("Authorization"))
	}
	if res.Headers["authorization"] != "Basic "+Masked {
		t.Errorf("authorization shown as %q", res.Headers["authorization"])
	}

	res = s.Send(context.Background(), Request{URL: srv.URL, MsgID: "msg_1", Body: []byte(`{}`),
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, Auth: &Auth{Type: "digest"}}, time.Now)
	if res.Status != 0 || !strings.Contains(res.Err, "authentication type") {
		t.Errorf("an unknown type: %d %q", res.Status, res.Err)
	}
}

// A token endpoint that wants mutual TLS gets the subscription's client certificate too (RFC 8705's
// tls_client_auth), on the same transport as the deliveries; without one, the error says it was asked for.
func TestOAuthTokenOverMutualTLS(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "Client CA")
	srv, s, hits := mtlsReceiver(t, ca) // s trusts httptest's certificate, the token endpoint's as well
	ts := newUnstartedTokenServer(tokensLasting(3600))
	ts.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool()}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	certPEM, keyPEM := ca.issue(t, "hookline-sender", nil, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	cc := &ClientCertificate{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM}
	send := func(cc *ClientCertificate) Response {
		return s.Send(context.Background(), Request{URL: srv.URL, MsgID: "msg_1", Body: []byte(`{}`),
			Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, SubscriptionID: uuid.New(), Auth: oauthAuth(ts.URL),
			ClientCertificate: cc}, time.Now)
	}
	if res := send(cc); res.Status != http.StatusOK || ts.requests.Load() != 1 || hits.Load() != 1 {
		t.Fatalf("with the certificate: %d %q, %d token requests, %d deliveries", res.Status, res.Err, ts.requests.Load(), hits.Load())
	}
	res := send(nil)
	if want := "could not get an access token: tls: the token endpoint asked for a client certificate (mutual TLS) and none is configured"; res.Err != want || res.Status != 0 {
		t.Errorf("without: %d %q, want %q", res.Status, res.Err, want)
	}
}

// Tokens of subscriptions that no longer send (deleted, or moved to another configuration) do not pile up:
// when the kept tokens reach the sweep size, the expired ones go.
func TestTokenCacheSweepsExpiredTokens(t *testing.T) {
	t.Parallel()
	at := newAccessTokens()
	at.sweepAt = 3
	now := time.Now()
	at.keep(uuid.New(), keptToken{value: "a", until: now.Add(time.Minute)}, now)
	at.keep(uuid.New(), keptToken{value: "b", until: now.Add(time.Minute)}, now)
	if at.len() != 2 {
		t.Fatalf("%d kept, want 2", at.len())
	}
	later := now.Add(2 * time.Minute)
	live := uuid.New()
	at.keep(live, keptToken{value: "c", until: later.Add(time.Hour)}, later)
	if at.len() != 1 {
		t.Errorf("%d kept after the sweep, want 1", at.len())
	}
	if v, ok := at.lookup(live, [32]byte{}, later); !ok || v != "c" {
		t.Errorf("the live token: %q %v", v, ok)
	}
	if at.sweepAt != minTokenSweep {
		t.Errorf("next sweep at %d, want %d", at.sweepAt, minTokenSweep)
	}
	at.keep(uuid.New(), keptToken{value: "d", until: later}, later) // lives under the margin: not kept
	if at.len() != 1 {
		t.Errorf("a token already too old was kept")
	}
}
