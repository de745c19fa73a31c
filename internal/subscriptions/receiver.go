package subscriptions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/filter"
)

// How an endpoint authenticates Hookline beyond the signature.
const (
	AuthBasic  = delivery.AuthBasic
	AuthOAuth2 = delivery.AuthOAuth2ClientCredentials
)

// AuthInput is the "auth" field as sent. A secret (Password, ClientSecret) left empty keeps the one stored
// when the stored auth is of the same type: a form never shows it back, and an API caller changing the user
// name need not send the password again. A new type needs its secret.
type AuthInput struct {
	Type         string   `json:"type"`
	Username     string   `json:"username"`
	Password     string   `json:"password"`
	TokenURL     string   `json:"token_url"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes"`
	Audience     string   `json:"audience"`
	ClientAuth   string   `json:"client_auth"`
}

// CertificateInput is the "tls_client_certificate" field as sent (PEM). PrivateKey left empty keeps the
// stored key (a renewed certificate for the same key).
type CertificateInput struct {
	Certificate string `json:"certificate"`
	PrivateKey  string `json:"private_key"`
}

// AuthView is the endpoint's authentication as answers show it: everything but its secret, which is only
// said to be set.
type AuthView struct {
	Type            string   `json:"type"`
	Username        string   `json:"username,omitempty"`
	PasswordSet     *bool    `json:"password_set,omitempty"`
	TokenURL        string   `json:"token_url,omitempty"`
	ClientID        string   `json:"client_id,omitempty"`
	ClientSecretSet *bool    `json:"client_secret_set,omitempty"`
	Scopes          []string `json:"scopes,omitempty"`
	Audience        string   `json:"audience,omitempty"`
	ClientAuth      string   `json:"client_auth,omitempty"`
}

// CertificateView is the client certificate as answers show it: never its key.
type CertificateView struct {
	Subject  string    `json:"subject"`
	NotAfter time.Time `json:"not_after"`
}

// storedAuth is the auth column: AuthView's readable part.
type storedAuth struct {
	Type       string   `json:"type"`
	Username   string   `json:"username,omitempty"`
	TokenURL   string   `json:"token_url,omitempty"`
	ClientID   string   `json:"client_id,omitempty"`
	Scopes     []string `json:"scopes,omitempty"`
	Audience   string   `json:"audience,omitempty"`
	ClientAuth string   `json:"client_auth,omitempty"`
}

// Names of the sealed credentials (the credentials column's keys).
const (
	credPassword     = "password"
	credClientSecret = "client_secret"
	credPrivateKey   = "private_key"
)

// Limits on the receiver fields.
const (
	maxAuthText     = 1024
	maxScopes       = 20
	maxScope        = 200
	MaxRetryDelays  = 30
	minRetryDelay   = time.Second
	maxRetryDelay   = 24 * time.Hour
	maxCertificates = 16 << 10
)

// authView reads the stored auth for answers.
func authView(rawAuth, rawCredentials []byte) *AuthView {
	if len(rawAuth) == 0 {
		return nil
	}
	var a storedAuth
	if json.Unmarshal(rawAuth, &a) != nil || a.Type == "" {
		return nil
	}
	var creds map[string]string
	_ = json.Unmarshal(rawCredentials, &creds)
	v := &AuthView{Type: a.Type, Username: a.Username, TokenURL: a.TokenURL, ClientID: a.ClientID,
		Scopes: a.Scopes, Audience: a.Audience, ClientAuth: a.ClientAuth}
	switch a.Type {
	case AuthBasic:
		set := creds[credPassword] != ""
		v.PasswordSet = &set
	case AuthOAuth2:
		set := creds[credClientSecret] != ""
		v.ClientSecretSet = &set
		if v.Scopes == nil {
			v.Scopes = []string{}
		}
	}
	return v
}

func certificateView(r db.Subscription) *CertificateView {
	if r.TlsCertificate == nil || r.TlsCertificateNotAfter == nil {
		return nil
	}
	v := &CertificateView{NotAfter: *r.TlsCertificateNotAfter}
	if r.TlsCertificateSubject != nil {
		v.Subject = *r.TlsCertificateSubject
	}
	return v
}

