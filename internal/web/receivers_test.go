package web_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/server"
	"github.com/hookline/hookline/internal/subscriptions"
	"golang.org/x/net/html"
)

// The dashboard's side of receivers as enterprises run them: the endpoint form's Authentication, Client
// certificate, Payload filter and Retry schedule sections (create, edit, secrets kept, refusals beside
// their field, Test filter without script), the endpoint page's lines, the banner of certificates that
// expire soon, the delivery page's schedule note and its request as sent, masked.

// testCertificate is a client certificate issued by a test CA, in PEM: chain is the certificate then the
// CA's, key its private key (PKCS #8).
type testCertificate struct {
	chain, key, subject string
	notAfter            time.Time
	privateKey          *ecdsa.PrivateKey
}

// newTestCertificate issues a certificate for cn valid until notAfter, for key (a new one when nil).
func newTestCertificate(t *testing.T, cn string, notAfter time.Time, key *ecdsa.PrivateKey) testCertificate {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if key == nil {
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	notBefore := time.Now().Add(-time.Hour)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test CA " + cn}, NotBefore: notBefore,
		NotAfter: notAfter.Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: []string{"Acme Billing"}},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := x509.ParseCertificate(leafDER)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	chain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	return testCertificate{chain: chain, key: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
		subject: parsed.Subject.String(), notAfter: parsed.NotAfter, privateKey: key}
}

// receiverColumns are a subscription's stored receiver settings, as text, to compare before and after.
func (e *env) receiverColumns(id uuid.UUID) string {
	e.t.Helper()
	var s string
	err := e.srv.Pool.QueryRow(context.Background(), `SELECT jsonb_build_object('auth', auth, 'credentials', credentials,
		'certificate', tls_certificate, 'subject', tls_certificate_subject, 'not_after', tls_certificate_not_after,
		'filter', filter, 'retry_schedule', retry_schedule, 'headers', headers)::text FROM subscriptions WHERE id = $1`, id).Scan(&s)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// credentials are a subscription's stored credentials column, as text.
func (e *env) credentials(id uuid.UUID) string {
	e.t.Helper()
	var s string
	if err := e.srv.Pool.QueryRow(context.Background(), `SELECT credentials::text FROM subscriptions WHERE id = $1`, id).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// changedFields are the fields named by the subscription's subscription.changed entries, oldest first.
func (e *env) changedFields(id uuid.UUID) [][]string {
	e.t.Helper()
	rows, err := e.srv.Pool.Query(context.Background(), `SELECT details FROM activity
		WHERE object_type = 'subscription' AND object_id = $1 AND action = 'subscription.changed' ORDER BY at, id`, id.String())
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		var d struct {
			Fields []string `json:"fields"`
		}
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			e.t.Fatal(err)
		}
		_ = json.Unmarshal(raw, &d)
		out = append(out, d.Fields)
	}
	return out
}

// formValues are the endpoint form's fields as a browser submits them: named inputs (checkboxes and radios
// when checked), textareas and selects, not the disabled ones, not the buttons.
func formValues(t *testing.T, p *page) url.Values {
	t.Helper()
	form := one(t, p.Doc, "endpoint-form")
	v := url.Values{}
	for _, n := range findAll(form, func(n *html.Node) bool { return n.Data == "input" || n.Data == "textarea" || n.Data == "select" }) {
		name := attr(n, "name")
		if name == "" || hasAttr(n, "disabled") {
			continue
		}
		switch n.Data {
		case "textarea":
			v.Add(name, strings.TrimPrefix(rawText(n), "\n"))
		case "select":
			opts := findAll(n, tag("option"))
			chosen := ""
			for i, o := range opts {
				if i == 0 || hasAttr(o, "selected") {
					chosen = attr(o, "value")
				}
			}
			v.Add(name, chosen)
		default:
			switch attr(n, "type") {
			case "checkbox", "radio":
				if !hasAttr(n, "checked") {
					continue
				}
				if hasAttr(n, "value") {
					v.Add(name, attr(n, "value"))
				} else {
					v.Add(name, "on")
				}
			default:
				v.Add(name, attr(n, "value"))
			}
		}
	}
	return v
}

// lineText is an element's text as a reader sees it: its text nodes joined as they are, spaces collapsed
// (text puts a space between every two nodes).
func lineText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rawText is an element's text as is (a textarea's value).
func rawText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

// textareaValue is the text of the textarea with this id.
func textareaValue(p *page, id string) string {
	if n := byID(p.Doc, id); n != nil {
		return strings.TrimPrefix(rawText(n), "\n")
	}
	return "<missing>"
}

// checkedValue is the value of the checked radio of a name.
func checkedValue(p *page, name string) string {
	for _, n := range findAll(p.Doc, tag("input")) {
		if attr(n, "name") == name && hasAttr(n, "checked") {
			return attr(n, "value")
		}
	}
	return "<none>"
}

// newReceiverForm is a valid new endpoint form with no receiver settings, as the form posts it.
func newReceiverForm(u string) url.Values {
	return url.Values{"url": {u}, "description": {"Receiver"}, "auth_type": {""}, "auth_client_auth": {"basic"},
		"filter": {""}, "retry_schedule_kind": {"standard"}, "retry_schedule": {""}}
}

// createdID is the subscription a create's 303 leads to.
func createdID(t *testing.T, r *page) uuid.UUID {
	t.Helper()
	if r.Status != http.StatusSeeOther {
		t.Fatalf("create: %d, want 303: %s", r.Status, r.text())
	}
	id, err := uuid.Parse(strings.TrimPrefix(r.Header.Get("Location"), "/subscriptions/"))
	if err != nil {
		t.Fatalf("create leads to %q", r.Header.Get("Location"))
	}
	return id
}

