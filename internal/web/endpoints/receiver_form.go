package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// receiverForm is the endpoint form's receiver sections as posted: authentication, client certificate,
// payload filter (and the event its test uses) and retry schedule. Secrets (password, clientSecret,
// privateKey) are read but never put back into a page.
type receiverForm struct {
	// authPosted, filterPosted and schedulePosted say the form had that section (its choice or field was
	// posted): a post without it (a form from before these sections) leaves it as it is.
	authPosted, filterPosted, schedulePosted bool

	authType                             string
	username, password                   string
	tokenURL, clientID, clientSecret     string
	scopes, audience, clientAuth         string
	certificate, privateKey              string
	removeCertificate                    bool
	filter                               string
	testType, testEventType, testPayload string
	customSchedule                       bool
	schedule                             string
}

// readReceiverForm reads the receiver sections' fields. Readable fields are trimmed; secrets are taken as
// typed.
func readReceiverForm(r *http.Request) receiverForm {
	v := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	return receiverForm{
		authPosted: r.PostForm["auth_type"] != nil, filterPosted: r.PostForm["filter"] != nil,
		schedulePosted: r.PostForm["retry_schedule_kind"] != nil,

		authType: v("auth_type"), username: v("auth_username"), password: r.PostFormValue("auth_password"),
		tokenURL: v("auth_token_url"), clientID: v("auth_client_id"), clientSecret: r.PostFormValue("auth_client_secret"),
		scopes: v("auth_scopes"), audience: v("auth_audience"), clientAuth: v("auth_client_auth"),
		certificate: v("tls_certificate"), privateKey: v("tls_private_key"),
		removeCertificate: r.PostFormValue("remove_client_certificate") != "",
		filter:            v("filter"),
		testType:          v("filter_test_type"), testEventType: v("filter_test_event_type"), testPayload: v("filter_test_payload"),
		customSchedule: v("retry_schedule_kind") == "custom", schedule: v("retry_schedule"),
	}
}

// receiverOf is a stored subscription's receiver settings as the form shows them: never a secret, nor the
// certificate (the form names the current one and takes a new one).
func receiverOf(s subscriptions.Subscription) receiverForm {
	f := receiverForm{authPosted: true, filterPosted: true, schedulePosted: true}
	if a := s.Auth; a != nil {
		f.authType, f.username, f.tokenURL, f.clientID = a.Type, a.Username, a.TokenURL, a.ClientID
		f.scopes, f.audience, f.clientAuth = strings.Join(a.Scopes, " "), a.Audience, a.ClientAuth
	}
	if len(s.Filter) > 0 {
		f.filter = core.PrettyJSON(s.Filter)
	}
	if s.RetrySchedule != nil {
		f.customSchedule, f.schedule = true, strings.Join(s.RetrySchedule, ", ")
	}
	return f
}

// certificateProblem is what the form itself finds wrong with the certificate fields: a certificate both
// removed and replaced, or a key without its certificate (the service takes a key only with one).
func (f receiverForm) certificateProblem() string {
	switch {
	case f.removeCertificate && f.certificate != "":
		return "Either remove the client certificate or paste a new one, not both."
	case !f.removeCertificate && f.certificate == "" && f.privateKey != "":
		return "Paste the certificate that goes with this private key too."
	}
	return ""
}

