package notify

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/incidents"
)

// A certificate that had already expired when the notice was claimed is told in the past tense.
func TestCertificateEmailOfAnExpiredCertificate(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(map[string]any{"url": "https://hooks.example.com/in", "description": "", "subject": "CN=in.example.com",
		"not_after": certificateNotAfter, "expired": true, "link": "https://hookline.example.com/subscriptions/abc"})
	m, err := compose(context.Background(), incidents.KindCertificateExpiring, raw, "Hookline")
	if err != nil {
		t.Fatal(err)
	}
	if want := "The client certificate of https://hooks.example.com/in expired on 2026-03-18"; m.Subject != want {
		t.Errorf("subject %q, want %q", m.Subject, want)
	}
	for _, s := range []string{"has expired", "It expired at 2026-03-18 10:15 UTC", "every delivery to it fails now", "Expired:"} {
		if !strings.Contains(m.Text, s) {
			t.Errorf("the text does not say %q:\n%s", s, m.Text)
		}
	}
	if strings.Contains(m.Subject+m.Text, "expires on") || strings.Contains(m.Text, "It expires at") {
		t.Errorf("an expired certificate's email says it expires:\n%s", m.Text)
	}
}

// Through the real flow: a subscription whose client certificate expires in 10 days, with its private key
// and a basic-auth password stored beside it, is told by incidents.Service.Check to every user of the
// tenant; the notifier sends those emails over SMTP, naming the endpoint, the certificate's subject and
// expiry and how to replace it, with neither the key, the certificate's PEM nor the password in them.
func TestCertificateExpiryFromTheIncidentsService(t *testing.T) {
	t.Parallel()
	pool := connect(t, ownDatabase(t))
	tenant := fresh(t, pool)
	ctx := context.Background()
	for _, email := range []string{"alice@customer.example.com", "bob@customer.example.com"} {
		if _, err := pool.Exec(ctx, "INSERT INTO users (tenant_id, email, password_hash) VALUES ($1, $2, 'x')", tenant, email); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	notAfter := now.Add(10 * 24 * time.Hour)
	const password = "basic-PASSWORD-s3cret"
	creds, _ := json.Marshal(map[string]string{"private_key": privateKeyText, "password": password})
	var sub uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO subscriptions (tenant_id, url, description, auth, credentials, tls_certificate,
			tls_certificate_subject, tls_certificate_not_after)
		VALUES ($1, 'https://hooks.example.com/in?sig=`+endpointToken+`', 'Billing', '{"type": "basic", "username": "hookline"}', $2,
			'-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n', 'CN=billing-client.example.com', $3)
		RETURNING id`, tenant, creds, notAfter).Scan(&sub); err != nil {
		t.Fatal(err)
	}
	inc := incidents.New(pool, incidents.Options{PublicURL: "https://hookline.example.com", Now: func() time.Time { return now }, Log: quietLog(t)})
	for range 2 {
		if err := inc.Check(ctx); err != nil {
			t.Fatal(err)
		}
	}
	srv := startSMTP(t, serverOpts{})
	n := New(pool, Options{SMTP: smtpFor(srv, ""), Log: quietLog(t), SendTimeout: 10 * time.Second, Brand: "Acme Hooks"})
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want one per user", len(msgs))
	}
	expiry := notAfter.Format("2006-01-02 15:04 UTC")
	for _, m := range msgs {
		p := parse(t, m.Data)
		if got, want := subjectOf(t, p), "The client certificate of Billing expires on "+notAfter.Format(time.DateOnly); got != want {
			t.Errorf("subject %q, want %q", got, want)
		}
		for _, s := range []string{"https://hooks.example.com/in?…", "CN=billing-client.example.com", "It expires at " + expiry,
			"Acme Hooks presents this client certificate", "choose Edit", "Client certificate", "https://hookline.example.com/subscriptions/" + sub.String()} {
			if !strings.Contains(p.Text, s) || !strings.Contains(p.HTML, s) {
				t.Errorf("a part does not say %q:\n%s", s, p.Text)
			}
		}
		for _, secret := range []string{"PRIVATE KEY", "MIGHAgEAMBMG", "BEGIN CERTIFICATE", "MIIBszCCAVmgAwIBAgIU", password, endpointToken} {
			if strings.Contains(string(m.Data), secret) {
				t.Errorf("the email shows %q", secret)
			}
		}
		// The brand, not Hookline (the sender's address here is the test's own configuration).
		for part, text := range map[string]string{"subject": subjectOf(t, p), "text": p.Text, "html": p.HTML} {
			if strings.Contains(text, "Hookline") {
				t.Errorf("the email's %s names Hookline: %q", part, text)
			}
		}
	}
}