// TestEndpointFormAuthentication: basic auth and OAuth 2 client credentials are set from the form; the
// page names them without the secret; the edit form never shows a secret and says one is set, an empty
// secret keeps it, a new type needs its own, None removes it; refusals stand beside the section.
func TestEndpointFormAuthentication(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("form auth")
	c := e.client()
	c.login(tn.Email)
	nc := noRedirects(c)

	// Refusals beside Authentication, nothing saved.
	for _, tc := range []struct {
		what   string
		fields map[string]string
		saying string
	}{
		{"basic auth without a user name", map[string]string{"auth_type": "basic", "auth_password": "pw-typed-1"}, "Enter the user name"},
		{"basic auth without a password", map[string]string{"auth_type": "basic", "auth_username": "billing"}, "Enter the password"},
		{"OAuth 2 without a token URL", map[string]string{"auth_type": "oauth2_client_credentials", "auth_client_id": "id", "auth_client_secret": "cs-typed-1"}, "token URL"},
		{"OAuth 2 without a client secret", map[string]string{"auth_type": "oauth2_client_credentials", "auth_token_url": "https://auth.example.com/token", "auth_client_id": "id"}, "Enter the client secret"},
	} {
		form := newReceiverForm(e.recv.URL + "/auth/refused")
		for k, v := range tc.fields {
			form.Set(k, v)
		}
		p := c.post("/subscriptions", form)
		wantFieldError(t, tc.what, p, "auth-section", "auth-error", tc.saying)
		if checkedValue(p, "auth_type") != tc.fields["auth_type"] || inputValue(p, "auth-username") != tc.fields["auth_username"] {
			t.Errorf("%s: the section typed is not shown again (type %q, user %q)", tc.what, checkedValue(p, "auth_type"), inputValue(p, "auth-username"))
		}
		if strings.Contains(p.Body, "typed-1") {
			t.Errorf("%s: a secret typed is rendered back", tc.what)
		}
		if tc.fields["auth_password"] != "" && len(byTestID(p.Doc, "secrets-note")) != 1 {
			t.Errorf("%s: the page does not say the password must be typed again", tc.what)
		}
	}
	if n := e.subscriptionCount(tn); n != 0 {
		t.Fatalf("%d subscriptions saved by refused forms", n)
	}

	// Basic auth.
	form := newReceiverForm(e.recv.URL + "/auth/basic")
	form.Set("auth_type", "basic")
	form.Set("auth_username", "billing")
	form.Set("auth_password", "s3cret-basic-pw")
	id := createdID(t, nc.post("/subscriptions", form))
	got, err := e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if err != nil || got.Auth == nil || got.Auth.Type != "basic" || got.Auth.Username != "billing" || got.Auth.PasswordSet == nil || !*got.Auth.PasswordSet {
		t.Fatalf("saved auth %+v (%v)", got.Auth, err)
	}
	show := c.get("/subscriptions/" + id.String())
	if line := text(one(t, show.Doc, "auth-line")); line != "Basic auth as billing, password set" {
		t.Errorf("the page says %q", line)
	}
	edit := c.get("/subscriptions/" + id.String() + "/edit")
	if checkedValue(edit, "auth_type") != "basic" || inputValue(edit, "auth-username") != "billing" || inputValue(edit, "auth-password") != "" {
		t.Errorf("edit form: type %q user %q password %q", checkedValue(edit, "auth_type"), inputValue(edit, "auth-username"), inputValue(edit, "auth-password"))
	}
	if hint := text(one(t, edit.Doc, "password-set")); !strings.Contains(hint, "A password is set — leave empty to keep it") {
		t.Errorf("the password's hint %q", hint)
	}
	for _, p := range []*page{show, edit} {
		if strings.Contains(p.Body, "s3cret-basic-pw") {
			t.Errorf("%s shows the password", p.URL.Path)
		}
	}

	// A new user name, the password left empty: kept.
	credsBefore := e.credentials(id)
	v := formValues(t, edit)
	v.Set("auth_username", "billing-2")
	if r := nc.post("/subscriptions/"+id.String(), v); r.Status != http.StatusSeeOther {
		t.Fatalf("save a new user name: %d %s", r.Status, r.text())
	}
	if after := e.credentials(id); after != credsBefore {
		t.Errorf("the password was not kept: credentials %s, before %s", after, credsBefore)
	}
	got, _ = e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if got.Auth.Username != "billing-2" || !*got.Auth.PasswordSet {
		t.Errorf("after the edit: %+v", got.Auth)
	}

	// OAuth 2 without its client secret is refused beside the section; nothing changes.
	before := e.receiverColumns(id)
	v = formValues(t, c.get("/subscriptions/"+id.String()+"/edit"))
	v.Set("auth_type", "oauth2_client_credentials")
	v.Set("auth_token_url", "https://auth.example.com/oauth/token")
	v.Set("auth_client_id", "hookline")
	wantFieldError(t, "a new type without its secret", c.post("/subscriptions/"+id.String(), v), "auth-section", "auth-error", "Enter the client secret")
	if after := e.receiverColumns(id); after != before {
		t.Errorf("a refused edit changed the settings:\n%s\n%s", before, after)
	}
	v.Set("auth_client_secret", "s3cret-oauth-cs")
	v.Set("auth_scopes", "  webhooks:write   events:read ")
	v.Set("auth_audience", "https://api.example.com")
	v.Set("auth_client_auth", "body")
	if r := nc.post("/subscriptions/"+id.String(), v); r.Status != http.StatusSeeOther {
		t.Fatalf("save OAuth 2: %d %s", r.Status, r.text())
	}
	got, _ = e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if a := got.Auth; a == nil || a.Type != "oauth2_client_credentials" || a.TokenURL != "https://auth.example.com/oauth/token" || a.ClientID != "hookline" ||
		!slices.Equal(a.Scopes, []string{"webhooks:write", "events:read"}) || a.Audience != "https://api.example.com" || a.ClientAuth != "body" ||
		a.ClientSecretSet == nil || !*a.ClientSecretSet || a.PasswordSet != nil {
		t.Fatalf("saved OAuth 2 %+v", a)
	}
	show = c.get("/subscriptions/" + id.String())
	want := "OAuth 2 client credentials via auth.example.com, client hookline, scopes webhooks:write events:read, audience https://api.example.com"
	if line := text(one(t, show.Doc, "auth-line")); line != want {
		t.Errorf("the page says %q, want %q", line, want)
	}
	edit = c.get("/subscriptions/" + id.String() + "/edit")
	if hint := text(one(t, edit.Doc, "client-secret-set")); !strings.Contains(hint, "A client secret is set — leave empty to keep it") {
		t.Errorf("the client secret's hint %q", hint)
	}
	if len(byTestID(edit.Doc, "password-set")) != 0 {
		t.Error("the form still says a password is set")
	}
	if inputValue(edit, "auth-scopes") != "webhooks:write events:read" || checkedValue(edit, "auth_client_auth") != "body" {
		t.Errorf("edit form: scopes %q, client auth %q", inputValue(edit, "auth-scopes"), checkedValue(edit, "auth_client_auth"))
	}
	for _, p := range []*page{show, edit} {
		if strings.Contains(p.Body, "s3cret") {
			t.Errorf("%s shows a secret", p.URL.Path)
		}
	}

	// None removes it.
	v = formValues(t, edit)
	v.Set("auth_type", "")
	if r := nc.post("/subscriptions/"+id.String(), v); r.Status != http.StatusSeeOther {
		t.Fatalf("save None: %d %s", r.Status, r.text())
	}
	got, _ = e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if got.Auth != nil {
		t.Errorf("auth after None: %+v", got.Auth)
	}
	if line := text(one(t, c.get("/subscriptions/"+id.String()).Doc, "auth-line")); line != "none (the signature alone)" {
		t.Errorf("the page says %q", line)
	}
}