// validateAuth checks the auth field's readable parts; secrets are checked against what is stored (see
// receiverChange).
func (s *Service) validateAuth(a *AuthInput) error {
	bad := func(msg string, f string, args ...any) error {
		return fieldError("auth", msg, fault.Invalid(f, args...))
	}
	for name, v := range map[string]string{"username": a.Username, "password": a.Password, "token_url": a.TokenURL,
		"client_id": a.ClientID, "client_secret": a.ClientSecret, "audience": a.Audience} {
		if len(v) > maxAuthText {
			return bad(fmt.Sprintf("The %s is longer than %d characters.", strings.ReplaceAll(name, "_", " "), maxAuthText),
				"auth.%s is longer than %d characters", name, maxAuthText)
		}
		if !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return bad(fmt.Sprintf("The %s holds control characters (such as a line break).", strings.ReplaceAll(name, "_", " ")),
				"auth.%s must be text without control characters", name)
		}
	}
	switch a.Type {
	case AuthBasic:
		if a.Username == "" {
			return bad("Enter the user name the endpoint expects.", "auth.username is required for basic auth")
		}
		if strings.Contains(a.Username, ":") {
			return bad("A basic-auth user name cannot contain a colon (:).", "auth.username must not contain ':' (RFC 7617)")
		}
	case AuthOAuth2:
		if a.TokenURL == "" {
			return bad("Enter the token URL of your authorization server.", "auth.token_url is required for oauth2_client_credentials")
		}
		u, err := url.Parse(a.TokenURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return bad("Enter the token URL as a full web address starting with https://, without a user name or #.",
				"auth.token_url must be an absolute https:// (or http://) URL without user info or fragment")
		}
		// The sender checks every resolved address again; this refuses what is plainly internal now.
		if err := s.ValidateURL(a.TokenURL); err != nil {
			fe := err.(*FieldError)
			return bad("The token URL: "+fe.Message, "auth.token_url: %s", fe.Err.Message)
		}
		if a.ClientID == "" {
			return bad("Enter the client ID the authorization server gave you.", "auth.client_id is required for oauth2_client_credentials")
		}
		switch a.ClientAuth {
		case "", "basic", "body":
		default:
			return bad("Choose how the client secret is sent: in the Authorization header (basic) or in the request body (body).",
				"auth.client_auth must be \"basic\" or \"body\"")
		}
		if len(a.Scopes) > maxScopes {
			return bad(fmt.Sprintf("Ask for at most %d scopes.", maxScopes), "auth.scopes: at most %d", maxScopes)
		}
		for _, sc := range a.Scopes {
			if sc == "" || len(sc) > maxScope || strings.ContainsFunc(sc, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
				return bad(fmt.Sprintf("%q is not a valid scope: scopes are printable characters without spaces or quotes.", sc),
					"auth.scopes: %q is not a valid scope (RFC 6749 §3.3)", sc)
			}
		}
	default:
		return bad("Choose basic auth or OAuth 2 client credentials.",
			"auth.type must be \"basic\" or \"oauth2_client_credentials\" (or auth null for none)")
	}
	return nil
}

// parseRetrySchedule reads delays like "30s", "10m", "1h30m": 1 to 30 of them, each 1 s to 24 h in whole
// seconds. It returns them in seconds as stored.
func parseRetrySchedule(in []string) ([]int32, error) {
	bad := func(msg string, f string, args ...any) error {
		return fieldError("retry_schedule", msg, fault.Invalid(f, args...))
	}
	if len(in) < 1 || len(in) > MaxRetryDelays {
		return nil, bad(fmt.Sprintf("Enter 1 to %d delays, or none for the standard schedule.", MaxRetryDelays),
			"retry_schedule must hold 1 to %d delays, or be null for the standard schedule", MaxRetryDelays)
	}
	out := make([]int32, 0, len(in))
	for i, v := range in {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d%time.Second != 0 {
			return nil, bad(fmt.Sprintf("%q is not a delay: write whole seconds, minutes or hours, such as 30s, 10m or 2h.", v),
				"retry_schedule[%d]: %q is not a duration in whole seconds (such as \"30s\", \"10m\", \"2h\")", i, v)
		}
		if d < minRetryDelay || d > maxRetryDelay {
			return nil, bad(fmt.Sprintf("%s is out of range: each delay is 1s to 24h.", v),
				"retry_schedule[%d]: %q is outside 1s to 24h", i, v)
		}
		out = append(out, int32(d/time.Second))
	}
	return out, nil
}

// RetryScheduleText writes stored delays as the API shows them: "30s", "10m", "1h30m".
func RetryScheduleText(seconds []int32) []string {
	if seconds == nil {
		return nil
	}
	out := make([]string, len(seconds))
	for i, s := range seconds {
		out[i] = FormatDelay(time.Duration(s) * time.Second)
	}
	return out
}

// FormatDelay writes a whole-second delay without zero parts: 90s is "1m30s", 3600s "1h".
func FormatDelay(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	if h > 0 {
		b.WriteString(strconv.Itoa(h) + "h")
	}
	if m > 0 {
		b.WriteString(strconv.Itoa(m) + "m")
	}
	if sec > 0 {
		b.WriteString(strconv.Itoa(sec) + "s")
	}
	return b.String()
}

