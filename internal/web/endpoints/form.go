package endpoints

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// emptyHeaderRows is how many blank custom header rows the form offers for adding headers.
const emptyHeaderRows = 2

// endpointForm is what the form posted, read but not yet checked.
type endpointForm struct {
	// typ is the type chosen (subscriptions.Webhook or Polling; on edit, the stored one's).
	typ                    string
	url, description, rate string
	eventTypes             []string
	headerNames            []string
	headers                map[string]string
	// problems the form itself has (not the API's rules): a header value without a name, a name twice,
	// a rate that is not a number, a certificate both removed and replaced, a key without its certificate.
	headersError, rateError, certError string

	// The receiver's sections (see receiverForm).
	receiver receiverForm
	// The Ordering section (see orderingForm).
	ordering orderingForm
}

// problem reports whether the form's own reading found something to fix before the service sees it.
func (f endpointForm) problem() bool {
	return f.headersError != "" || f.rateError != "" || f.certError != ""
}

// readEndpointForm reads the posted fields. "*" among the event types is the "All events" box: all
// of them, as none chosen is; a group's "Every … event" box posts its wildcard ("invoice.*").
func readEndpointForm(r *http.Request) endpointForm {
	f := endpointForm{
		typ:         cmp.Or(strings.TrimSpace(r.PostFormValue("type")), subscriptions.Webhook),
		url:         strings.TrimSpace(r.PostFormValue("url")),
		description: strings.TrimSpace(r.PostFormValue("description")),
		rate:        strings.TrimSpace(r.PostFormValue("rate_limit_per_second")),
		headers:     map[string]string{},
		eventTypes:  []string{},
	}
	for _, t := range r.PostForm["event_types"] {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(f.eventTypes, t) {
			f.eventTypes = append(f.eventTypes, t)
		}
	}
	if slices.Contains(f.eventTypes, "*") {
		f.eventTypes = []string{}
	}
	// A type (or narrower wildcard) that a chosen wildcard covers is already received through it: saved
	// once, as the wildcard. (With script, the form disables covered boxes; without, both may be posted.)
	var patterns []string
	for _, t := range f.eventTypes {
		if isPattern(t) {
			patterns = append(patterns, t)
		}
	}
	f.eventTypes = slices.DeleteFunc(f.eventTypes, func(t string) bool { return coveringPattern(t, patterns) != "" })
	names, values := r.PostForm["header_name"], r.PostForm["header_value"]
	seen := map[string]bool{}
	for i, name := range names {
		name = strings.TrimSpace(name)
		value := ""
		if i < len(values) {
			value = values[i]
		}
		if name == "" {
			if value != "" && f.headersError == "" {
				f.headersError = "A header value was typed without a name: give it a name, or leave both empty."
			}
			continue
		}
		key := http.CanonicalHeaderKey(name)
		if seen[key] && f.headersError == "" {
			f.headersError = name + " is listed twice: keep one row for it."
		}
		seen[key] = true
		f.headerNames = append(f.headerNames, name)
		f.headers[name] = value
	}
	f.receiver = readReceiverForm(r)
	f.ordering = readOrderingForm(r)
	f.certError = f.receiver.certificateProblem()
	return f
}

// input is the form as the service takes it; sub is the stored subscription when editing (nil: a new
// one). A subscription's form sends every field: an empty rate limit removes the limit, no headers removes
// them all; on edit an empty header value keeps the stored one, and the receiver's sections change only
// what was changed in them (see receiverForm.apply).
func (f endpointForm) input(sub *subscriptions.Subscription) (subscriptions.Input, string) {
	in := subscriptions.Input{URL: &f.url, Description: &f.description, EventTypes: &f.eventTypes, Headers: &f.headers,
		KeepHeaderValues: sub != nil}
	f.receiver.apply(&in, sub)
	f.ordering.apply(&in)
	if f.rate == "" {
		in.ClearRateLimit = true
		return in, ""
	}
	n, err := strconv.Atoi(f.rate)
	if err != nil {
		return in, fmt.Sprintf("Enter a whole number from 1 to %d, or leave it empty for no limit.", subscriptions.MaxRatePerSecond)
	}
	in.RateLimitPerSecond = &n
	return in, ""
}