func mustCompact(t *testing.T, raw []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}

// TestEndpointFormClientCertificate: a certificate and its key are saved from the form; the page and the
// edit form name its subject and expiry, never the key; an edit that leaves the fields empty keeps them,
// a renewed certificate needs no key, a key that is not the certificate's is refused beside the key, and
// Remove removes it.
func TestEndpointFormClientCertificate(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("form certificate")
	c := e.client()
	c.login(tn.Email)
	nc := noRedirects(c)
	now := time.Now()
	first := newTestCertificate(t, "billing.example.com", now.Add(95*24*time.Hour+time.Hour), nil)

	// The form's own refusals, beside the certificate: a key without its certificate.
	form := newReceiverForm(e.recv.URL + "/cert/one")
	form.Set("tls_private_key", first.key)
	p := c.post("/subscriptions", form)
	wantFieldError(t, "a key without a certificate", p, "certificate-pem", "certificate-pem-error", "Paste the certificate")
	keyBody := strings.Split(strings.TrimSpace(first.key), "\n")[1]
	if strings.Contains(p.Body, keyBody) || textareaValue(p, "certificate-key") != "" {
		t.Error("the key typed is rendered back")
	}
	if note := text(one(t, p.Doc, "secrets-note")); !strings.Contains(note, "private key") {
		t.Errorf("the secrets note %q", note)
	}
	// A certificate whose key is another's, beside the key.
	other := newTestCertificate(t, "other.example.com", now.Add(30*24*time.Hour), nil)
	form = newReceiverForm(e.recv.URL + "/cert/one")
	form.Set("tls_certificate", first.chain)
	form.Set("tls_private_key", other.key)
	p = c.post("/subscriptions", form)
	wantFieldError(t, "a key that is not the certificate's", p, "certificate-key", "certificate-key-error", "The private key does not match")
	if textareaValue(p, "certificate-pem") != strings.TrimSpace(first.chain) {
		t.Errorf("the certificate typed is not shown again")
	}
	if n := e.subscriptionCount(tn); n != 0 {
		t.Fatalf("%d subscriptions saved by refused forms", n)
	}

	form.Set("tls_private_key", first.key)
	id := createdID(t, nc.post("/subscriptions", form))
	got, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if got.TLSClientCertificate == nil || got.TLSClientCertificate.Subject != first.subject || !got.TLSClientCertificate.NotAfter.Equal(first.notAfter) {
		t.Fatalf("saved certificate %+v, want %s until %s", got.TLSClientCertificate, first.subject, first.notAfter)
	}
	wantLine := first.subject + ", expires " + first.notAfter.UTC().Format("2 Jan 2006") + " (in 95 days)"
	show := c.get("/subscriptions/" + id.String())
	if line := lineText(one(t, show.Doc, "certificate-line")); line != wantLine {
		t.Errorf("the page says %q, want %q", line, wantLine)
	}
	edit := c.get("/subscriptions/" + id.String() + "/edit")
	if cur := lineText(one(t, edit.Doc, "current-certificate")); cur != "Current certificate: "+wantLine+"." {
		t.Errorf("the form says %q", cur)
	}
	for _, p := range []*page{show, edit} {
		if strings.Contains(p.Body, keyBody) {
			t.Errorf("%s shows the private key", p.URL.Path)
		}
	}
	if textareaValue(edit, "certificate-key") != "" || textareaValue(edit, "certificate-pem") != "" {
		t.Error("the edit form fills the certificate fields")
	}

	// Left empty: kept, and no change recorded.
	before := e.receiverColumns(id)
	if r := nc.post("/subscriptions/"+id.String(), formValues(t, edit)); r.Status != http.StatusSeeOther {
		t.Fatalf("save unchanged: %d %s", r.Status, r.text())
	}
	if after := e.receiverColumns(id); after != before {
		t.Errorf("an edit that left the certificate alone changed it:\n%s\n%s", before, after)
	}

	// Renewed for the same key: the certificate alone.
	renewed := newTestCertificate(t, "billing.example.com", now.Add(400*24*time.Hour), first.privateKey)
	v := formValues(t, edit)
	v.Set("tls_certificate", renewed.chain)
	if r := nc.post("/subscriptions/"+id.String(), v); r.Status != http.StatusSeeOther {
		t.Fatalf("save the renewed certificate: %d %s", r.Status, r.text())
	}
	got, _ = e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if got.TLSClientCertificate == nil || !got.TLSClientCertificate.NotAfter.Equal(renewed.notAfter) {
		t.Errorf("after renewing: %+v, want until %s", got.TLSClientCertificate, renewed.notAfter)
	}

	// Remove and paste at once: refused; Remove alone removes it.
	v = formValues(t, c.get("/subscriptions/"+id.String()+"/edit"))
	v.Set("remove_client_certificate", "1")
	v.Set("tls_certificate", other.chain)
	wantFieldError(t, "remove and replace", c.post("/subscriptions/"+id.String(), v), "certificate-pem", "certificate-pem-error", "not both")
	v.Del("tls_certificate")
	if r := nc.post("/subscriptions/"+id.String(), v); r.Status != http.StatusSeeOther {
		t.Fatalf("remove: %d %s", r.Status, r.text())
	}
	got, _ = e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if got.TLSClientCertificate != nil {
		t.Errorf("after Remove: %+v", got.TLSClientCertificate)
	}
	if line := text(one(t, c.get("/subscriptions/"+id.String()).Doc, "certificate-line")); line != "none" {
		t.Errorf("the page says %q", line)
	}
	if n := len(byTestID(c.get("/subscriptions/"+id.String()+"/edit").Doc, "remove-certificate")); n != 0 {
		t.Error("the form offers to remove a certificate there is not")
	}
}

