package incidents_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/subscriptions"
)

// clientCertificate is a self-signed client certificate and its key, PEM, valid until notAfter.
func clientCertificate(t *testing.T, subject string, notAfter time.Time) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: subject},
		NotBefore: notAfter.Add(-90 * 24 * time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
}

// setCertificate gives the subscription a new client certificate as the API does (Update), and checks
// that a new certificate clears the notice. The subject and expiry columns are then set to the
// certificate's own in SQL, so what the check reads is stated here, whatever parses certificates.
func (e *incidentEnv) setCertificate(subject string, notAfter time.Time) {
	e.t.Helper()
	certPEM, keyPEM := clientCertificate(e.t, subject, notAfter)
	subs := subscriptions.NewService(e.pool, e.clk.Now, true)
	if _, err := subs.Update(e.ctx, e.tn.ID, e.sub.ID, subscriptions.Input{
		ClientCertificate: &subscriptions.CertificateInput{Certificate: certPEM, PrivateKey: keyPEM}}); err != nil {
		e.t.Fatal(err)
	}
	var told *time.Time
	if err := e.pool.QueryRow(e.ctx, "SELECT certificate_expiry_notified_at FROM subscriptions WHERE id = $1", e.sub.ID).Scan(&told); err != nil || told != nil {
		e.t.Fatalf("after a new certificate the expiry notice is %v (%v), want cleared", told, err)
	}
	if _, err := e.pool.Exec(e.ctx, "UPDATE subscriptions SET tls_certificate_subject = $2, tls_certificate_not_after = $3 WHERE id = $1",
		e.sub.ID, "CN="+subject, notAfter); err != nil {
		e.t.Fatal(err)
	}
}

// certificateNotices counts the tenant's certificate emails and the operator's certificate notifications
// delivered (checked against the subscription, subject and expiry told).
func (e *incidentEnv) certificateNotices(subject string, notAfter time.Time) (emails, operator int) {
	e.t.Helper()
	emails = e.queued(incidents.KindCertificateExpiring)
	e.opRecv.mu.Lock()
	defer e.opRecv.mu.Unlock()
	for _, m := range e.opRecv.got {
		if m["type"] != incidents.EventCertificateExpiring {
			continue
		}
		d := m["data"].(map[string]any)
		if d["subject"] != "CN="+subject {
			continue // an earlier certificate's
		}
		operator++
		at, _ := time.Parse(time.RFC3339Nano, d["not_after"].(string))
		if d["tenant_id"] != e.tn.ID.String() || d["subscription_id"] != e.sub.ID.String() || d["url"] != e.url || !at.Equal(notAfter) {
			e.t.Errorf("operator notification %v: want the tenant, subscription, url and not_after %s", d, notAfter)
		}
	}
	return emails, operator
}

