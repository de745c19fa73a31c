package templates

// EndpointFormPage is the form adding (/subscriptions/new) or changing (/subscriptions/{id}/edit) a
// subscription, and the same form shown again with a refused field's message beside it.
type EndpointFormPage struct {
	Layout
	// Edit is true for a stored subscription's form; Action is where it posts, Cancel where it leads back.
	Edit   bool
	Action string
	Cancel string
	URL    string
	// Type chooses a webhook or a polling subscription (shown, not offered, when editing).
	Type TypeFields
	// Description and RateLimit are as typed ("" for no rate limit).
	Description string
	RateLimit   string
	// AllEvents is checked when no event type is chosen; Groups are the event types offered.
	AllEvents bool
	Groups    []EventTypeGroup
	// Headers are the custom header rows: the stored ones (values never shown) and empty ones to add.
	Headers []HeaderRow
	// The refused field's message, beside it; FormError is a refusal of the whole form (the limit).
	URLError         FieldError
	DescriptionError FieldError
	EventTypesError  FieldError
	HeadersError     FieldError
	RateLimitError   FieldError
	FormError        string
	// HeadersNote, on a form shown again, says that the header values typed must be typed again.
	HeadersNote string
	// MaxRate and MaxHeaders are the operator's bounds, told beside their fields.
	MaxRate    int
	MaxHeaders int

	// The receiver's sections, each with its refusal beside it: how the endpoint authenticates us, the
	// client certificate for mutual TLS, the payload filter (with its test) and the retry schedule.
	Auth             AuthFields
	AuthError        FieldError
	Certificate      CertificateFields
	CertificateError FieldError
	PrivateKeyError  FieldError
	Filter           FilterFields
	FilterError      FieldError
	Schedule         ScheduleFields
	ScheduleError    FieldError
	// SecretsNote, on a form shown again, says that the secrets typed (a password, a client secret, a
	// private key) are not sent back into the page and must be typed again.
	SecretsNote string

	// Ordering is the Ordering section (ordered delivery per key), with its refusal beside it.
	Ordering      OrderingFields
	OrderingError FieldError
}

// Authentication types as the form posts them ("" is none).
const (
	AuthNone   = ""
	AuthBasic  = "basic"
	AuthOAuth2 = "oauth2_client_credentials"
)

// AuthFields are the Authentication section: the chosen type and its readable fields as typed or stored.
// Secrets are never shown: PasswordSet and ClientSecretSet say the stored endpoint has one of that type,
// which an empty field keeps.
type AuthFields struct {
	Type     string
	Username string
	TokenURL string
	ClientID string
	// Scopes are space-separated; ClientAuth is how the client secret is sent: "basic" (the
	// Authorization header) or "body".
	Scopes          string
	Audience        string
	ClientAuth      string
	PasswordSet     bool
	ClientSecretSet bool
}

// CertificateFields are the Client certificate section. Current is the stored certificate (nil: none);
// PEM the certificate chain as typed (public, so shown again; the key never is); Remove the box that
// removes the stored one.
type CertificateFields struct {
	Current *CertificateLine
	PEM     string
	Remove  bool
}

// CertificateLine is a client certificate as pages name it: its subject, and its expiry in words
// ("expires 3 Mar 2027 (in 95 days)", "expired on 3 Mar 2027"); Soon is true within the notice window
// or once expired.
type CertificateLine struct {
	Subject string
	Expiry  string
	Expired bool
	Soon    bool
}

// FilterFields are the Payload filter section: the filter as typed (indented when stored), and its test:
// TestAction is where Test filter posts the whole form; the event to test is a catalogue type's example
// (TestType, one of Types) or a pasted payload (TestEventType, TestPayload). Result is the test's answer.
type FilterFields struct {
	JSON          string
	TestAction    string
	Types         []Option
	TestType      string
	TestEventType string
	TestPayload   string
	Result        *FilterResult
}

// FilterResult is what Test filter found: Matches, or Error (the filter or the event refused, saying why
// and where) when the test could not be made. Event names what was tested ("the example of invoice.paid").
type FilterResult struct {
	Matches bool
	Error   string
	Event   string
}

// ScheduleFields are the Retry schedule section: Custom with its delays as typed ("30s, 5m, 1h"), else
// the standard schedule, which Standard tells in words from the server's policy.
type ScheduleFields struct {
	Custom    bool
	Delays    string
	Standard  string
	MaxDelays int
}

// EventTypeGroup is the event types offered under one heading: the catalogue's group, else the part of
// their names before the first dot ("invoice" for invoice.paid). Wildcards choose every type of a prefix
// at once ("invoice.*"), listed before the group's own types.
type EventTypeGroup struct {
	Name      string
	Wildcards []EventTypeWildcard
	Options   []EventTypeOption
}

// EventTypeOption is one event type to choose; Description, when known, says what it is. CoveredBy is the
// chosen wildcard that includes it ("invoice.*"): it is then shown checked and cannot be chosen apart.
type EventTypeOption struct {
	Name        string
	Description string
	Checked     bool
	CoveredBy   string
}

// EventTypeWildcard chooses every event type that starts with Prefix ("invoice."), those added later
// included: Pattern is what is saved ("invoice.*"), Label says it in words ("Every invoice event").
// CoveredBy is a broader chosen wildcard that includes this one.
type EventTypeWildcard struct {
	Pattern   string
	Prefix    string
	Label     string
	Checked   bool
	CoveredBy string
}

// HeaderRow is one custom header of the form. Stored says the subscription has it: an empty value keeps
// what is stored, which is never shown.
type HeaderRow struct {
	Name   string
	Stored bool
}

// DeleteEndpointPage is /subscriptions/{id}/delete: what deleting does, and the button.
type DeleteEndpointPage struct {
	Layout
	Name   string
	URL    string
	Action string
	Back   string
	// Waiting counts the deliveries waiting to be sent ("0", "214", "1,000+"); InFlight those being sent.
	Waiting  string
	InFlight string
}

// SecretPage is the answer to Reveal and Rotate: the signing secrets valid now, in the POST's own answer.
type SecretPage struct {
	Layout
	Name string
	Back string
	// RotateAction posts a rotation (hidden for a view-only session).
	RotateAction string
	Secrets      []SecretRow
	// Rotated is true after a rotation: Secrets holds only the new secret, shown this once, and OldUntil
	// is when the one before it stops signing.
	Rotated  bool
	OldUntil Time
}

// SecretRow is one valid signing secret; Until is zero for the newest, which signs until the next rotation.
type SecretRow struct {
	Secret string
	Until  Time
}

// plural picks the words for a count shown as text ("1", "214", "1,000+").
func plural(n, one, many string) string {
	if n == "1" {
		return one
	}
	return many
}

// CertificateBanner is one endpoint in the banner of client certificates that expire soon: Href is its
// edit form, Name what pages call it, Text what follows its name ("expires on 3 Mar 2027 (in 9 days).
// Upload a renewed certificate before then.").
type CertificateBanner struct {
	Href    string
	Name    string
	Text    string
	Expired bool
}