// parseFilter validates a filter; its refusal names the JSON pointer into it, as a detail of the API's
// error ("/filter/data/amount/$gt") and in the message.
func parseFilter(raw json.RawMessage) (*filter.Filter, error) {
	f, err := filter.Parse(raw)
	if err == nil {
		return f, nil
	}
	msg, pointer := err.Error(), ""
	if fe, ok := err.(*filter.Error); ok {
		pointer = fe.Pointer
		msg = fe.Message
	}
	ferr := fault.Invalid("%s", err.Error())
	ferr.Details = []fault.Detail{{Path: "/filter" + pointer, Message: msg}}
	where := ""
	if pointer != "" {
		where = " (at " + pointer + ")"
	}
	return nil, fieldError("filter", "This filter cannot be used"+where+": "+msg, ferr)
}

// receiverChange is the stored form of the receiver fields an Input sets, worked out against the row as it
// is (nil old on create): which columns change, and to what.
type receiverChange struct {
	setAuth        bool
	auth           []byte            // nil: none
	credentials    map[string]string // sealed; nil: unchanged
	setCertificate bool
	certificate    *string
	certInfo       delivery.CertificateInfo
	setFilter      bool
	filter         []byte
	setSchedule    bool
	schedule       []int32
}

// receiverFields validates the receiver fields of in and seals their secrets, keeping the stored ones
// where a secret is left empty (see AuthInput). old is the locked row on update, nil on create.
func (s *Service) receiverFields(in Input, old *db.Subscription) (receiverChange, error) {
	var c receiverChange
	stored := map[string]string{}
	var oldAuth storedAuth
	if old != nil {
		_ = json.Unmarshal(old.Credentials, &stored)
		if len(old.Auth) > 0 {
			_ = json.Unmarshal(old.Auth, &oldAuth)
		}
	}
	if stored == nil {
		stored = map[string]string{}
	}
	creds := maps.Clone(stored)
	credsChanged := false
	setCred := func(name, plain string) error {
		sealed, err := s.box.Seal(plain)
		if err != nil {
			return err
		}
		creds[name] = sealed
		credsChanged = true
		return nil
	}
	dropCred := func(name string) {
		if _, ok := creds[name]; ok {
			delete(creds, name)
			credsChanged = true
		}
	}
	switch {
	case in.ClearAuth:
		c.setAuth = true
		dropCred(credPassword)
		dropCred(credClientSecret)
	case in.Auth != nil:
		a := in.Auth
		if err := s.validateAuth(a); err != nil {
			return c, err
		}
		sameType := old != nil && oldAuth.Type == a.Type
		secretName, secret, label := credPassword, a.Password, "password"
		if a.Type == AuthOAuth2 {
			secretName, secret, label = credClientSecret, a.ClientSecret, "client_secret"
		}
		switch {
		case secret != "":
			if err := setCred(secretName, secret); err != nil {
				return c, err
			}
		case sameType && stored[secretName] != "":
			// kept as stored
		default:
			what := "password"
			if label == "client_secret" {
				what = "client secret"
			}
			return c, fieldError("auth", fmt.Sprintf("Enter the %s.", what), fault.Invalid("auth.%s is required", label))
		}
		if a.Type == AuthBasic {
			dropCred(credClientSecret)
		} else {
			dropCred(credPassword)
		}
		sa := storedAuth{Type: a.Type, Username: a.Username}
		if a.Type == AuthOAuth2 {
			sa = storedAuth{Type: a.Type, TokenURL: a.TokenURL, ClientID: a.ClientID, Scopes: dedupe(a.Scopes),
				Audience: a.Audience, ClientAuth: a.ClientAuth}
			if sa.ClientAuth == "" {
				sa.ClientAuth = "basic" // RFC 6749 §2.3.1: servers must support it
			}
		}
		c.setAuth = true
		c.auth, _ = json.Marshal(sa)
	}
	switch {
	case in.ClearClientCertificate:
		c.setCertificate = true
		dropCred(credPrivateKey)
	case in.ClientCertificate != nil:
		key := in.ClientCertificate.PrivateKey
		if key == "" && stored[credPrivateKey] != "" {
			opened, err := s.box.Open(stored[credPrivateKey])
			if err != nil {
				return c, fmt.Errorf("open the stored private key: %w", err)
			}
			key = opened
		} else if key != "" {
			if err := setCred(credPrivateKey, key); err != nil {
				return c, err
			}
		}
		if len(in.ClientCertificate.Certificate)+len(key) > maxCertificates*2 {
			return c, fieldError("tls_client_certificate", "", fault.Invalid("tls_client_certificate is larger than %d KiB", maxCertificates>>10))
		}
		info, err := delivery.ParseClientCertificate(in.ClientCertificate.Certificate, key, s.now())
		if err != nil {
			field, msg := "certificate", err.Error()
			if ce, ok := err.(*delivery.CertificateError); ok {
				field, msg = ce.Field, ce.Message
			}
			ferr := fault.Invalid("tls_client_certificate.%s: %s", field, msg)
			ferr.Details = []fault.Detail{{Path: "/tls_client_certificate/" + field, Message: msg}}
			return c, fieldError("tls_client_certificate", msg, ferr)
		}
		c.setCertificate, c.certInfo = true, info
		cert := strings.TrimSpace(in.ClientCertificate.Certificate) + "\n"
		c.certificate = &cert
	}
	switch {
	case in.ClearFilter:
		c.setFilter = true
	case in.Filter != nil:
		if _, err := parseFilter(in.Filter); err != nil {
			return c, err
		}
		c.setFilter = true
		c.filter = []byte(in.Filter)
	}
	switch {
	case in.ClearRetrySchedule:
		c.setSchedule = true
	case in.RetrySchedule != nil:
		sched, err := parseRetrySchedule(*in.RetrySchedule)
		if err != nil {
			return c, err
		}
		c.setSchedule, c.schedule = true, sched
	}
	if credsChanged {
		c.credentials = creds
	}
	return c, nil
}

