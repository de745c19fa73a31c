package delivery

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a throwaway certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func (ca *testCA) pem() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}))
}

var serial atomic.Int64

// issue signs a client certificate for key (nil: a new P-256 key), valid from notBefore to notAfter, and
// returns its PEM and the key's PEM (PKCS #8).
func (ca *testCA) issue(t *testing.T, cn string, key crypto.Signer, notBefore, notAfter time.Time) (certPEM, keyPEM string) {
	t.Helper()
	if key == nil {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1) + 1),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"Acme"}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), pkcs8PEM(t, key)
}

func pkcs8PEM(t *testing.T, key crypto.Signer) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// mtlsReceiver is an HTTPS receiver that requires a client certificate issued by ca, and a sender (the
// guard off: it listens on 127.0.0.1) that trusts the receiver's certificate.
func mtlsReceiver(t *testing.T, ca *testCA) (*httptest.Server, *Sender, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if len(r.TLS.PeerCertificates) == 0 {
			t.Error("a request reached the handler without a client certificate")
		}
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool()}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	s := NewSender(SenderOptions{Timeout: 5 * time.Second, AllowPrivate: true, RootCAs: roots})
	t.Cleanup(s.CloseIdle)
	return srv, s, &hits
}

func sendTo(s *Sender, url string, cc *ClientCertificate) Response {
	return s.Send(context.Background(), Request{URL: url, MsgID: "msg_1", Body: []byte(`{}`),
		Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, ClientCertificate: cc}, time.Now)
}

// A receiver that requires mutual TLS gets the delivery with the right certificate, and refuses it without
// one, with an expired one and with one from another authority: each a transient failure in words.
func TestSenderClientCertificate(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "Receiver's client CA")
	srv, s, hits := mtlsReceiver(t, ca)
	now := time.Now()
	goodCert, goodKey := ca.issue(t, "hookline-sender", nil, now.Add(-time.Hour), now.Add(time.Hour))

	res := sendTo(s, srv.URL, &ClientCertificate{CertificatePEM: goodCert, PrivateKeyPEM: goodKey})
	if res.Status != http.StatusOK || res.Err != "" || Classify(res.Status) != OutcomeDelivered {
		t.Fatalf("with the right certificate: %d %q", res.Status, res.Err)
	}
	if hits.Load() != 1 {
		t.Fatalf("the receiver got %d requests, want 1", hits.Load())
	}

	expiredCert, expiredKey := ca.issue(t, "hookline-sender", nil, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	otherCert, otherKey := newTestCA(t, "Someone else's CA").issue(t, "hookline-sender", nil, now.Add(-time.Hour), now.Add(time.Hour))
	const refused = "tls: the endpoint refused the handshake (it may not accept this client certificate)"
	for _, c := range []struct {
		name string
		cc   *ClientCertificate
		want string
	}{
		{"none", nil, "tls: the endpoint asked for a client certificate (mutual TLS) and none is configured"},
		{"expired", &ClientCertificate{CertificatePEM: expiredCert, PrivateKeyPEM: expiredKey}, refused},
		{"another authority", &ClientCertificate{CertificatePEM: otherCert, PrivateKeyPEM: otherKey}, refused},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := sendTo(s, srv.URL, c.cc)
			if res.Status != 0 || Classify(res.Status) != OutcomeRetry {
				t.Errorf("status %d, want 0 (transient)", res.Status)
			}
			if res.Err != c.want {
				t.Errorf("error %q, want %q", res.Err, c.want)
			}
		})
	}
	if hits.Load() != 1 {
		t.Errorf("the receiver's handler ran %d times, want only for the right certificate", hits.Load())
	}
}

// A transport is built once per certificate and reused; the kept ones are bounded, the least recently used
// going first.
func TestSenderClientCertTransportsAreKeptAndBounded(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "Receiver's client CA")
	srv, s, hits := mtlsReceiver(t, ca)
	s.certTransports.max = 2
	now := time.Now()
	var certs []*ClientCertificate
	for range 3 {
		c, k := ca.issue(t, "hookline-sender", nil, now.Add(-time.Hour), now.Add(time.Hour))
		certs = append(certs, &ClientCertificate{CertificatePEM: c, PrivateKeyPEM: k})
	}
	first, err := s.certTransports.clients(certs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 0, 1, 0, 2} {
		if res := sendTo(s, srv.URL, certs[i]); res.Status != http.StatusOK {
			t.Fatalf("certificate %d: %d %q", i, res.Status, res.Err)
		}
	}
	if n := s.certTransports.len(); n != 2 {
		t.Errorf("%d transports kept, want 2", n)
	}
	if again, _ := s.certTransports.clients(certs[0]); again != first {
		t.Error("the recently used certificate's transport was built again")
	}
	// 0 was used after 1, and 2 came last: 1 went out, 0 stayed.
	s.certTransports.mu.Lock()
	_, kept1 := s.certTransports.byKey[certKey(certs[1])]
	s.certTransports.mu.Unlock()
	if kept1 {
		t.Error("the least recently used certificate's transport is still kept")
	}
	if hits.Load() != 5 {
		t.Errorf("the receiver got %d requests, want 5", hits.Load())
	}
	if _, err := s.certTransports.clients(&ClientCertificate{CertificatePEM: "x", PrivateKeyPEM: "y"}); !errors.Is(err, errClientCertUnusable) {
		t.Errorf("an unusable certificate: %v", err)
	}
	if n := s.certTransports.len(); n != 2 {
		t.Errorf("an unusable certificate changed the kept transports to %d", n)
	}
}

