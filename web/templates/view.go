// Package templates renders the dashboard's pages with templ. Handlers (internal/web) build the view models
// below from domain values; the templates only lay them out. Regenerate with `go tool templ generate`.
package templates

import (
	"fmt"
	"strconv"
	"strings"
)

// Layout is what every page's frame needs.
type Layout struct {
	// Title is the page's own title; the document title adds " · Hookline".
	Title  string
	Crumbs []Crumb
	// User is the signed-in user's email; empty when signed out.
	User  string
	Admin bool
	// HasTenant is false for an operator without a tenant (no customer pages).
	HasTenant bool
	Flash     *Flash
	// Refresh, when above 0, reloads the page every so many seconds (a running replay's progress).
	Refresh int
	// RefreshWithoutScript reloads the page every so many seconds only where script does not run (a live
	// page that app.js would otherwise follow).
	RefreshWithoutScript int
	// AdminNav names the current operator section; set on /admin pages, it shows their sub-navigation.
	AdminNav string
	// Warning is a standing warning for operators (not a one-time flash): shown on every page it is set on.
	Warning string
	// Incidents are the tenant's open incidents, one banner line each on every page of the tenant's.
	Incidents []IncidentBanner
	// Certificates are the tenant's endpoints whose client certificate expires soon or has expired: one
	// banner on every page of the tenant's, a line each.
	Certificates []CertificateBanner
	// NoSearch leaves the header's search out (the search page has its own).
	NoSearch bool
	// Portal is true in a customer portal session: the header shows PortalUser and no account menu or
	// operator links. ReadOnly (a view portal session) hides every button that would change something.
	Portal     bool
	PortalUser string
	ReadOnly   bool
	// Brand is the platform's name; empty means Hookline.
	Brand string
	// LogoURL is the platform's logo (empty: Hookline's, or none when a brand name is set); BrandCSS
	// links the stylesheet with the platform's accent colour.
	LogoURL string
	// IconURL is the browser tab's icon (empty: none).
	IconURL  string
	BrandCSS bool
	// Theme forces "light" or "dark"; empty follows the viewer's setting.
	Theme string
	// FrameOrigins are the origins that may frame the page (space-separated): app.js tells them its height.
	FrameOrigins string
}

// BrandName is the name pages give the product: the platform's brand, else Hookline.
func (l Layout) BrandName() string {
	if l.Brand != "" {
		return l.Brand
	}
	return "Hookline"
}

// Crumb is one breadcrumb step; the last one is the current page and has no link.
type Crumb struct {
	Label string
	Href  string
}

// Flash is a one-time message after an action. Kind is success, error, warning or info.
type Flash struct {
	Kind    string
	Message string
	// Href and LinkText, when set, link what the action made (the delivery a test event created).
	Href     string
	LinkText string
}

// Time is a moment as pages show it. The zero value shows Never.
type Time struct {
	ISO  string // RFC 3339, for <time datetime>
	Text string // absolute, UTC
	Ago  string // relative to now: "5 min ago", "in 2 h"
}

// IsZero reports whether there is no moment.
func (t Time) IsZero() bool { return t.ISO == "" }

// LoginPage is /login.
type LoginPage struct {
	Layout
	// Notice is a flash message shown inside the form's card (e.g. after signing out).
	Notice *Flash
	Email  string
	Next   string
	Error  string
}

// Health is an endpoint's health over the last 24 h.
type Health struct {
	HasAttempts         bool
	SuccessRate         string // "97.5 %"
	RateClass           string // rate-good, rate-warn, rate-bad
	Attempts            int
	Successes           int
	Failures            int
	P50, P95            string // "120 ms"
	ConsecutiveFailures int
	LastSuccess         Time
	LastFailure         Time
	Chart               Chart
	// RangeLabel names the span the numbers cover ("last 24 hours"); Ranges, when set, offer the others.
	RangeLabel string
	Ranges     []RangeOption
	// Outcomes are the deliveries: delivered over the range (the attempts that succeeded), and dead,
	// pending (of them retrying) and in flight now, each of those linking to its tab of the list;
	// OutcomesNote says what each counts.
	Outcomes     []Outcome
	OutcomesNote string
}