// authChanges names what changed in the endpoint's authentication between two rows: "type" and the
// readable fields by name, and a secret ("password", "client_secret") when its value changed. Values are
// never part of it. nil when nothing changed.
func (s *Service) authChanges(before, after db.Subscription) []string {
	var b, a storedAuth
	_ = json.Unmarshal(before.Auth, &b)
	_ = json.Unmarshal(after.Auth, &a)
	out := []string{}
	if b.Type != a.Type {
		out = append(out, "type")
	}
	for _, f := range []struct {
		name string
		x, y string
	}{{"username", b.Username, a.Username}, {"token_url", b.TokenURL, a.TokenURL}, {"client_id", b.ClientID, a.ClientID},
		{"audience", b.Audience, a.Audience}, {"client_auth", b.ClientAuth, a.ClientAuth}} {
		if f.x != f.y {
			out = append(out, f.name)
		}
	}
	if !slices.Equal(b.Scopes, a.Scopes) {
		out = append(out, "scopes")
	}
	var bc, ac map[string]string
	_ = json.Unmarshal(before.Credentials, &bc)
	_ = json.Unmarshal(after.Credentials, &ac)
	for _, name := range []string{credPassword, credClientSecret} {
		x, y := bc[name], ac[name]
		if x != y && (x == "" || y == "" || !s.sameValue(x, y)) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// certificateChanged says whether the client certificate or its key changed.
func (s *Service) certificateChanged(before, after db.Subscription) bool {
	if !equalPtr(before.TlsCertificate, after.TlsCertificate) {
		return true
	}
	var bc, ac map[string]string
	_ = json.Unmarshal(before.Credentials, &bc)
	_ = json.Unmarshal(after.Credentials, &ac)
	x, y := bc[credPrivateKey], ac[credPrivateKey]
	return x != y && (x == "" || y == "" || !s.sameValue(x, y))
}

// jsonEqual compares two JSON documents by value (jsonb reorders keys).
func jsonEqual(x, y []byte) bool {
	if len(x) == 0 || len(y) == 0 {
		return len(x) == len(y)
	}
	var a, b any
	if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return string(x) == string(y)
	}
	ax, _ := json.Marshal(a)
	bx, _ := json.Marshal(b)
	return string(ax) == string(bx)
}

// TestFilter says whether an event of this type and payload would pass the filter, as the publish decides:
// POST /tenants/{t}/filter-test and the dashboard's filter box, before a filter is saved.
func TestFilter(rawFilter json.RawMessage, eventType string, payload json.RawMessage) (bool, error) {
	f, err := parseFilter(rawFilter)
	if err != nil {
		return false, err
	}
	if !eventtype.Valid(eventType) {
		return false, fieldError("event_type", "", fault.Invalid("event_type must be 1 to 128 letters, digits or . _ - : /, starting with a letter or digit"))
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return false, fieldError("payload", "The payload must be a JSON object.", fault.Invalid("payload must be a JSON object"))
	}
	ev, err := filter.Event(eventType, trimmed)
	if err != nil {
		return false, fieldError("payload", "The payload must be a JSON object.", fault.Invalid("payload must be a JSON object"))
	}
	return f.Match(ev), nil
}