func TestParseClientCertificate(t *testing.T) {
	t.Parallel()
	root := newTestCA(t, "Root")
	now := time.Now()
	// An intermediate signed by the root, and a leaf signed by the intermediate.
	interKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	interPEM, _ := root.issueCA(t, "Intermediate", interKey)
	inter := &testCA{cert: mustParsePEM(t, interPEM), key: interKey}
	leafPEM, leafKeyPEM := inter.issue(t, "sender.example.com", nil, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	chain := leafPEM + interPEM

	info, err := ParseClientCertificate(chain, leafKeyPEM, now)
	if err != nil {
		t.Fatalf("good chain: %v", err)
	}
	if info.Subject != "CN=sender.example.com,O=Acme" || !info.NotAfter.Equal(mustParsePEM(t, leafPEM).NotAfter) || info.NotAfter.Location() != time.UTC {
		t.Errorf("info %+v", info)
	}

	// Other key forms OpenSSL writes: RSA in PKCS #1, EC in SEC 1 after its parameters, Ed25519 in PKCS #8.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaCert, _ := root.issue(t, "rsa", rsaKey, now.Add(-time.Hour), now.Add(time.Hour))
	rsaPKCS1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}))
	ecKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	ecCert, _ := root.issue(t, "ec", ecKey, now.Add(-time.Hour), now.Add(time.Hour))
	ecDER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	ecSEC1 := "-----BEGIN EC PARAMETERS-----\nBgUrgQQAIg==\n-----END EC PARAMETERS-----\n" +
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}))
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edCert, edPKCS8 := root.issue(t, "ed", edKey, now.Add(-time.Hour), now.Add(time.Hour))
	for name, pair := range map[string][2]string{"rsa pkcs1": {rsaCert, rsaPKCS1}, "ec sec1": {ecCert, ecSEC1}, "ed25519": {edCert, edPKCS8}} {
		if _, err := ParseClientCertificate(pair[0], pair[1], now); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	otherCert, otherKey := root.issue(t, "other", nil, now.Add(-time.Hour), now.Add(time.Hour))
	expiredCert, expiredKey := root.issue(t, "expired", nil, now.Add(-48*time.Hour), now.Add(-time.Minute))
	encrypted := string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}}))
	four := leafPEM + interPEM + root.pem() + otherCert
	for _, c := range []struct {
		name, cert, key, field, says string
	}{
		{"garbage certificate", "hello", leafKeyPEM, "certificate", "not PEM"},
		{"empty certificate", "", leafKeyPEM, "certificate", "no certificate"},
		{"certificate not X.509", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("nope")})), leafKeyPEM, "certificate", "cannot be parsed"},
		{"key in the certificate field", leafKeyPEM, leafKeyPEM, "certificate", "holds a private key"},
		{"text after the chain", chain + "trailing", leafKeyPEM, "certificate", "after its last certificate"},
		{"garbage key", chain, "hello", "private_key", "not PEM"},
		{"certificate in the key field", chain, leafPEM, "private_key", "holds a certificate"},
		{"key not parsable", chain, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("nope")})), "private_key", "cannot be parsed"},
		{"encrypted key", chain, encrypted, "private_key", "encrypted"},
		{"two keys", chain, leafKeyPEM + otherKey, "private_key", "2 keys"},
		{"key not matching", chain, otherKey, "private_key", "does not match"},
		{"intermediate first", interPEM + leafPEM, leafKeyPEM, "private_key", "does not match"},
		{"expired", expiredCert, expiredKey, "certificate", "expired on"},
		{"four certificates", four, leafKeyPEM, "certificate", "more than 3 certificates"},
		{"certificate over 16 KiB", chain + strings.Repeat("\n", 16<<10), leafKeyPEM, "certificate", "at most 16 KiB"},
		{"key over 16 KiB", chain, leafKeyPEM + strings.Repeat("\n", 16<<10), "private_key", "at most 16 KiB"},
	} {
		_, err := ParseClientCertificate(c.cert, c.key, now)
		var ce *CertificateError
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v, want a *CertificateError", c.name, err)
			continue
		}
		if ce.Field != c.field || !strings.Contains(ce.Message, c.says) {
			t.Errorf("%s: %s %q, want %s saying %q", c.name, ce.Field, ce.Message, c.field, c.says)
		}
		if strings.Contains(ce.Message, strings.Split(leafKeyPEM, "\n")[1]) || strings.Contains(ce.Message, strings.Split(otherKey, "\n")[1]) {
			t.Errorf("%s: the message quotes the key: %q", c.name, ce.Message)
		}
	}
	// Three certificates are the limit, not over it.
	if _, err := ParseClientCertificate(leafPEM+interPEM+root.pem(), leafKeyPEM, now); err != nil {
		t.Errorf("three certificates: %v", err)
	}
}

// issueCA signs an intermediate CA certificate for key.
func (ca *testCA) issueCA(t *testing.T, cn string, key crypto.Signer) (string, *x509.Certificate) {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1) + 1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), c
}

func mustParsePEM(t *testing.T, s string) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		t.Fatal("no PEM")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