// TestEndpointFormFilterAndSchedule: a filter and custom delays are saved from the form and told on the
// endpoint page; an invalid filter or schedule is refused beside it with the JSON pointer; an edit leaving
// them keeps them; emptied, they are removed (the standard schedule, told from the server's policy).
func TestEndpointFormFilterAndSchedule(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("form filter")
	c := e.client()
	c.login(tn.Email)
	nc := noRedirects(c)

	for _, tc := range []struct {
		what, field, value, container, errID, saying string
	}{
		{"an unknown operator", "filter", `{"data": {"amount": {"$bogus": 1}}}`, "filter-json", "filter-json-error", "/data/amount/$bogus"},
		{"a filter that is not JSON", "filter", `{"data": `, "filter-json", "filter-json-error", "This filter cannot be used"},
		{"a filter that is an array", "filter", `[1, 2]`, "filter-json", "filter-json-error", "This filter cannot be used"},
		{"a delay of 0s", "retry_schedule", "30s, 0s", "schedule-delays", "schedule-delays-error", "out of range"},
		{"a delay of 2 days", "retry_schedule", "48h", "schedule-delays", "schedule-delays-error", "out of range"},
		{"a delay that is no duration", "retry_schedule", "soon", "schedule-delays", "schedule-delays-error", `"soon" is not a delay`},
		{"no delays", "retry_schedule", " , ", "schedule-delays", "schedule-delays-error", "Enter 1 to 30 delays"},
		{"31 delays", "retry_schedule", strings.Repeat("1m, ", 31), "schedule-delays", "schedule-delays-error", "Enter 1 to 30 delays"},
	} {
		form := newReceiverForm(e.recv.URL + "/filter/refused")
		form.Set(tc.field, tc.value)
		if tc.field == "retry_schedule" {
			form.Set("retry_schedule_kind", "custom")
		}
		p := c.post("/subscriptions", form)
		wantFieldError(t, tc.what, p, tc.container, tc.errID, tc.saying)
		if tc.field == "filter" && textareaValue(p, "filter-json") != strings.TrimSpace(tc.value) {
			t.Errorf("%s: the filter typed is not shown again: %q", tc.what, textareaValue(p, "filter-json"))
		}
		if tc.field == "retry_schedule" && (inputValue(p, "schedule-delays") != strings.TrimSpace(tc.value) || checkedValue(p, "retry_schedule_kind") != "custom") {
			t.Errorf("%s: the delays typed are not shown again: %q", tc.what, inputValue(p, "schedule-delays"))
		}
	}
	if n := e.subscriptionCount(tn); n != 0 {
		t.Fatalf("%d subscriptions saved by refused forms", n)
	}

	form := newReceiverForm(e.recv.URL + "/filter/one")
	form.Set("filter", `{"type": "invoice.paid", "data": {"amount": {"$gte": 100}}}`)
	form.Set("retry_schedule_kind", "custom")
	form.Set("retry_schedule", "30s, 5m,1h")
	id := createdID(t, nc.post("/subscriptions", form))
	got, _ := e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if !slices.Equal(got.RetrySchedule, []string{"30s", "5m", "1h"}) || string(mustCompact(t, got.Filter)) != `{"data":{"amount":{"$gte":100}},"type":"invoice.paid"}` {
		t.Fatalf("saved filter %s, schedule %v", got.Filter, got.RetrySchedule)
	}
	show := c.get("/subscriptions/" + id.String())
	if line := text(one(t, show.Doc, "schedule-line")); line != "Custom: 30s → 5m → 1h, then the delivery expires." {
		t.Errorf("the page says %q", line)
	}
	pre := one(t, show.Doc, "filter-json")
	if pre.Data != "pre" || !strings.Contains(rawText(pre), "\n  \"data\": {\n    \"amount\": {\n      \"$gte\": 100") {
		t.Errorf("the filter is shown as %s %q, want indented JSON in a <pre>", pre.Data, rawText(pre))
	}
	edit := c.get("/subscriptions/" + id.String() + "/edit")
	if inputValue(edit, "schedule-delays") != "30s, 5m, 1h" || checkedValue(edit, "retry_schedule_kind") != "custom" {
		t.Errorf("edit form: delays %q (%s)", inputValue(edit, "schedule-delays"), checkedValue(edit, "retry_schedule_kind"))
	}
	if !sameJSONText(textareaValue(edit, "filter-json"), string(got.Filter)) {
		t.Errorf("edit form: filter %q", textareaValue(edit, "filter-json"))
	}

	// Saved as shown: nothing changes, nothing is recorded.
	before, changes := e.receiverColumns(id), len(e.changedFields(id))
	if r := nc.post("/subscriptions/"+id.String(), formValues(t, edit)); r.Status != http.StatusSeeOther {
		t.Fatalf("save unchanged: %d %s", r.Status, r.text())
	}
	if after := e.receiverColumns(id); after != before {
		t.Errorf("an unchanged save changed the settings:\n%s\n%s", before, after)
	}
	if n := len(e.changedFields(id)); n != changes {
		t.Errorf("an unchanged save recorded a change: %v", e.changedFields(id))
	}

	// A refused filter on edit changes nothing.
	v := formValues(t, edit)
	v.Set("filter", `{"data": {"$or": 5}}`)
	wantFieldError(t, "an edit with a bad $or", c.post("/subscriptions/"+id.String(), v), "filter-json", "filter-json-error", "/data/$or")
	if after := e.receiverColumns(id); after != before {
		t.Errorf("a refused edit changed the settings")
	}

	// Emptied: removed, and the page tells the standard schedule from the server's policy.
	v = formValues(t, edit)
	v.Set("filter", "")
	v.Set("retry_schedule_kind", "standard")
	if r := nc.post("/subscriptions/"+id.String(), v); r.Status != http.StatusSeeOther {
		t.Fatalf("remove: %d %s", r.Status, r.text())
	}
	got, _ = e.srv.Subscriptions.Get(context.Background(), tn.ID, id)
	if got.Filter != nil || got.RetrySchedule != nil {
		t.Errorf("after emptying: filter %s, schedule %v", got.Filter, got.RetrySchedule)
	}
	if fields := e.changedFields(id); len(fields) == 0 || !slices.Equal(fields[len(fields)-1], []string{"filter", "retry_schedule"}) {
		t.Errorf("recorded changes %v, want filter and retry_schedule last", fields)
	}
	show = c.get("/subscriptions/" + id.String())
	// The test servers' policy (setupWith): 3 attempts, 100 ms doubling up to 300 ms.
	want := "Standard: up to 3 attempts in all, the first retry after about 100 milliseconds, each wait doubling up to 300 milliseconds"
	if line := text(one(t, show.Doc, "schedule-line")); !strings.HasPrefix(line, want) {
		t.Errorf("the page says %q, want it to start %q", line, want)
	}
	if line := text(one(t, show.Doc, "filter-line")); line != "none: every event of its types" {
		t.Errorf("the page says %q", line)
	}
	edit = c.get("/subscriptions/" + id.String() + "/edit")
	if s := text(one(t, edit.Doc, "standard-schedule")); !strings.HasPrefix(s, "Up to 3 attempts in all") {
		t.Errorf("the form tells the standard schedule as %q", s)
	}
}

