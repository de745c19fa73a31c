// Package subscriptions owns tenants' endpoints: their validation, signing secrets and rotation,
// pause/resume, and endpoint health.
package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/net/http/httpguts"
)

// States of a subscription.
const (
	// Active subscriptions receive deliveries.
	Active = "active"
	// Paused subscriptions keep collecting deliveries, which wait until Resume.
	Paused = "paused"
	// Disabled subscriptions get no new deliveries (deleted, or disabled for failing).
	Disabled = "disabled"
)

// SecretOverlap is how long a rotated-out secret keeps signing.
const SecretOverlap = 24 * time.Hour

// Subscription is a tenant's endpoint as shown to its owner. Custom header values and secrets are never
// part of it.
type Subscription struct {
	ID                 uuid.UUID `json:"id"`
	TenantID           uuid.UUID `json:"tenant_id"`
	URL                string    `json:"-"` // in JSON as JSONURL (see below)
	Description        string    `json:"description"`
	EventTypes         []string  `json:"event_types"`
	State              string    `json:"state"`
	DisabledReason     string    `json:"disabled_reason"`
	HeaderNames        []string  `json:"header_names"`
	RateLimitPerSecond *int      `json:"rate_limit_per_second"`
	// Circuit is the breaker's state: closed, open or half_open (a probe in flight).
	Circuit Circuit `json:"circuit"`
	// FailingSince starts the current run of only failures; nil while healthy.
	FailingSince *time.Time `json:"failing_since"`
	// Auth is how the endpoint authenticates Hookline beyond the signature (nil: the signature alone); its
	// secret is only said to be set.
	Auth *AuthView `json:"auth"`
	// TLSClientCertificate is the client certificate presented for mutual TLS (nil: none); never its key.
	TLSClientCertificate *CertificateView `json:"tls_client_certificate"`
	// Filter is the payload filter (null: every event of the subscription's types).
	Filter json.RawMessage `json:"filter"`
	// RetrySchedule is the endpoint's own delays between attempts (nil: the standard schedule).
	RetrySchedule []string `json:"retry_schedule"`
	// Ordered: deliveries of one ordering key go one at a time in publish order; OnDead ("skip" or "block")
	// is what a dead one does to its key.
	Ordered   bool      `json:"ordered"`
	OnDead    string    `json:"on_dead"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// Type is webhook (Hookline POSTs to URL) or polling (consumers pull: polling.go, internal/polling).
	Type string `json:"type"`
	// JSONURL is URL as the API shows it: null for a polling subscription (whose URL is "").
	JSONURL *string `json:"url"`
}

// Circuit is a subscription's circuit breaker as the API and dashboard show it.
type Circuit struct {
	State string `json:"state"`
	// OpenedAt is when it opened (nil while closed); NextProbeAt when the next probe may go.
	OpenedAt    *time.Time `json:"opened_at"`
	NextProbeAt *time.Time `json:"next_probe_at"`
}

func fromRow(r db.Subscription) Subscription {
	s := Subscription{
		ID: r.ID, TenantID: r.TenantID, URL: r.URL, Description: r.Description, EventTypes: r.EventTypes,
		State: r.State, DisabledReason: r.DisabledReason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		HeaderNames: []string{}, FailingSince: r.FailingSince,
		Circuit: Circuit{State: r.CircuitState, OpenedAt: r.CircuitOpenedAt},
	}
	if r.CircuitState != "closed" {
		s.Circuit.NextProbeAt = r.CircuitProbeAt
	}
	if s.EventTypes == nil {
		s.EventTypes = []string{}
	}
	var h map[string]string
	if json.Unmarshal(r.Headers, &h) == nil {
		for k := range h {
			s.HeaderNames = append(s.HeaderNames, k)
		}
		sort.Strings(s.HeaderNames)
	}
	if r.RateLimitPerSecond != nil {
		n := int(*r.RateLimitPerSecond)
		s.RateLimitPerSecond = &n
	}
	s.Auth = authView(r.Auth, r.Credentials)
	s.TLSClientCertificate = certificateView(r)
	if len(r.Filter) > 0 {
		s.Filter = json.RawMessage(r.Filter)
	}
	s.RetrySchedule = RetryScheduleText(r.RetrySchedule)
	s.Ordered, s.OnDead = r.Ordered, r.OnDead
	s.Type = r.Type
	if s.Type != Polling {
		u := s.URL
		s.JSONURL = &u
	}
	return s
}

// Input creates or changes a subscription. A nil field is left as it is (PATCH); on create, URL is required.
type Input struct {
	URL         *string            `json:"url"`
	EventTypes  *[]string          `json:"event_types"`
	Description *string            `json:"description"`
	Headers     *map[string]string `json:"headers"`
	// RateLimitPerSecond: absent leaves it; 1 to MaxRatePerSecond. 0 is refused rather than read as "no
	// limit": the form says 1 to 10,000 or empty, and a 0 taken for "none" would send without limit to
	// someone who asked for (nearly) nothing. null (ClearRateLimit) removes the limit.
	RateLimitPerSecond *int `json:"rate_limit_per_second"`
	// ClearRateLimit is set when the request sent rate_limit_per_second: null.
	ClearRateLimit bool `json:"-"`
	// KeepHeaderValues (the dashboard's form, which never shows stored values back) makes an empty value
	// of a header already stored keep its stored value on Update; without it an empty value is stored.
	KeepHeaderValues bool `json:"-"`

	// Type is webhook (nil: the default) or polling, on create only (see polling.go).
	Type *string `json:"-"`

	// The receiver's fields: each nil leaves it as it is, its Clear removes it (the API's null).
	Auth                   *AuthInput        `json:"-"`
	ClearAuth              bool              `json:"-"`
	ClientCertificate      *CertificateInput `json:"-"`
	ClearClientCertificate bool              `json:"-"`
	Filter                 json.RawMessage   `json:"-"`
	ClearFilter            bool              `json:"-"`
	RetrySchedule          *[]string         `json:"-"`
	ClearRetrySchedule     bool              `json:"-"`

	// Ordered and OnDead: nil leaves them as they are (on create: false and "skip").
	Ordered *bool   `json:"-"`
	OnDead  *string `json:"-"`
}

// Service manages subscriptions.
type Service struct {
	pool         *pgxpool.Pool
	q            *db.Queries
	now          func() time.Time
	allowPrivate bool
	allowHosts   map[string]bool
	// box seals signing secrets and custom header values before they are stored (nil: plaintext).
	box *secretbox.Box
	// maxPerTenant bounds a tenant's subscriptions (HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT); 0: no bound.
	maxPerTenant int

	// OnDeadLettered, when set, is told how many queued deliveries a deleted subscription dead-lettered,
	// so they are counted in webhook_deliveries_failed_total like every other entry into the queue.
	OnDeadLettered func(ctx context.Context, subscriptionID uuid.UUID, n int64)

	// KnownEventType, when set, limits the event types a subscription may name (HOOKLINE_EVENT_TYPES=
	// registered): it is asked about each exact type and each prefix pattern (invoice.*) as written, and
	// answers whether the catalogue has that type, or a type the pattern covers. A function rather than
	// the catalogue itself, so that this package does not depend on it.
	KnownEventType func(typeOrPattern string) bool
}

// AllowAddrs lets URLs name these exact ip:port addresses despite the private-network check (the sender
// is told the same, for the built-in demo receiver).
func (s *Service) AllowAddrs(addrs ...string) {
	if s.allowHosts == nil {
		s.allowHosts = map[string]bool{}
	}
	for _, a := range addrs {
		s.allowHosts[a] = true
	}
}

// LimitPerTenant bounds how many subscriptions (not deleted) a tenant may have: Create refuses one more
// (HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT). 0 is no bound.
func (s *Service) LimitPerTenant(n int) { s.maxPerTenant = n }

// MaxPerTenant is the bound LimitPerTenant set (0: none).
func (s *Service) MaxPerTenant() int { return s.maxPerTenant }

// NewService returns a Service. allowPrivate mirrors HOOKLINE_ALLOW_PRIVATE_NETWORKS: without it, URLs
// naming an internal address are refused up front (the sender checks resolved addresses again).
func NewService(pool *pgxpool.Pool, now func() time.Time, allowPrivate bool) *Service {
	return &Service{pool: pool, q: db.New(pool), now: now, allowPrivate: allowPrivate}
}

// Limits on what a subscription may hold.
const (
	maxURL         = 2048
	maxDescription = 500
	maxEventTypes  = 100
	maxHeaders     = 20
	maxHeaderValue = 1024
	maxRatePerSec  = 10000
)

// MaxRatePerSecond is the highest rate limit a subscription may have (the lowest is 1; none is no limit).
const MaxRatePerSecond = maxRatePerSec

// MaxHeaders is how many custom headers a subscription may have.
const MaxHeaders = maxHeaders

// FieldError is a refused field: Field is its name in the API's body and the dashboard's form ("url",
// "description", "event_types", "headers", "rate_limit_per_second"), Message says what is wrong in words
// for the person who typed it, and the wrapped fault is what the API answers (its code and message), so
// fault.As finds it as for any other refusal. The one validation serves both.
type FieldError struct {
	Field   string
	Message string
	// Header names the custom header at fault, for Field "headers" ("" when it is about all of them).
	Header string
	Err    *fault.Error
}

func (e *FieldError) Error() string { return e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// fieldError refuses field with the API's fault and a message for people (the fault's own when empty).
func fieldError(field, message string, err *fault.Error) *FieldError {
	if message == "" {
		message = err.Message
	}
	return &FieldError{Field: field, Message: message, Err: err}
}

// reservedHeaders are set by Hookline and may not be overridden by custom headers.
var reservedHeaders = map[string]bool{
	"content-type": true, "content-length": true, "user-agent": true, "host": true, "connection": true,
	"transfer-encoding": true, "te": true, "upgrade": true, "trailer": true, "keep-alive": true,
	"proxy-authorization": true, "proxy-connection": true, "expect": true,
}

// allowPrivateHint ends a refusal of a loopback or private URL with how an operator allows one: a
// developer pointing a subscription at a local receiver otherwise has no way to learn it.
const allowPrivateHint = "; the server's operator can allow loopback and private addresses with " +
	"HOOKLINE_ALLOW_PRIVATE_NETWORKS=true, for development only (it turns off the SSRF guard)"

// ValidateURL checks an endpoint URL: absolute http(s), a host, no user info, and, unless private networks
// are allowed, not a literal internal address or localhost. Its refusals are FieldErrors of "url".
func (s *Service) ValidateURL(raw string) error {
	if raw == "" {
		return fieldError("url", "Enter the URL of your endpoint.", fault.Invalid("url is required"))
	}
	if len(raw) > maxURL {
		return fieldError("url", fmt.Sprintf("This URL is longer than %d characters.", maxURL), fault.Invalid("url is longer than %d characters", maxURL))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return fieldError("url", "Enter a full web address starting with https:// (or http://), such as https://example.com/webhooks.",
			fault.Invalid("url must be an absolute http:// or https:// URL"))
	}
	if u.User != nil {
		return fieldError("url", "Leave the user name and password out of the URL; send credentials in a custom header instead.",
			fault.Invalid("url must not contain user info; use custom headers for credentials"))
	}
	if u.Fragment != "" {
		return fieldError("url", "Leave out the part from # on: browsers keep it to themselves, so it never reaches a server.", fault.Invalid("url must not contain a fragment"))
	}
	if !s.allowPrivate && !s.allowHosts[u.Host] {
		host := strings.ToLower(u.Hostname())
		// The guard's refusal told as customers see it: webhooks leave from our servers, across the
		// internet, so an address only reachable inside a private network never gets them.
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return fieldError("url", msgPrivateAddress, fault.Invalid("url points to localhost, which is not allowed%s", allowPrivateHint))
		}
		if ip, err := netip.ParseAddr(host); err == nil && !delivery.PublicAddr(ip) {
			return fieldError("url", msgPrivateAddress, fault.Invalid("url points to an internal address (%s), which is not allowed%s", ip, allowPrivateHint))
		}
	}
	return nil
}

// msgPrivateAddress is the SSRF guard's refusal in a customer's words.
const msgPrivateAddress = "This address is on a private network or this computer (such as localhost, 10.x, 192.168.x or 127.0.0.1), " +
	"which webhooks cannot reach: they are sent over the public internet. Use your endpoint's public address."

func (s *Service) validateEventTypes(types []string) error {
	if len(types) > maxEventTypes {
		return fieldError("event_types", fmt.Sprintf("Choose at most %d event types, or none for all events.", maxEventTypes),
			fault.Invalid("at most %d event types", maxEventTypes))
	}
	for _, t := range types {
		if t == "*" || t == ".*" {
			return fieldError("event_types", "", fault.Invalid("event type %q is not valid: an empty list of event types means every type", t))
		}
		if prefix, ok := strings.CutSuffix(t, ".*"); ok {
			// A pattern: the fan-out matches it against each prefix of a type that ends at a dot.
			if !eventtype.Valid(prefix) || strings.HasSuffix(prefix, ".") {
				return fieldError("event_types", "", fault.Invalid("event type pattern %q is not valid: a type prefix (letters, digits or . _ - : /) followed by .*", t))
			}
			continue
		}
		if !eventtype.Valid(t) {
			return fieldError("event_types", "", fault.Invalid("event type %q is not valid: 1 to 128 letters, digits or . _ - : /, or a prefix followed by .* (invoice.*)", t))
		}
	}
	if s.KnownEventType != nil {
		for _, t := range types {
			if s.KnownEventType(t) {
				continue
			}
			if strings.HasSuffix(t, ".*") {
				return fieldError("event_types", fmt.Sprintf("%q matches none of the documented event types.", t),
					fault.Invalid("event type pattern %q covers no type of the event catalogue, and this server accepts only registered types (HOOKLINE_EVENT_TYPES=registered)", t))
			}
			return fieldError("event_types", fmt.Sprintf("%q is not one of the documented event types.", t),
				fault.Invalid("event type %q is not in the event catalogue, and this server accepts only registered types (HOOKLINE_EVENT_TYPES=registered)", t))
		}
	}
	return nil
}

func validateHeaders(h map[string]string) error {
	if len(h) > maxHeaders {
		return fieldError("headers", fmt.Sprintf("Add at most %d custom headers.", maxHeaders), fault.Invalid("at most %d custom headers", maxHeaders))
	}
	// In name order, so the same headers are refused for the same one whatever the map's order.
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, lk := h[k], strings.ToLower(k)
		var fe *FieldError
		switch {
		case k == "" || strings.ContainsAny(k, " \t\r\n:") || !validToken(k):
			fe = fieldError("headers", fmt.Sprintf("%q is not a valid HTTP header name: use letters, digits and - (such as X-Api-Key).", k),
				fault.Invalid("custom header name %q is not a valid HTTP header name", k))
		case reservedHeaders[lk] || strings.HasPrefix(lk, "webhook-"):
			fe = fieldError("headers", fmt.Sprintf("%s is set on every delivery by the webhook service itself, so it cannot be replaced. Choose another name.", k),
				fault.Invalid("custom header %q is set by Hookline and cannot be overridden", k))
		// A value Go's HTTP client refuses to send (control characters) would fail every attempt until the
		// delivery expired: refused now instead.
		case len(v) > maxHeaderValue:
			fe = fieldError("headers", fmt.Sprintf("The value of %s is longer than %d characters.", k, maxHeaderValue),
				fault.Invalid("custom header %q has an invalid value: control characters and invalid UTF-8 are not allowed", k))
		case !utf8.ValidString(v) || !httpguts.ValidHeaderFieldValue(v):
			fe = fieldError("headers", fmt.Sprintf("The value of %s holds control characters (such as a line break), which a header cannot carry.", k),
				fault.Invalid("custom header %q has an invalid value: control characters and invalid UTF-8 are not allowed", k))
		}
		if fe != nil {
			fe.Header = k
			return fe
		}
	}
	return nil
}

func validToken(s string) bool {
	for _, c := range s {
		if c > 126 || c <= 32 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return false
		}
	}
	return true
}

func canonicalHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

// validate checks every field given; a refusal is a *FieldError naming the field.
func (s *Service) validate(in Input) error {
	if in.URL != nil {
		if err := s.ValidateURL(*in.URL); err != nil {
			return err
		}
	}
	if in.EventTypes != nil {
		if err := s.validateEventTypes(*in.EventTypes); err != nil {
			return err
		}
	}
	if in.Description != nil && len(*in.Description) > maxDescription {
		return fieldError("description", fmt.Sprintf("The description is longer than %d characters.", maxDescription),
			fault.Invalid("description is longer than %d characters", maxDescription))
	}
	if in.Description != nil && (!utf8.ValidString(*in.Description) || strings.ContainsRune(*in.Description, 0)) {
		return fieldError("description", "", fault.Invalid("description must be UTF-8 text without NUL characters"))
	}
	if in.Headers != nil {
		if err := validateHeaders(*in.Headers); err != nil {
			return err
		}
	}
	if in.Auth != nil && in.ClearAuth || in.ClientCertificate != nil && in.ClearClientCertificate ||
		in.Filter != nil && in.ClearFilter || in.RetrySchedule != nil && in.ClearRetrySchedule {
		return fault.Invalid("a field cannot be both set and cleared")
	}
	if in.OnDead != nil && *in.OnDead != OnDeadSkip && *in.OnDead != OnDeadBlock {
		return fieldError("on_dead", "Choose what a dead delivery does to its key: skip it, or block the key.",
			fault.Invalid("on_dead must be %q or %q", OnDeadSkip, OnDeadBlock))
	}
	if in.RateLimitPerSecond != nil && (*in.RateLimitPerSecond < 1 || *in.RateLimitPerSecond > maxRatePerSec) {
		return fieldError("rate_limit_per_second", fmt.Sprintf("Enter a whole number from 1 to %d, or leave it empty for no limit.", maxRatePerSec),
			fault.Invalid("rate_limit_per_second must be between 1 and %d, or null for no limit", maxRatePerSec))
	}
	return nil
}

// Create adds a subscription and returns it with its first signing secret, shown only here.
func (s *Service) Create(ctx context.Context, tenantID uuid.UUID, in Input) (Subscription, string, error) {
	polling, err := checkCreateType(in)
	if err != nil {
		return Subscription{}, "", err
	}
	if !polling && in.URL == nil {
		return Subscription{}, "", fieldError("url", "Enter the URL of your endpoint.", fault.Invalid("url is required"))
	}
	if err := s.validate(in); err != nil {
		return Subscription{}, "", err
	}
	// A polling subscription's url is '' (checkCreateType refused one given).
	p := db.CreateSubscriptionParams{TenantID: tenantID, URL: valueOr(in.URL, ""), EventTypes: []string{}, Headers: []byte("{}"), OnDead: OnDeadSkip}
	if in.Ordered != nil {
		p.Ordered = *in.Ordered
	}
	if in.OnDead != nil {
		p.OnDead = *in.OnDead
	}
	if in.EventTypes != nil {
		p.EventTypes = dedupe(*in.EventTypes)
	}
	if in.Description != nil {
		p.Description = *in.Description
	}
	if in.Headers != nil {
		var err error
		if p.Headers, err = s.sealHeaders(*in.Headers); err != nil {
			return Subscription{}, "", err
		}
	}
	if in.RateLimitPerSecond != nil {
		n := int32(*in.RateLimitPerSecond)
		p.RateLimitPerSecond = &n
	}
	rc, err := s.receiverFields(in, nil)
	if err != nil {
		return Subscription{}, "", err
	}
	p.Auth, p.Filter, p.RetrySchedule = rc.auth, rc.filter, rc.schedule
	p.Credentials = []byte("{}")
	if rc.credentials != nil {
		p.Credentials, _ = json.Marshal(rc.credentials)
	}
	if rc.certificate != nil {
		p.TlsCertificate, p.TlsCertificateSubject, p.TlsCertificateNotAfter = rc.certificate, &rc.certInfo.Subject, &rc.certInfo.NotAfter
	}
	secret := delivery.NewSecret()
	stored, err := s.box.Seal(secret)
	if err != nil {
		return Subscription{}, "", err
	}
	var row db.Subscription
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if s.maxPerTenant > 0 {
			// The tenant's row is locked first, so concurrent creates count one after the other: two at
			// the limit cannot both see room for one more.
			if _, err := q.LockTenantSubscriptions(ctx, tenantID); err != nil {
				return err
			}
			n, err := q.CountTenantSubscriptions(ctx, tenantID)
			if err != nil {
				return err
			}
			if int(n) >= s.maxPerTenant {
				return ErrTooMany(s.maxPerTenant)
			}
		}
		var err error
		if row, err = q.CreateSubscription(ctx, p); err != nil {
			return err
		}
		if polling {
			if row, err = q.MakeSubscriptionPolling(ctx, db.MakeSubscriptionPollingParams{ID: row.ID, TenantID: tenantID}); err != nil {
				return err
			}
		}
		if row.Filter != nil {
			if err := q.BumpFiltersVersion(ctx, tenantID); err != nil {
				return err
			}
		}
		if err := q.AddSubscriptionSecret(ctx, db.AddSubscriptionSecretParams{SubscriptionID: row.ID, Secret: stored}); err != nil {
			return err
		}
		return activity.Record(ctx, tx, tenantID, s.now(), activity.SubscriptionCreated, object(row.ID),
			map[string]any{"url": httpx.RedactURL(row.URL)})
	})
	if fe := fault.As(err); fe != nil {
		return Subscription{}, "", err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscription{}, "", fault.Missing("tenant")
	}
	if err != nil {
		return Subscription{}, "", fmt.Errorf("create subscription: %w", err)
	}
	return fromRow(row), secret, nil
}

// ErrTooMany is Create's refusal of a tenant's subscription beyond the limit: about the whole form (no
// field), its message for people without the server's setting, which names the product a white-labelled
// platform's customers do not see; the API's names it.
func ErrTooMany(limit int) *FieldError {
	return fieldError("", fmt.Sprintf("This account already has %d subscriptions, the most allowed. Delete one before adding another.", limit),
		fault.Invalid("this account already has %d subscriptions, the most allowed (HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT); delete one before adding another", limit))
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Get returns one of a tenant's subscriptions.
func (s *Service) Get(ctx context.Context, tenantID, id uuid.UUID) (Subscription, error) {
	row, err := s.q.GetSubscription(ctx, db.GetSubscriptionParams{ID: id, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscription{}, fault.Missing("subscription")
	}
	if err != nil {
		return Subscription{}, fmt.Errorf("get subscription: %w", err)
	}
	return fromRow(row), nil
}

// List returns a tenant's subscriptions, oldest first.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID) ([]Subscription, error) {
	rows, err := s.q.ListSubscriptions(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	out := make([]Subscription, 0, len(rows))
	for _, r := range rows {
		out = append(out, fromRow(r))
	}
	return out, nil
}

// Named is what pages call a subscription: its description, else its URL; Deleted says it is gone.
type Named struct {
	Name    string
	Deleted bool
}

// Names says what pages call some of a tenant's subscriptions, deleted ones included (an activity log
// names what its entries are about, also once it is gone). Ids of no subscription of the tenant's are
// left out.
func (s *Service) Names(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]Named, error) {
	out := make(map[uuid.UUID]Named, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.SubscriptionNames(ctx, db.SubscriptionNamesParams{TenantID: tenantID, Ids: ids})
	if err != nil {
		return nil, fmt.Errorf("subscription names: %w", err)
	}
	for _, r := range rows {
		n := Named{Name: r.Description, Deleted: r.DeletedAt != nil}
		if n.Name == "" {
			n.Name = r.URL
		}
		if n.Name == "" { // a polling subscription without a description: no URL to name it by
			n.Name = PollingName
		}
		out[r.ID] = n
	}
	return out, nil
}

// Update changes the fields given. The row is read and locked first, in the change's transaction: its
// activity entry names only the fields whose value the change really moved (a form that sends every field
// changes only what was edited), and a header given without a value keeps its stored one when
// in.KeepHeaderValues asks.
func (s *Service) Update(ctx context.Context, tenantID, id uuid.UUID, in Input) (Subscription, error) {
	if err := s.validate(in); err != nil {
		return Subscription{}, err
	}
	var out Subscription
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		old, err := q.GetSubscriptionForUpdate(ctx, db.GetSubscriptionForUpdateParams{ID: id, TenantID: tenantID})
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.Missing("subscription")
		}
		if err != nil {
			return err
		}
		if err := checkUpdateType(in, old); err != nil {
			return err
		}
		var headers []byte
		if in.Headers != nil {
			if headers, err = s.newHeaders(old.Headers, *in.Headers, in.KeepHeaderValues); err != nil {
				return err
			}
		}
		rc, err := s.receiverFields(in, &old)
		if err != nil {
			return err
		}
		out, err = s.update(ctx, tx, q, tenantID, old, in, headers, rc)
		return err
	})
	if err != nil && fault.As(err) == nil {
		return Subscription{}, fmt.Errorf("update subscription: %w", err)
	}
	return out, err
}

// newHeaders is the stored form of the headers given: sealed, except that with keep a header given with an
// empty value keeps the value stored under its name (a form that never shows stored values back).
func (s *Service) newHeaders(stored []byte, given map[string]string, keep bool) ([]byte, error) {
	if !keep {
		return s.sealHeaders(given)
	}
	var old map[string]string
	if err := json.Unmarshal(stored, &old); err != nil {
		return nil, fmt.Errorf("stored custom headers: %w", err)
	}
	typed, kept := map[string]string{}, map[string]string{}
	for k, v := range canonicalHeaders(given) {
		if was, ok := old[k]; ok && v == "" {
			kept[k] = was // sealed as stored
		} else {
			typed[k] = v
		}
	}
	headers, err := s.sealHeaders(typed)
	if err != nil || len(kept) == 0 {
		return headers, err
	}
	var merged map[string]string
	_ = json.Unmarshal(headers, &merged)
	maps.Copy(merged, kept)
	return json.Marshal(merged)
}

// update writes the fields given, headers already in their stored form, and records what changed from old
// (the row as read and locked in q's transaction).
func (s *Service) update(ctx context.Context, tx pgx.Tx, q *db.Queries, tenantID uuid.UUID, old db.Subscription, in Input, headers []byte, rc receiverChange) (Subscription, error) {
	// One guarded statement: fields not given stay as the row has them.
	p := db.UpdateSubscriptionParams{ID: old.ID, TenantID: tenantID, URL: in.URL, Description: in.Description, Headers: headers}
	if in.EventTypes != nil {
		p.EventTypes = dedupe(*in.EventTypes) // never nil: an empty list is stored, not skipped
	}
	if in.ClearRateLimit {
		p.ClearRateLimit = true
	} else if in.RateLimitPerSecond != nil {
		n := int32(*in.RateLimitPerSecond)
		p.RateLimitPerSecond = &n
	}
	p.SetAuth, p.Auth = rc.setAuth, rc.auth
	if rc.credentials != nil {
		p.Credentials, _ = json.Marshal(rc.credentials)
	}
	if p.SetCertificate = rc.setCertificate; rc.certificate != nil {
		p.TlsCertificate, p.TlsCertificateSubject, p.TlsCertificateNotAfter = rc.certificate, &rc.certInfo.Subject, &rc.certInfo.NotAfter
	}
	p.SetFilter, p.Filter = rc.setFilter, rc.filter
	p.SetRetrySchedule, p.RetrySchedule = rc.setSchedule, rc.schedule
	p.Ordered, p.OnDead = in.Ordered, in.OnDead
	row, err := q.UpdateSubscription(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscription{}, fault.Missing("subscription")
	}
	if err != nil {
		return Subscription{}, fmt.Errorf("update subscription: %w", err)
	}
	if err := s.orderingChanged(ctx, tx, q, old, row); err != nil {
		return Subscription{}, err
	}
	// Publishing processes keep a tenant's filters, with the event types they apply to: either changing
	// makes them read the filters again (see internal/publish).
	if (old.Filter != nil || row.Filter != nil) && (!jsonEqual(old.Filter, row.Filter) || !sameSet(old.EventTypes, row.EventTypes)) {
		if err := q.BumpFiltersVersion(ctx, tenantID); err != nil {
			return Subscription{}, err
		}
	}
	// A save that changed nothing is no change: nothing to record.
	if details := s.changes(old, row); details != nil {
		if err := activity.Record(ctx, tx, tenantID, s.now(), activity.SubscriptionChanged, object(old.ID), details); err != nil {
			return Subscription{}, err
		}
	}
	return fromRow(row), nil
}

// changes are the details of a change's activity entry: "fields", the fields whose value differs between
// before and after, in the order the API lists them, and for custom headers "headers", the names
// "added", "removed" and "changed" (a new value). Values are never part of it. nil when nothing changed.
func (s *Service) changes(before, after db.Subscription) map[string]any {
	fields := []string{}
	if before.URL != after.URL {
		fields = append(fields, "url")
	}
	if !sameSet(before.EventTypes, after.EventTypes) {
		fields = append(fields, "event_types")
	}
	if before.Description != after.Description {
		fields = append(fields, "description")
	}
	headers := s.headerChanges(before.Headers, after.Headers)
	if headers != nil {
		fields = append(fields, "headers")
	}
	if !equalPtr(before.RateLimitPerSecond, after.RateLimitPerSecond) {
		fields = append(fields, "rate_limit_per_second")
	}
	auth := s.authChanges(before, after)
	if auth != nil {
		fields = append(fields, "auth")
	}
	if s.certificateChanged(before, after) {
		fields = append(fields, "tls_client_certificate")
	}
	if !jsonEqual(before.Filter, after.Filter) {
		fields = append(fields, "filter")
	}
	if !slices.Equal(before.RetrySchedule, after.RetrySchedule) || (before.RetrySchedule == nil) != (after.RetrySchedule == nil) {
		fields = append(fields, "retry_schedule")
	}
	if before.Ordered != after.Ordered {
		fields = append(fields, "ordered")
	}
	if before.OnDead != after.OnDead {
		fields = append(fields, "on_dead")
	}
	if len(fields) == 0 {
		return nil
	}
	out := map[string]any{"fields": fields}
	if headers != nil {
		out["headers"] = headers
	}
	if auth != nil {
		out["auth"] = auth // names of what changed, never a value
	}
	return out
}

// headerChanges compares two stored header sets by name and by value (opened: the same value sealed
// twice is stored differently), and says which names were added, removed or given a new value; nil when
// none. A value that cannot be opened (a key no longer configured) counts as changed when its stored form
// differs.
func (s *Service) headerChanges(before, after []byte) map[string][]string {
	var b, a map[string]string
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	added, removed, changed := []string{}, []string{}, []string{}
	for k, av := range a {
		bv, ok := b[k]
		switch {
		case !ok:
			added = append(added, k)
		case av != bv && !s.sameValue(av, bv):
			changed = append(changed, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			removed = append(removed, k)
		}
	}
	if len(added)+len(removed)+len(changed) == 0 {
		return nil
	}
	sort.Strings(added)
	sort.Strings(removed)
	sort.Strings(changed)
	return map[string][]string{"added": added, "removed": removed, "changed": changed}
}

// sameValue reports whether two stored header values hold the same plaintext.
func (s *Service) sameValue(x, y string) bool {
	px, errX := s.box.Open(x)
	py, errY := s.box.Open(y)
	return errX == nil && errY == nil && px == py
}

// sameSet reports whether two lists hold the same strings, whatever their order.
func sameSet(x, y []string) bool {
	if len(x) != len(y) {
		return false
	}
	xs, ys := slices.Clone(x), slices.Clone(y)
	slices.Sort(xs)
	slices.Sort(ys)
	return slices.Equal(xs, ys)
}

func equalPtr[T comparable](x, y *T) bool {
	return (x == nil) == (y == nil) && (x == nil || *x == *y)
}

// Delete removes a subscription. Its queued deliveries are dead-lettered (reason subscription_deleted)
// rather than dropped; its history stays readable.
func (s *Service) Delete(ctx context.Context, tenantID, id uuid.UUID) error {
	var failed int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		// The deliveries first, then the subscription's row: the order a claim locks them in (it locks due
		// deliveries, then reserves slots on their subscription's row). The other way round, a claim holding
		// a waiting delivery and this delete holding the row would each wait for the other.
		var err error
		if failed, err = delivery.DeadLetterQueued(ctx, tx, tenantID, id, s.now()); err != nil {
			return err
		}
		if _, err := q.DeleteSubscription(ctx, db.DeleteSubscriptionParams{ID: id, TenantID: tenantID}); err != nil {
			return err
		}
		return activity.Record(ctx, tx, tenantID, s.now(), activity.SubscriptionDeleted, object(id),
			map[string]any{"dead_lettered": failed})
	})
	if err == nil && failed > 0 && s.OnDeadLettered != nil {
		s.OnDeadLettered(ctx, id, failed)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Missing("subscription")
	}
	if err != nil {
		return fmt.Errorf("delete subscription: %w", err)
	}
	return nil
}

// DisableFailing disables every active subscription whose attempts have only failed for longer than after
// (HOOKLINE_AUTO_DISABLE_AFTER), saying so in its disabled_reason. Its waiting deliveries are held, as for
// a paused one, until Resume. It returns the subscriptions it disabled.
func (s *Service) DisableFailing(ctx context.Context, after time.Duration) ([]Subscription, error) {
	rows, err := s.q.DisableFailingSubscriptions(ctx, db.DisableFailingSubscriptionsParams{
		Now: s.now(), FailingBefore: s.now().Add(-after), AfterText: after.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("disable failing subscriptions: %w", err)
	}
	out := make([]Subscription, 0, len(rows))
	for _, r := range rows {
		out = append(out, Subscription{ID: r.ID, TenantID: r.TenantID, URL: r.URL, State: Disabled, FailingSince: r.FailingSince})
	}
	return out, nil
}

// Pause stops deliveries to a subscription; new ones are stored and wait. Pausing a paused one is a no-op.
func (s *Service) Pause(ctx context.Context, tenantID, id uuid.UUID) (Subscription, error) {
	return s.setState(ctx, tenantID, id, Paused, "", []string{Active, Paused}, activity.SubscriptionPaused)
}

// Resume sends a paused (or disabled) subscription's waiting deliveries again.
func (s *Service) Resume(ctx context.Context, tenantID, id uuid.UUID) (Subscription, error) {
	return s.setState(ctx, tenantID, id, Active, "", []string{Paused, Disabled, Active}, activity.SubscriptionResumed)
}

func (s *Service) setState(ctx context.Context, tenantID, id uuid.UUID, to, reason string, from []string, action string) (Subscription, error) {
	var out db.Subscription
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		out, err = q.SetSubscriptionState(ctx, db.SetSubscriptionStateParams{
			ID: id, TenantID: tenantID, State: to, DisabledReason: reason, FromStates: from,
		})
		if err != nil {
			return err
		}
		if err := activity.Record(ctx, tx, tenantID, s.now(), action, object(id), nil); err != nil {
			return err
		}
		if to == Active {
			return q.NotifyDeliveriesReady(ctx, "") // its waiting deliveries are claimable now
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		cur, gerr := s.Get(ctx, tenantID, id)
		if gerr != nil {
			return Subscription{}, gerr
		}
		return Subscription{}, fault.New(fault.InvalidState, "the subscription is %s and cannot become %s", cur.State, to)
	}
	if err != nil {
		return Subscription{}, fmt.Errorf("set subscription state: %w", err)
	}
	return fromRow(out), nil
}

// RotateSecret adds a new signing secret and returns it. Every older secret keeps signing for SecretOverlap.
func (s *Service) RotateSecret(ctx context.Context, tenantID, id uuid.UUID) (string, error) {
	secret := delivery.NewSecret()
	stored, err := s.box.Seal(secret)
	if err != nil {
		return "", err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if _, err := q.GetSubscription(ctx, db.GetSubscriptionParams{ID: id, TenantID: tenantID}); err != nil {
			return err
		}
		if err := q.ExpireSubscriptionSecrets(ctx, db.ExpireSubscriptionSecretsParams{
			SubscriptionID: id, ExpiresAt: ptr(s.now().Add(SecretOverlap)),
		}); err != nil {
			return err
		}
		if err := q.AddSubscriptionSecret(ctx, db.AddSubscriptionSecretParams{SubscriptionID: id, Secret: stored}); err != nil {
			return err
		}
		return activity.Record(ctx, tx, tenantID, s.now(), activity.SecretRotated, object(id), nil)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fault.Missing("subscription")
	}
	if err != nil {
		return "", fmt.Errorf("rotate secret: %w", err)
	}
	return secret, nil
}

// Secret is a signing secret a subscription signs with now. ExpiresAt is nil for the newest one (it
// signs until the next rotation), else when a rotated-out one stops.
type Secret struct {
	Secret    string     `json:"secret"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// Secrets returns the signing secrets of one of the tenant's subscriptions that are valid now, newest
// first: the one to verify with, then any rotated out less than SecretOverlap ago. Reading them is
// recorded (secret.revealed) with the read, in one transaction: whoever sees a secret may sign as us.
func (s *Service) Secrets(ctx context.Context, tenantID, id uuid.UUID) ([]Secret, error) {
	var out []Secret
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if _, err := q.GetSubscription(ctx, db.GetSubscriptionParams{ID: id, TenantID: tenantID}); err != nil {
			return err
		}
		rows, err := q.ValidSubscriptionSecrets(ctx, db.ValidSubscriptionSecretsParams{SubscriptionID: id, TenantID: tenantID, Now: s.now()})
		if err != nil {
			return err
		}
		out = make([]Secret, 0, len(rows))
		for _, r := range rows {
			plain, err := s.box.Open(r.Secret)
			if err != nil {
				return fmt.Errorf("open signing secret of subscription %s: %w", id, err)
			}
			out = append(out, Secret{Secret: plain, ExpiresAt: r.ExpiresAt})
		}
		return activity.Record(ctx, tx, tenantID, s.now(), activity.SecretRevealed, object(id), nil)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fault.Missing("subscription")
	}
	if err != nil {
		return nil, fmt.Errorf("subscription secrets: %w", err)
	}
	return out, nil
}