// apply puts the sections into in. sub is the stored subscription when editing (nil: a new one): a
// section left as the form showed it changes nothing. Authentication is sent whole, its secret empty
// when not retyped, which keeps the stored one while the type stays; an empty certificate keeps the
// stored one; a filter equal to the stored one is not sent.
func (f receiverForm) apply(in *subscriptions.Input, sub *subscriptions.Subscription) {
	switch {
	case !f.authPosted:
	case f.authType == templates.AuthNone:
		in.ClearAuth = sub != nil && sub.Auth != nil
	case f.authType == templates.AuthOAuth2:
		in.Auth = &subscriptions.AuthInput{Type: f.authType, TokenURL: f.tokenURL, ClientID: f.clientID,
			ClientSecret: f.clientSecret, Scopes: strings.Fields(f.scopes), Audience: f.audience, ClientAuth: f.clientAuth}
	default:
		// Basic, or a type no form offers: the service refuses that beside the section.
		in.Auth = &subscriptions.AuthInput{Type: f.authType, Username: f.username, Password: f.password}
	}
	switch {
	case f.removeCertificate:
		in.ClearClientCertificate = sub != nil && sub.TLSClientCertificate != nil
	case f.certificate != "":
		in.ClientCertificate = &subscriptions.CertificateInput{Certificate: f.certificate, PrivateKey: f.privateKey}
	}
	switch {
	case !f.filterPosted:
	case f.filter == "":
		in.ClearFilter = sub != nil && len(sub.Filter) > 0
	case sub == nil || !sameJSON(sub.Filter, []byte(f.filter)):
		in.Filter = json.RawMessage(f.filter)
	}
	switch {
	case !f.schedulePosted:
	case f.customSchedule:
		delays := splitDelays(f.schedule)
		in.RetrySchedule = &delays
	default:
		in.ClearRetrySchedule = sub != nil && sub.RetrySchedule != nil
	}
}

// splitDelays reads "30s, 5m, 1h" (commas, spaces or both) as delays.
func splitDelays(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// sameJSON compares two JSON documents by value; text that is not JSON is never the same.
func sameJSON(x, y []byte) bool {
	var a, b any
	if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return false
	}
	ax, _ := json.Marshal(a)
	bx, _ := json.Marshal(b)
	return bytes.Equal(ax, bx)
}

// secretsNote says, on a form shown again, which of the secrets typed must be typed again: the page never
// carries them back.
func (f receiverForm) secretsNote() string {
	var typed []string
	if f.password != "" && f.authType == templates.AuthBasic {
		typed = append(typed, "password")
	}
	if f.clientSecret != "" && f.authType == templates.AuthOAuth2 {
		typed = append(typed, "client secret")
	}
	if f.privateKey != "" {
		typed = append(typed, "private key")
	}
	switch len(typed) {
	case 0:
		return ""
	case 1:
		return "The " + typed[0] + " you typed is never shown again: type it once more before saving."
	}
	return "The " + strings.Join(typed[:len(typed)-1], ", ") + " and " + typed[len(typed)-1] +
		" you typed are never shown again: type them once more before saving."
}

// receiverSections fills the form page's receiver sections from what was typed (f) and the stored
// subscription (sub, when editing), which says whether a secret is set and names the current certificate.
func (h *Handler) receiverSections(r *http.Request, p *templates.EndpointFormPage, f endpointForm, sub *subscriptions.Subscription) error {
	rf := f.receiver
	p.Auth = templates.AuthFields{Type: rf.authType, Username: rf.username, TokenURL: rf.tokenURL, ClientID: rf.clientID,
		Scopes: rf.scopes, Audience: rf.audience, ClientAuth: rf.clientAuth}
	p.Certificate = templates.CertificateFields{PEM: rf.certificate, Remove: rf.removeCertificate}
	p.Filter = templates.FilterFields{JSON: rf.filter, TestAction: "/subscriptions/filter-test",
		TestType: rf.testType, TestEventType: rf.testEventType, TestPayload: rf.testPayload}
	p.Schedule = templates.ScheduleFields{Custom: rf.customSchedule, Delays: rf.schedule,
		Standard: capitalize(h.StandardSchedule()) + ".", MaxDelays: subscriptions.MaxRetryDelays}
	if sub != nil {
		if a := sub.Auth; a != nil {
			p.Auth.PasswordSet = a.Type == subscriptions.AuthBasic && a.PasswordSet != nil && *a.PasswordSet
			p.Auth.ClientSecretSet = a.Type == subscriptions.AuthOAuth2 && a.ClientSecretSet != nil && *a.ClientSecretSet
		}
		p.Certificate.Current = h.CertificateLine(sub.TLSClientCertificate)
		p.Filter.TestAction = "/subscriptions/" + sub.ID.String() + "/filter-test"
	}
	var err error
	p.Filter.Types, err = h.exampleTypes(r.Context(), rf.testType)
	return err
}