// A client certificate expiring in 20 days is told nothing of; 13 days before it expires the tenant's two
// users get one email each and the operator one subscription.certificate_expiring, and checks after that
// tell nothing more. A new certificate clears the notice: it is told again when that one nears its expiry.
// The email's data names the endpoint and the certificate, never its key.
func TestCertificateExpiryNotice(t *testing.T) {
	t.Parallel()
	e := newIncidentEnv(t)
	first := e.t0.Add(20 * 24 * time.Hour)
	e.setCertificate("orders-client.example.com", first)

	e.check()
	if m, o := e.certificateNotices("orders-client.example.com", first); m != 0 || o != 0 {
		t.Fatalf("20 days before expiry: %d emails, %d operator notifications; want none", m, o)
	}
	if subscriptions.CertificateExpiresSoon(first, e.clk.Now()) {
		t.Fatal("CertificateExpiresSoon 20 days before expiry")
	}

	e.clk.Set(e.t0.Add(7 * 24 * time.Hour)) // 13 days left
	if !subscriptions.CertificateExpiresSoon(first, e.clk.Now()) {
		t.Fatal("not CertificateExpiresSoon 13 days before expiry")
	}
	for range 3 {
		e.check()
		if m, o := e.certificateNotices("orders-client.example.com", first); m != 2 || o != 1 {
			t.Fatalf("13 days before expiry: %d emails, %d operator notifications; want 2 (one per user) and 1", m, o)
		}
	}
	var raw []byte
	if err := e.pool.QueryRow(e.ctx, "SELECT data FROM notifications WHERE kind = $1 AND tenant_id = $2 LIMIT 1",
		incidents.KindCertificateExpiring, e.tn.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var data struct {
		URL, Subject, Link string
		NotAfter           time.Time `json:"not_after"`
		Expired            bool
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	if data.URL != e.url || data.Subject != "CN=orders-client.example.com" || !data.NotAfter.Equal(first) || data.Expired ||
		data.Link != "https://hooks.example.com/subscriptions/"+e.sub.ID.String() {
		t.Fatalf("email data %s: want the endpoint, the certificate's subject and expiry, and the endpoint's link", raw)
	}
	if strings.Contains(string(raw), "PRIVATE KEY") || strings.Contains(string(raw), "CERTIFICATE") {
		t.Fatalf("email data %s holds PEM", raw)
	}

	// Renewed: nothing while the new one has 50 days; told again 13 days before it expires.
	e.clk.Set(e.t0.Add(10 * 24 * time.Hour))
	second := e.t0.Add(60 * 24 * time.Hour)
	e.setCertificate("orders-client-2026.example.com", second)
	e.check()
	if m, o := e.certificateNotices("orders-client-2026.example.com", second); m != 2 || o != 0 {
		t.Fatalf("a renewed certificate with 50 days left: %d emails in all, %d operator notifications of it; want the first 2 and none", m, o)
	}
	e.clk.Set(e.t0.Add(47 * 24 * time.Hour))
	e.check()
	e.check()
	if m, o := e.certificateNotices("orders-client-2026.example.com", second); m != 4 || o != 1 {
		t.Fatalf("the renewed certificate 13 days before expiry: %d emails in all, %d operator notifications of it; want 4 and 1", m, o)
	}
	if e.opRecv.bad != 0 {
		t.Errorf("%d operator notifications failed the signature check", e.opRecv.bad)
	}
}

// A certificate's notice is claimed and told in one transaction: a crash between the two leaves it
// unclaimed, with nothing queued, and the next check tells it once. A deleted endpoint's certificate is
// never told of.
func TestCertificateNoticeClaimAndTellCommitTogether(t *testing.T) {
	t.Parallel()
	e := newIncidentEnv(t)
	notAfter := e.t0.Add(3 * 24 * time.Hour)
	e.setCertificate("billing-client.example.com", notAfter)

	e.inc.SetAfterClaim(func(_ context.Context, kind string, _ int) error {
		if kind == incidents.KindCertificateExpiring {
			return errors.New("crash after the claim")
		}
		return nil
	})
	if err := e.inc.Check(e.ctx); err == nil {
		t.Fatal("the check succeeded through a crash after the claim")
	}
	e.drain()
	var told *time.Time
	if err := e.pool.QueryRow(e.ctx, "SELECT certificate_expiry_notified_at FROM subscriptions WHERE id = $1", e.sub.ID).Scan(&told); err != nil || told != nil {
		t.Fatalf("after a crash the notice is claimed at %v (%v), want unclaimed", told, err)
	}
	if m, o := e.certificateNotices("billing-client.example.com", notAfter); m != 0 || o != 0 {
		t.Fatalf("after a crash between claim and queueing: %d emails, %d operator notifications; want none", m, o)
	}

	e.inc.SetAfterClaim(nil)
	e.check()
	e.check()
	if m, o := e.certificateNotices("billing-client.example.com", notAfter); m != 2 || o != 1 {
		t.Fatalf("after the next checks: %d emails, %d operator notifications; want 2 and 1", m, o)
	}

	// Deleted, with a new certificate that expires soon (a notice cleared): never told.
	e.setCertificate("billing-client-2.example.com", e.t0.Add(24*time.Hour))
	if _, err := e.pool.Exec(e.ctx, "UPDATE subscriptions SET deleted_at = $2 WHERE id = $1", e.sub.ID, e.t0); err != nil {
		t.Fatal(err)
	}
	e.check()
	if m, o := e.certificateNotices("billing-client-2.example.com", e.t0.Add(24*time.Hour)); m != 2 || o != 0 {
		t.Fatalf("a deleted endpoint's certificate: %d emails in all, %d operator notifications of it; want the first 2 and none", m, o)
	}
}