func sameJSONText(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestEndpointFormTestFilter: Test filter (a submit button posting the whole form elsewhere, so it works
// without script) shows the same form again with every value typed but the secrets, and the result beside
// the filter: against a catalogue type's example or a pasted payload, and a refusal with its pointer.
// Nothing is saved.
func TestEndpointFormTestFilter(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("filter test")
	types := e.seedCatalogue("filtertest")
	c := e.client()
	c.login(tn.Email)

	p := c.get("/subscriptions/new")
	button := one(t, p.Doc, "test-filter")
	if attr(button, "type") != "submit" || attr(button, "formaction") != "/subscriptions/filter-test" || enclosingForm(button) != one(t, p.Doc, "endpoint-form") {
		t.Fatalf("Test filter is %s type=%q formaction=%q", button.Data, attr(button, "type"), attr(button, "formaction"))
	}
	// Enter in a field saves, not tests: the form's first submit button is a hidden Save.
	if first := findAll(one(t, p.Doc, "endpoint-form"), func(n *html.Node) bool { return n.Data == "button" })[0]; attr(first, "data-testid") != "default-submit" || attr(first, "formaction") != "" {
		t.Errorf("the form's first button is %q", attr(first, "data-testid"))
	}
	// The catalogue's types with an example are offered; one without is not, nor an archived one.
	offered := map[string]bool{}
	for _, o := range findAll(one(t, p.Doc, "filter-test-type"), tag("option")) {
		offered[attr(o, "value")] = true
	}
	if !offered[types.placed] || !offered[types.slashed] || offered[types.bare] || offered[types.gone] {
		t.Errorf("offered %v: want %s and %s, not %s (no example) nor %s (archived)", offered, types.placed, types.slashed, types.bare, types.gone)
	}

	form := newReceiverForm(e.recv.URL + "/filtertest/new")
	form.Set("description", "Kept description")
	form.Set("auth_type", "basic")
	form.Set("auth_username", "kept-user")
	form.Set("auth_password", "never-echoed-pw")
	form.Set("header_name", "X-Api-Key")
	form.Set("header_value", "never-echoed-header")
	form.Set("retry_schedule_kind", "custom")
	form.Set("retry_schedule", "10s, 1m")
	form.Set("filter", `{"data": {"status": "placed"}}`)
	form.Set("filter_test_type", types.placed)
	r := c.post("/subscriptions/filter-test", form)
	if r.Status != http.StatusOK {
		t.Fatalf("Test filter: %d", r.Status)
	}
	result := one(t, r.Doc, "filter-test-result")
	if attr(result, "data-result") != "match" || !strings.HasPrefix(text(result), "Matches: the example of "+types.placed) {
		t.Errorf("result %s %q", attr(result, "data-result"), text(result))
	}
	if !within(result, one(t, r.Doc, "filter-section")) {
		t.Error("the result is not beside the filter")
	}
	kept := map[string][2]string{
		"url": {inputValue(r, "endpoint-url"), e.recv.URL + "/filtertest/new"}, "description": {inputValue(r, "endpoint-description"), "Kept description"},
		"auth type": {checkedValue(r, "auth_type"), "basic"}, "user": {inputValue(r, "auth-username"), "kept-user"},
		"schedule": {inputValue(r, "schedule-delays"), "10s, 1m"}, "filter": {textareaValue(r, "filter-json"), `{"data": {"status": "placed"}}`},
		"header": {attr(byTestID(r.Doc, "header-name")[0], "value"), "X-Api-Key"},
	}
	for what, v := range kept {
		if v[0] != v[1] {
			t.Errorf("the %s typed is shown as %q, want %q", what, v[0], v[1])
		}
	}
	for _, secret := range []string{"never-echoed-pw", "never-echoed-header"} {
		if strings.Contains(r.Body, secret) {
			t.Errorf("the page renders %q back", secret)
		}
	}
	if note := text(one(t, r.Doc, "secrets-note")); !strings.Contains(note, "password") {
		t.Errorf("secrets note %q", note)
	}
	if len(byTestID(r.Doc, "headers-note")) != 1 {
		t.Error("no note that the header values must be typed again")
	}

	// A pasted payload that does not match; then a refused filter, with its pointer.
	form.Set("filter_test_type", "")
	form.Set("filter_test_event_type", "order.placed")
	form.Set("filter_test_payload", `{"status": "cancelled"}`)
	result = one(t, c.post("/subscriptions/filter-test", form).Doc, "filter-test-result")
	if attr(result, "data-result") != "miss" || !strings.HasPrefix(text(result), "Does not match: the pasted order.placed payload would not be sent") {
		t.Errorf("pasted payload: %s %q", attr(result, "data-result"), text(result))
	}
	form.Set("filter", `{"data": {"status": {"$in": {"placed": true}}}}`)
	result = one(t, c.post("/subscriptions/filter-test", form).Doc, "filter-test-result")
	if attr(result, "data-result") != "error" || !strings.Contains(text(result), "/data/status/$in") {
		t.Errorf("refused filter: %s %q", attr(result, "data-result"), text(result))
	}
	form.Set("filter", `{"data": {"status": "placed"}}`)
	form.Set("filter_test_payload", `[1]`)
	result = one(t, c.post("/subscriptions/filter-test", form).Doc, "filter-test-result")
	if attr(result, "data-result") != "error" || !strings.Contains(text(result), "JSON object") {
		t.Errorf("a payload that is no object: %s %q", attr(result, "data-result"), text(result))
	}
	if n := e.subscriptionCount(tn); n != 0 {
		t.Errorf("Test filter saved %d subscriptions", n)
	}

	// On an endpoint's form: its own route, the stored secret still said to be set, nothing saved.
	sub := e.newSubscription(tn, "/filtertest/edit", "Filtered")
	pw := "stored-pw"
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, sub.ID, subscriptions.Input{Auth: &subscriptions.AuthInput{Type: "basic", Username: "u", Password: pw}}); err != nil {
		t.Fatal(err)
	}
	before := e.receiverColumns(sub.ID)
	edit := c.get("/subscriptions/" + sub.ID.String() + "/edit")
	if got := attr(one(t, edit.Doc, "test-filter"), "formaction"); got != "/subscriptions/"+sub.ID.String()+"/filter-test" {
		t.Errorf("Test filter of an endpoint's form posts to %q", got)
	}
	v := formValues(t, edit)
	v.Set("filter", `{"type": "`+types.slashed+`"}`)
	v.Set("filter_test_type", types.slashed)
	r = c.post("/subscriptions/"+sub.ID.String()+"/filter-test", v)
	if r.Status != http.StatusOK || attr(one(t, r.Doc, "filter-test-result"), "data-result") != "match" {
		t.Fatalf("edit form's Test filter: %d %q", r.Status, text(one(t, r.Doc, "filter-test-result")))
	}
	if len(byTestID(r.Doc, "password-set")) != 1 {
		t.Error("the form shown again no longer says the password is set")
	}
	if after := e.receiverColumns(sub.ID); after != before {
		t.Error("Test filter changed the endpoint")
	}
}

// TestEditLeavesReceiverSectionsAlone: an endpoint with every receiver setting, its form saved as shown
// (secrets empty, certificate fields empty), keeps all of them, and no change is recorded.
func TestEditLeavesReceiverSectionsAlone(t *testing.T) {
	t.Parallel()
	e := setup(t, httpOnly, nil)
	tn := e.newTenant("edit leaves alone")
	s := e.newSubscription(tn, "/alone", "Everything set")
	cert := newTestCertificate(t, "alone.example.com", time.Now().Add(200*24*time.Hour), nil)
	sched := []string{"10s", "1m30s", "2h"}
	headers := map[string]string{"X-Api-Key": "k"}
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, s.ID, subscriptions.Input{
		Headers: &headers,
		Auth: &subscriptions.AuthInput{Type: "oauth2_client_credentials", TokenURL: "https://auth.example.com/token", ClientID: "c",
			ClientSecret: "cs", Scopes: []string{"a", "b"}, Audience: "aud", ClientAuth: "body"},
		ClientCertificate: &subscriptions.CertificateInput{Certificate: cert.chain, PrivateKey: cert.key},
		Filter:            json.RawMessage(`{"data": {"n": {"$gt": 1}}, "type": {"$startsWith": "order."}}`),
		RetrySchedule:     &sched,
	}); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	before, changes := e.receiverColumns(s.ID), len(e.changedFields(s.ID))
	r := noRedirects(c).post("/subscriptions/"+s.ID.String(), formValues(t, c.get("/subscriptions/"+s.ID.String()+"/edit")))
	if r.Status != http.StatusSeeOther {
		t.Fatalf("save as shown: %d %s", r.Status, r.text())
	}
	if after := e.receiverColumns(s.ID); after != before {
		t.Errorf("saving the form as shown changed the settings:\n%s\n%s", before, after)
	}
	if got := e.changedFields(s.ID); len(got) != changes {
		t.Errorf("saving the form as shown recorded %v", got[changes:])
	}
	// A form from before these sections (none of their fields posted) leaves them alone too.
	old := url.Values{"url": {s.URL}, "description": {"Everything set"}, "header_name": {"X-Api-Key"}, "header_value": {""}}
	if r := noRedirects(c).post("/subscriptions/"+s.ID.String(), old); r.Status != http.StatusSeeOther {
		t.Fatalf("save without the sections: %d %s", r.Status, r.text())
	}
	if after := e.receiverColumns(s.ID); after != before {
		t.Errorf("a post without the sections changed them:\n%s\n%s", before, after)
	}
}