// exampleTypes are the catalogue's types that have an example, as the filter test offers them; chosen is
// selected.
func (h *Handler) exampleTypes(ctx context.Context, chosen string) ([]templates.Option, error) {
	if h.Catalogue == nil {
		return nil, nil
	}
	types, err := h.Catalogue.List(ctx, false)
	if err != nil {
		return nil, err
	}
	var out []templates.Option
	for _, t := range types {
		if hasExample(t.Example) {
			out = append(out, templates.Option{Value: t.Name, Label: "The example of " + t.Name, Selected: t.Name == chosen})
		}
	}
	return out, nil
}

func hasExample(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && !bytes.Equal(b, []byte("null"))
}

// certificateMessages places a refused certificate's message beside the field at fault: the private key's
// textarea when the API's detail points at private_key, else the certificate's.
func certificateMessages(fe *subscriptions.FieldError) (certificate, key string) {
	onKey := false
	if fe.Err != nil {
		for _, d := range fe.Err.Details {
			onKey = onKey || strings.HasSuffix(d.Path, "/private_key")
		}
	}
	if onKey {
		return "", sentence("The private key", fe.Message)
	}
	return sentence("The certificate", fe.Message), ""
}

// sentence makes a field's refusal a sentence that names the field ("The private key does not match
// the certificate."), unless it already is one.
func sentence(subject, msg string) string {
	if msg == "" || strings.HasPrefix(msg, "The ") || strings.HasPrefix(msg, "This ") {
		return msg
	}
	msg = subject + " " + msg
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// filterTestResult tests the typed filter against the chosen catalogue type's example or the pasted
// payload, as the publish would decide; a refusal (the filter, or the event) is the result's error.
func (h *Handler) filterTestResult(ctx context.Context, rf receiverForm) *templates.FilterResult {
	if rf.filter == "" {
		return &templates.FilterResult{Error: "Type a filter to test."}
	}
	eventType, payload, what := rf.testEventType, []byte(rf.testPayload), ""
	if rf.testType != "" {
		var err error = fault.Missing("event type")
		if h.Catalogue != nil {
			t, gerr := h.Catalogue.Get(ctx, rf.testType)
			if err = gerr; err == nil && (t.Archived || !hasExample(t.Example)) {
				err = fault.Missing("event type")
			}
			eventType, payload = t.Name, t.Example
		}
		if err != nil {
			if fe := fault.As(err); fe != nil && fe.Code == fault.NotFound {
				return &templates.FilterResult{Error: "The catalogue has no example of " + rf.testType + " any more: choose another event."}
			}
			return &templates.FilterResult{Error: "The catalogue could not be read just now: try again in a moment."}
		}
		what = "the example of " + eventType
	} else {
		switch {
		case eventType == "":
			return &templates.FilterResult{Error: "Enter the event type of the pasted payload, or choose a catalogue example."}
		case len(bytes.TrimSpace(payload)) == 0:
			return &templates.FilterResult{Error: "Paste a payload to test, or choose a catalogue example."}
		}
		what = "the pasted " + eventType + " payload"
	}
	matches, err := subscriptions.TestFilter(json.RawMessage(rf.filter), eventType, payload)
	if err != nil {
		var fe *subscriptions.FieldError
		if errors.As(err, &fe) {
			msg := fe.Message
			if fe.Field == "event_type" {
				msg = "“" + eventType + "” is not an event type: 1 to 128 letters, digits or . _ - : /, starting with a letter or digit."
			}
			return &templates.FilterResult{Error: msg}
		}
		return &templates.FilterResult{Error: err.Error()}
	}
	return &templates.FilterResult{Matches: matches, Event: what}
}