// Chart is successes and failures per hour, drawn as inline SVG.
type Chart struct {
	Width, Height int
	Bars          []Bar
	// Label describes the chart for screen readers.
	Label string
	// Max is the busiest hour's attempts (the chart's scale).
	Max int
	// From and To name the first and last hour.
	From, To string
	// Step says what one bar is ("per minute"); Ticks label the time axis, one per bar; Rows are the bars
	// as a (visually hidden) table; Columns is the number of bars, for the axis' grid.
	Step    string
	Ticks   []Tick
	Rows    []ChartRow
	Columns int
}

// Bar is one hour of the chart; heights are in SVG units.
type Bar struct {
	X, W                   float64
	OkY, OkH, FailY, FailH float64
	Title                  string
}

// Subscription is a subscription as the list and its page show it.
type Subscription struct {
	ID          string
	Href        string
	URL         string
	Description string
	EventTypes  []string
	State       string // active, paused, disabled
	StateClass  string // badge class
	StateReason string // why it is disabled
	// Circuit says in words what the circuit breaker is doing ("" while closed); FailingSince, when set,
	// starts the current run of only failures.
	Circuit      string
	FailingSince string
	Created      Time
	Health       Health
	// HeaderNames are the custom headers every request carries, spelled as stored (canonical, X-Api-Key) and
	// so as the endpoint form shows them; their values are never shown.
	HeaderNames []string
	// Polling says it is a polling subscription: no URL, its consumers pull its deliveries.
	Polling bool
	// RateLimit says the endpoint's rate limit in words ("at most 10 requests a second"); "" when none.
	RateLimit string
	// Auth says how the endpoint authenticates us beyond the signature, without its secret ("Basic auth
	// as billing, password set"); "" for none.
	Auth string
	// Certificate is its client certificate for mutual TLS (nil: none).
	Certificate *CertificateLine
	// Filter is its payload filter, indented ("" for none); Schedule its retry schedule in words.
	Filter   string
	Schedule string
	// Ordered and OnDead are its ordered delivery per key and what a dead delivery does to its key.
	Ordered bool
	OnDead  string
}

// Name is what a subscription is called in titles: its description, else its URL (PollingName for a
// polling subscription, which has none).
func (s Subscription) Name() string {
	if s.Description != "" {
		return s.Description
	}
	if s.Polling {
		return PollingName
	}
	return s.URL
}

// HomePage is / : the tenant's subscriptions.
type HomePage struct {
	Layout
	TenantName    string
	Subscriptions []Subscription
}

// Option is one choice of a select.
type Option struct {
	Value, Label string
	Selected     bool
}

// Filter is the deliveries filter of a list, as the form shows it.
type Filter struct {
	State string
	// EventType is exact ("invoice.paid") or a prefix ("invoice.*"); EventTypes are its choices.
	EventType  string
	EventTypes []Option
	// Range is a preset ("1h", "24h", "7d") or empty; Ranges its choices.
	Range  string
	Ranges []Option
	Since  string // datetime-local value, UTC
	Until  string
	// Status is the last HTTP status: an exact code ("404") or a class ("5xx").
	Status string
	// Subscription and Subscriptions: the Deliveries page's subscription choice.
	Subscription  string
	Subscriptions []Option
	// EventID, when set, limits the list to one event's deliveries.
	EventID string
	Error   string
	Active  bool // any filter set
}

// DeliveryRow is one line of a deliveries list.
type DeliveryRow struct {
	ID         string
	ShortID    string
	Href       string
	EventID    string
	EventHref  string
	EventShort string
	// SubName and SubHref name the subscription (lists across subscriptions, an event's page).
	SubName    string
	SubHref    string
	EventType  string
	State      string // as shown: retrying for pending with earlier attempts
	StateClass string
	Attempts   int
	LastStatus string
	// LastStatusText names the status ("404 Not Found"), the status cell's title.
	LastStatusText string
	Created        Time
	Next           Time
	// Waiting says why a pending delivery is not due whatever its next attempt time says ("paused: waits
	// until resumed"); the time is then not shown, so it never looks overdue.
	Waiting string
}