// TestCertificateExpiryBanner: on a clock the test moves, the tenant's pages show one banner naming the
// endpoint and the date once its client certificate expires within 14 days, linking to its form; then
// that it has expired. Another tenant sees none.
func TestCertificateExpiryBanner(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Now()}
	e := setupWith(t, httpOnly, nil, server.Options{Now: clock.Now})
	tn := e.newTenant("cert banner")
	other := e.newTenant("cert banner other")
	s := e.newSubscription(tn, "/banner", "Billing mTLS")
	e.newSubscription(tn, "/banner/none", "No certificate")
	// An hour past the 30th day: certificates keep whole seconds, and 13 days less a fraction is 12 days.
	cert := newTestCertificate(t, "banner.example.com", clock.Now().Add(30*24*time.Hour+time.Hour), nil)
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, s.ID, subscriptions.Input{
		ClientCertificate: &subscriptions.CertificateInput{Certificate: cert.chain, PrivateKey: cert.key},
	}); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	o := e.client()
	o.login(other.Email)
	pages := []string{"/", "/deliveries", "/activity", "/subscriptions/" + s.ID.String(), "/subscriptions/new"}
	for _, path := range pages {
		if n := len(byTestID(c.get(path).Doc, "certificate-banner")); n != 0 {
			t.Errorf("%s 30 days before: %d banners", path, n)
		}
	}

	clock.Add(17 * 24 * time.Hour) // 13 days left
	date := cert.notAfter.UTC().Format("2 Jan 2006")
	for _, path := range pages {
		p := c.get(path)
		banner := one(t, p.Doc, "certificate-banner")
		lines := byTestID(banner, "certificate-banner-line")
		if len(lines) != 1 {
			t.Fatalf("%s: %d lines in the banner", path, len(lines))
		}
		want := "The client certificate of your endpoint Billing mTLS expires " + date + " (in 13 days). Upload a renewed certificate before then."
		if got := text(lines[0]); got != want {
			t.Errorf("%s: the banner says %q, want %q", path, got, want)
		}
		if a := findAll(lines[0], tag("a")); len(a) != 1 || attr(a[0], "href") != "/subscriptions/"+s.ID.String()+"/edit" {
			t.Errorf("%s: the banner links %v", path, a)
		}
		if attr(banner, "role") != "status" {
			t.Errorf("%s: the banner's role %q", path, attr(banner, "role"))
		}
	}
	show := c.get("/subscriptions/" + s.ID.String())
	if line := one(t, show.Doc, "certificate-line"); len(findAll(line, func(n *html.Node) bool { return attr(n, "class") == "cert-expiry-soon" })) != 1 {
		t.Errorf("the endpoint page does not stress the expiry: %q", text(line))
	}
	if n := len(byTestID(o.get("/").Doc, "certificate-banner")); n != 0 {
		t.Errorf("another tenant sees %d banners", n)
	}

	clock.Add(14 * 24 * time.Hour) // a day past
	line := text(one(t, c.get("/").Doc, "certificate-banner-line"))
	if want := "The client certificate of your endpoint Billing mTLS expired on " + date + "."; !strings.HasPrefix(line, want) || !strings.Contains(line, "refuses our deliveries") {
		t.Errorf("after expiry the banner says %q", line)
	}
	if got := lineText(one(t, c.get("/subscriptions/"+s.ID.String()).Doc, "certificate-line")); got != cert.subject+", expired on "+date {
		t.Errorf("after expiry the page says %q", got)
	}

	// A renewed certificate ends the banner.
	renewed := newTestCertificate(t, "banner.example.com", clock.Now().Add(90*24*time.Hour), cert.privateKey)
	v := formValues(t, c.get("/subscriptions/"+s.ID.String()+"/edit"))
	v.Set("tls_certificate", renewed.chain)
	if r := noRedirects(c).post("/subscriptions/"+s.ID.String(), v); r.Status != http.StatusSeeOther {
		t.Fatalf("renew: %d %s", r.Status, r.text())
	}
	if n := len(byTestID(c.get("/").Doc, "certificate-banner")); n != 0 {
		t.Errorf("after renewing: %d banners", n)
	}
}

