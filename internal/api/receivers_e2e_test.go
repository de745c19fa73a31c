package api_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/server/servertest"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Hookline test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf for a server (ip set) or a client, valid until notAfter; it returns its PEM and key PEM.
func (ca *testCA) issue(t *testing.T, cn string, ip net.IP, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"Example"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	if ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// lockedBuffer is the server's log, written by many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The receivers of an enterprise, end to end through a real server: a TLS endpoint that requires a client
// certificate from its own CA, behind basic auth or an OAuth 2 token from a real token endpoint (which
// refuses the first token once: the token is fetched again and the delivery goes through). An endpoint
// without the certificate and one whose token endpoint fails die with the reason in words. Afterwards
// neither the database (pg_dump) nor the server's log (debug level) holds a password, a client secret, a
// private key or an access token.
func TestEnterpriseReceiversEndToEnd(t *testing.T) {
	t.Parallel()
	const (
		password     = "pw-Zq81-basic-secret"
		clientSecret = "cs-Jx55-oauth-secret"
	)
	ca := newTestCA(t)
	serverCert, serverKey := ca.issue(t, "receiver", net.ParseIP("127.0.0.1"), time.Now().Add(24*time.Hour))
	clientCert, clientKey := ca.issue(t, "hookline-client", nil, time.Now().Add(90*24*time.Hour))
	keyBody := strings.Split(string(clientKey), "\n")[1] // a line of the key's base64

	// The token endpoint: client credentials in the Authorization header; tokens access-token-N.
	var tokens atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "hookline" || secret != clientSecret || r.PostFormValue("grant_type") != "client_credentials" ||
			r.PostFormValue("scope") != "webhooks:receive" || r.PostFormValue("audience") != "https://api.example.com" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = w.Write([]byte(`{"error": "invalid_client"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token": "access-token-%d", "token_type": "Bearer", "expires_in": 3600}`, tokens.Add(1))
	}))
	t.Cleanup(tokenSrv.Close)
	brokenTokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	t.Cleanup(brokenTokens.Close)

	// The receiver: mutual TLS with the test CA; /basic wants basic auth, /oauth a token other than the first.
	var seenMu sync.Mutex
	seen := map[string][]string{}
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authz := r.Header.Get("Authorization")
		seenMu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], authz)
		seenMu.Unlock()
		switch r.URL.Path {
		case "/basic":
			if u, p, ok := r.BasicAuth(); !ok || u != "hookline" || p != password {
				w.WriteHeader(401)
				return
			}
		case "/oauth":
			if authz == "Bearer access-token-1" || !strings.HasPrefix(authz, "Bearer access-token-") {
				w.WriteHeader(401)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	}))
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(ca.cert)
	rcv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	rcv.StartTLS()
	t.Cleanup(rcv.Close)

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cfg := testConfig(t)
	ownDatabase(t)(&cfg)
	cfg.SenderCAFile = caFile
	cfg.SecretKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	srv, base := servertest.StartWithBackground(t, cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), server.Options{})
	e := &env{t: t, srv: srv, base: base, client: &http.Client{Timeout: 20 * time.Second}}

	tn := e.newTenant("enterprise")
	cert := map[string]any{"certificate": string(clientCert), "private_key": string(clientKey)}
	oauth := func(tokenURL string) map[string]any {
		return map[string]any{"type": "oauth2_client_credentials", "token_url": tokenURL, "client_id": "hookline",
			"client_secret": clientSecret, "scopes": []string{"webhooks:receive"}, "audience": "https://api.example.com"}
	}
	basic := e.newSubscription(tn, map[string]any{"url": rcv.URL + "/basic", "event_types": []string{"a.basic"},
		"auth": map[string]any{"type": "basic", "username": "hookline", "password": password}, "tls_client_certificate": cert})
	e.newSubscription(tn, map[string]any{"url": rcv.URL + "/oauth", "event_types": []string{"a.oauth"},
		"auth": oauth(tokenSrv.URL + "/token"), "tls_client_certificate": cert})
	e.newSubscription(tn, map[string]any{"url": rcv.URL + "/plain", "event_types": []string{"a.nocert"}})
	e.newSubscription(tn, map[string]any{"url": rcv.URL + "/oauth", "event_types": []string{"a.badtoken"},
		"auth": oauth(brokenTokens.URL + "/token"), "tls_client_certificate": cert})
	got := must[struct {
		TLS *struct {
			Subject  string    `json:"subject"`
			NotAfter time.Time `json:"not_after"`
		} `json:"tls_client_certificate"`
	}](e, 200, "GET", "/tenants/"+tn+"/subscriptions/"+basic.ID, adminToken, nil)
	if got.TLS == nil || !strings.Contains(got.TLS.Subject, "CN=hookline-client") || got.TLS.NotAfter.Before(time.Now().Add(80*24*time.Hour)) {
		t.Errorf("the certificate as answered: %+v", got.TLS)
	}

	d := map[string]string{}
	for _, typ := range []string{"a.basic", "a.oauth", "a.nocert", "a.badtoken"} {
		p := e.publish(tn, typ, map[string]any{"n": 1})
		if len(p.Deliveries) != 1 {
			t.Fatalf("%s: %d deliveries", typ, len(p.Deliveries))
		}
		d[typ] = p.Deliveries[0].ID
	}
	b := e.waitState(tn, d["a.basic"], "delivered")
	if b.Request == nil || b.Request.Headers["authorization"] != "Basic ••••" {
		t.Errorf("basic: the request as sent: %+v", b.Request)
	}
	o := e.waitState(tn, d["a.oauth"], "delivered", "failed", "expired")
	if o.State != "delivered" || len(o.Attempts) != 2 || o.Attempts[0].Status == nil || *o.Attempts[0].Status != 401 {
		t.Errorf("oauth: %s after %d attempts (want delivered on the second, after a 401): %+v", o.State, len(o.Attempts), o.Attempts)
	}
	if o.Request == nil || o.Request.Headers["authorization"] != "Bearer ••••" {
		t.Errorf("oauth: the request as sent: %+v", o.Request)
	}
	if n := tokens.Load(); n != 2 {
		t.Errorf("%d tokens fetched, want 2 (the first, and one after the 401)", n)
	}
	nc := e.waitState(tn, d["a.nocert"], "expired", "failed")
	if nc.State != "expired" || nc.Attempts[0].Error == nil || !strings.Contains(*nc.Attempts[0].Error, "client certificate") {
		t.Errorf("no certificate: %s, %+v (want expired, each attempt saying a certificate was asked for)", nc.State, nc.Attempts)
	}
	bt := e.waitState(tn, d["a.badtoken"], "expired", "failed")
	if bt.State != "expired" || bt.Attempts[0].Error == nil || *bt.Attempts[0].Error != "could not get an access token: the token endpoint answered 500" {
		t.Errorf("broken token endpoint: %s, first error %v", bt.State, errText(bt.Attempts))
	}
	seenMu.Lock()
	if len(seen["/plain"]) != 0 {
		t.Errorf("the endpoint without a certificate got %d requests through TLS", len(seen["/plain"]))
	}
	seenMu.Unlock()

	// Nothing secret in the database or the log.
	dump := pgDump(t, cfg.DatabaseURL)
	secrets := []string{password, clientSecret, keyBody, "access-token-1", "access-token-2",
		base64.StdEncoding.EncodeToString([]byte("hookline:" + password)), base64.StdEncoding.EncodeToString([]byte("hookline:" + clientSecret))}
	for _, s := range secrets {
		if strings.Contains(dump, s) {
			t.Errorf("the database dump holds %q", s)
		}
		if strings.Contains(logs.String(), s) {
			t.Errorf("the server's log holds %q", s)
		}
	}
	if !strings.Contains(logs.String(), `"level":"DEBUG"`) && !strings.Contains(logs.String(), `"level":"INFO"`) {
		t.Error("the server logged nothing: the log checked is not the server's")
	}
	if !strings.Contains(dump, "hookline-client") { // the dump is of the right database: the certificate is there
		t.Error("the dump does not hold the (public) client certificate's subject: not the test's database?")
	}
}

func errText(attempts []struct {
	Attempt         int       `json:"attempt"`
	StartedAt       time.Time `json:"started_at"`
	DurationMs      *int      `json:"duration_ms"`
	Status          *int      `json:"status"`
	ResponseSnippet *string   `json:"response_snippet"`
	Error           *string   `json:"error"`
}) string {
	if len(attempts) == 0 || attempts[0].Error == nil {
		return "<none>"
	}
	return *attempts[0].Error
}

// pgDump is the whole database as pg_dump writes it (data and schema, as an operator's backup holds it).
func pgDump(t *testing.T, url string) string {
	t.Helper()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
		if len(matches) == 0 {
			t.Fatal("pg_dump not found: install Debian's postgresql package")
		}
		bin = matches[len(matches)-1]
	}
	out, err := exec.CommandContext(t.Context(), bin, "--no-owner", "--dbname", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return string(out)
}