// SubscriptionPage is /subscriptions/{id}.
type SubscriptionPage struct {
	Layout
	Sub       Subscription
	CanPause  bool
	CanResume bool
	CanTest   bool
	TestType  string
	List      DeliveryList
	// Polling is a polling subscription's how-to-pull and consumers (nil for a webhook subscription).
	Polling *PollingPanel
	// Waiting counts a paused or disabled subscription's waiting deliveries ("214", "1,000+").
	Waiting    string
	Contract   []string
	ActionBase string // /subscriptions/{id}
	Recover    RecoverForm
	// Incidents are its latest incidents, newest first.
	Incidents []IncidentRow
	// BlockedKeys are its keys held by a dead delivery (nil: not ordered with on_dead block).
	BlockedKeys *BlockedKeysPanel
}

// KV is one header.
type KV struct{ Key, Value string }

// Attempt is one attempt in the timeline.
type Attempt struct {
	N        int
	Started  Time
	Duration string
	Status   string // "400", or "no response"
	Class    string // ok, fail, retry
	Outcome  string // in words
	Snippet  string
	Error    string
	// GapAfter is the wait until the next attempt ("waited 5.2 s"); empty for the last one.
	GapAfter string
	// GapBefore is the wait since the previous attempt ("5.2 s after attempt 1"); empty for the first one.
	GapBefore string
}

// DeliveryPage is /deliveries/{id}.
type DeliveryPage struct {
	Layout
	ID        string
	EventID   string
	EventType string
	SubHref   string // empty when the subscription was deleted (its page is gone)
	SubName   string
	// EndpointDeleted, when its subscription was deleted, says so, naming it: nothing is sent to it any
	// more, and the page offers neither Resend nor Retry now.
	EndpointDeleted string
	State           string
	StateClass      string
	StateText       string
	Discarded       bool
	Created         Time
	NextAttempt     Time
	// ScheduleNote says where the next attempt is on the endpoint's own retry schedule ("attempt 3 of 4
	// on this endpoint's schedule"); "" on the standard schedule.
	ScheduleNote string
	GiveUp       Time
	LastAttempt  Time
	DeadAt       Time
	// Polling is set for a polling subscription's delivery: nothing is sent, a consumer commits it.
	Polling *PollingDelivery
	// Replay says which replay put it back in the queue ("bulk replay 0192…"); ReplayHref links it for admins.
	Replay      string
	ReplayHref  string
	RequestURL  string
	Headers     []KV
	Body        string
	Attempts    []Attempt
	TimelineEnd string // how the timeline ends: "next attempt at …", "gave up", "delivered"
	EndClass    string // upcoming, end, ok
	CanResend   bool
	ResendNote  string
	// Summary leads the page; Resend and RetryNow are its actions, each disabled with a reason when not
	// allowed. Final hides what no longer applies ("gives up at"); Live, with Version, lets the page follow
	// an unfinished delivery.
	Summary  Summary
	Resend   Action
	RetryNow Action
	Final    bool
	Live     bool
	Version  string
	// RequestHeading is "Request as sent", or "Request to be sent" before the first attempt; Signature is
	// the full webhook-signature header, for its copy button.
	RequestHeading string
	Signature      string
	ManualRetries  int
	MaxManual      int
	ActionBase     string // /deliveries/{id}
	// Ordering is its ordering key and what it waits for, if parked.
	Ordering DeliveryOrdering
}

// ErrorPage is a 404, 403 or 500 page.
type ErrorPage struct {
	Layout
	Status        int
	Heading       string
	Message       string
	CorrelationID string
}

// dotParts splits a dotted name after each dot: "invoice.failed" is "invoice." and "failed".
func dotParts(name string) []string { return strings.SplitAfter(name, ".") }

func num(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func itoa(n int) string { return strconv.Itoa(n) }

func viewBox(w, h int) string { return fmt.Sprintf("0 0 %d %d", w, h) }