// formPage builds the form's page; sub is the stored subscription when editing.
func (h *Handler) formPage(r *http.Request, tenantID uuid.UUID, f endpointForm, sub *subscriptions.Subscription) (templates.EndpointFormPage, error) {
	choices, err := h.eventTypeChoices(r.Context(), tenantID, f.eventTypes)
	if err != nil {
		return templates.EndpointFormPage{}, err
	}
	p := templates.EndpointFormPage{
		URL: f.url, Description: f.description, RateLimit: f.rate,
		AllEvents: len(f.eventTypes) == 0, Groups: groupEventTypes(choices, f.eventTypes),
		MaxRate: subscriptions.MaxRatePerSecond, MaxHeaders: subscriptions.MaxHeaders,
		HeadersError: f.headersError, RateLimitError: f.rateError, CertificateError: f.certError,
		Ordering: f.ordering.fields(),
	}
	if err := h.receiverSections(r, &p, f, sub); err != nil {
		return templates.EndpointFormPage{}, err
	}
	p.Type = templates.TypeFields{Type: f.typ, Fixed: sub != nil}
	stored := map[string]bool{}
	if sub != nil {
		for _, n := range sub.HeaderNames {
			stored[n] = true
		}
		base := "/subscriptions/" + sub.ID.String()
		p.Edit, p.Action, p.Cancel = true, base, base
		title, crumb := "Edit "+subName(*sub), "Edit"
		if h.ReadOnly(r) {
			// Someone who may only look is not editing: the page is the endpoint's settings.
			title, crumb = "Settings of "+subName(*sub), "Settings"
		}
		p.Layout = h.TenantLayout(r, tenantID, title, append(h.TenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName(*sub), Href: base}, templates.Crumb{Label: crumb})...)
	} else {
		p.Action, p.Cancel = "/subscriptions", "/"
		p.Layout = h.TenantLayout(r, tenantID, "Add endpoint", append(h.TenantCrumbs(r, tenantID), templates.Crumb{Label: "Add endpoint"})...)
	}
	for _, n := range f.headerNames {
		p.Headers = append(p.Headers, templates.HeaderRow{Name: n, Stored: stored[http.CanonicalHeaderKey(n)]})
	}
	if !p.ReadOnly {
		for range emptyHeaderRows {
			p.Headers = append(p.Headers, templates.HeaderRow{})
		}
	}
	return p, nil
}

// formOf is a stored subscription as the form shows it (header values never).
func formOf(s subscriptions.Subscription) endpointForm {
	f := endpointForm{typ: s.Type, url: s.URL, description: s.Description, eventTypes: s.EventTypes, headerNames: s.HeaderNames,
		receiver: receiverOf(s), ordering: orderingOf(s)}
	if s.RateLimitPerSecond != nil {
		f.rate = strconv.Itoa(*s.RateLimitPerSecond)
	}
	return f
}

// refuseEndpointForm shows the form again (400) with the refusal beside its field: err is the service's
// (a FieldError, or a refusal of the whole form such as the limit), or nil when the form's own reading
// found the problem. Anything else is an error page.
func (h *Handler) refuseEndpointForm(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, f endpointForm, sub *subscriptions.Subscription, err error) {
	fe := fault.As(err)
	if err != nil && (fe == nil || fe.Code != fault.InvalidRequest) {
		h.Fail(w, r, err)
		return
	}
	p, perr := h.formPage(r, tenantID, f, sub)
	if perr != nil {
		h.Fail(w, r, perr)
		return
	}
	var field *subscriptions.FieldError
	switch {
	case errors.As(err, &field):
		switch field.Field {
		case "url":
			p.URLError = field.Message
		case "type":
			p.Type.Error = field.Message
		case "description":
			p.DescriptionError = field.Message
		case "event_types":
			p.EventTypesError = field.Message
		case "headers":
			p.HeadersError = field.Message
		case "rate_limit_per_second":
			p.RateLimitError = field.Message
		case "auth":
			p.AuthError = field.Message
		case "tls_client_certificate":
			p.CertificateError, p.PrivateKeyError = certificateMessages(field)
		case "filter":
			p.FilterError = field.Message
		case "retry_schedule":
			p.ScheduleError = field.Message
		case "on_dead":
			p.OrderingError = field.Message
		default:
			p.FormError = field.Message
		}
		pollingRefusal(&p, field)
	case fe != nil:
		p.FormError = fe.Message + "."
	}
	p.SecretsNote = f.receiver.secretsNote()
	if len(f.headers) > 0 {
		// The values typed are not sent back into the page either.
		p.HeadersNote = headersNote(sub != nil)
	}
	h.Render(w, r, http.StatusBadRequest, templates.EndpointForm(p))
}

// headersNote says, on a form shown again, that header values typed must be typed again (on edit, that an
// empty one keeps the saved value).
func headersNote(edit bool) string {
	if edit {
		return "Header values are never shown again: a saved header's value is kept if left empty; type any new value once more."
	}
	return "Header values are never shown again: type the values you had typed once more before saving."
}

// subName is what pages call a subscription: its description, else its URL, else (a polling subscription)
// templates.PollingName, as templates.Subscription.Name.
func subName(s subscriptions.Subscription) string {
	return cmp.Or(s.Description, s.URL, templates.PollingName)
}