// TestDeliveryFollowsEndpointSchedule: a failing delivery of an endpoint with its own delays says where
// its next attempt is on that schedule; one on the standard schedule says nothing of it.
func TestDeliveryFollowsEndpointSchedule(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("delivery schedule")
	custom := e.newSubscription(tn, "/flaky/custom-schedule", "Own schedule")
	sched := []string{"1h", "2h", "3h"}
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, custom.ID, subscriptions.Input{RetrySchedule: &sched}); err != nil {
		t.Fatal(err)
	}
	id := e.publishTo(tn, custom.ID, "order.paid", map[string]any{"n": 1})
	eventually(t, 60*time.Second, 25*time.Millisecond, func() bool {
		got, err := e.srv.Deliveries.Get(context.Background(), tn.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return got.State == delivery.Pending && got.TotalAttempts == 1
	}, func() string { return "the delivery's first attempt did not fail" })
	c := e.client()
	c.login(tn.Email)
	p := c.get("/deliveries/" + id.String())
	next := text(one(t, p.Doc, "next-attempt"))
	if !regexp.MustCompile(`^in (\d+ min|1 h) \(attempt 2 of 4 on this endpoint's schedule\)$`).MatchString(next) {
		t.Errorf("next attempt %q", next)
	}

	// On the standard schedule: no note.
	standard := e.newSubscription(tn, "/flaky/standard-schedule", "Standard")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, standard.ID); err != nil {
		t.Fatal(err)
	}
	waiting := e.publishTo(tn, standard.ID, "order.paid", map[string]any{"n": 2})
	if n := len(byTestID(c.get("/deliveries/"+waiting.String()).Doc, "schedule-note")); n != 0 {
		t.Errorf("a delivery on the standard schedule has %d schedule notes", n)
	}
}