// EnsureInternal makes sure the tenant has one subscription with this description, pointing at url and
// signing with exactly secret (a whsec_ secret chosen by the operator: HOOKLINE_OPERATOR_WEBHOOK_SECRET),
// and returns it. Hookline's own notifications to the operator are delivered through it.
func (s *Service) EnsureInternal(ctx context.Context, tenantID uuid.UUID, description, url, secret string) (Subscription, error) {
	if _, err := delivery.Sign([]string{secret}, "check", 0, nil); err != nil {
		return Subscription{}, fmt.Errorf("the secret must be a whsec_ secret: %w", err)
	}
	all, err := s.List(ctx, tenantID)
	if err != nil {
		return Subscription{}, err
	}
	var sub Subscription
	for _, x := range all {
		if x.Description == description {
			sub = x
		}
	}
	if sub.ID == uuid.Nil {
		if sub, _, err = s.Create(ctx, tenantID, Input{URL: &url, Description: &description}); err != nil {
			return Subscription{}, err
		}
	} else if sub.URL != url {
		if sub, err = s.Update(ctx, tenantID, sub.ID, Input{URL: &url}); err != nil {
			return Subscription{}, err
		}
	}
	stored, err := s.box.Seal(secret)
	if err != nil {
		return Subscription{}, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if err := q.ExpireSubscriptionSecrets(ctx, db.ExpireSubscriptionSecretsParams{SubscriptionID: sub.ID, ExpiresAt: ptr(s.now())}); err != nil {
			return err
		}
		return q.AddSubscriptionSecret(ctx, db.AddSubscriptionSecretParams{SubscriptionID: sub.ID, Secret: stored})
	})
	if err != nil {
		return Subscription{}, fmt.Errorf("set the internal subscription's secret: %w", err)
	}
	return sub, nil
}

func ptr[T any](v T) *T { return &v }

// object names a subscription in the activity log.
func object(id uuid.UUID) activity.Object {
	return activity.Object{Type: "subscription", ID: id.String()}
}

// TenantOf says which tenant a live subscription belongs to (operators open any subscription by its id); an unknown or deleted one is NOT_FOUND.
func (s *Service) TenantOf(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	t, err := s.q.SubscriptionTenant(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, fault.Missing("subscription")
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("subscription tenant: %w", err)
	}
	return t, nil
}