// TestRequestAsSentMasksCredentials: a delivery to an endpoint with basic auth and a custom header sends
// them, and its page shows the request with authorization: Basic •••• and the header's value masked, never
// the credentials; before it is sent, the request to be sent says the same.
func TestRequestAsSentMasksCredentials(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("masked request")
	s := e.newSubscription(tn, "/good/masked", "Masked")
	headers := map[string]string{"X-Api-Key": "header-value-never-shown"}
	if _, err := e.srv.Subscriptions.Update(setupCtx(), tn.ID, s.ID, subscriptions.Input{
		Headers: &headers, Auth: &subscriptions.AuthInput{Type: "basic", Username: "billing", Password: "password-never-shown"},
	}); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	wantMasked := func(what string, p *page) {
		t.Helper()
		rows := map[string]string{}
		for _, tr := range findAll(one(t, p.Doc, "headers"), tag("tr")) {
			if th := findAll(tr, tag("th")); len(th) == 1 {
				rows[text(th[0])] = text(findAll(tr, tag("td"))[0])
			}
		}
		if rows["authorization"] != "Basic ••••" || rows["x-api-key"] != "••••" {
			t.Errorf("%s: headers shown %v, want authorization: Basic •••• and x-api-key: ••••", what, rows)
		}
		basic := base64.StdEncoding.EncodeToString([]byte("billing:password-never-shown"))
		for _, secret := range []string{"password-never-shown", "header-value-never-shown", basic} {
			if strings.Contains(p.Body, secret) {
				t.Errorf("%s: the page shows %q", what, secret)
			}
		}
	}

	// Not sent yet: paused.
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), tn.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	id := e.publishTo(tn, s.ID, "order.paid", map[string]any{"n": 1})
	p := c.get("/deliveries/" + id.String())
	if h := text(one(t, p.Doc, "request-heading")); h != "Request to be sent" {
		t.Fatalf("heading %q", h)
	}
	wantMasked("to be sent", p)

	// Sent.
	if _, err := e.srv.Subscriptions.Resume(setupCtx(), tn.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	e.waitState(tn, id, delivery.Delivered)
	e.recv.waitHits(t, "/good/masked", 1)
	for _, h := range e.recv.all() {
		if h.Path == "/good/masked" {
			if user, pass, ok := (&http.Request{Header: h.Headers}).BasicAuth(); !ok || user != "billing" || pass != "password-never-shown" {
				t.Errorf("the endpoint got Authorization %q", h.Headers.Get("Authorization"))
			}
		}
	}
	p = c.get("/deliveries/" + id.String())
	if h := text(one(t, p.Doc, "request-heading")); h != "Request as sent" {
		t.Fatalf("heading %q", h)
	}
	wantMasked("as sent", p)
}
