package templates

// Polling subscriptions on the dashboard (endpoint_polling.templ): the form's type choice, the endpoint
// page's "how to pull" and consumers, and a polling delivery's page. Their view models live here, apart
// from view.go, so that other features can grow theirs without touching the same lines.

// Subscription types as the form posts them (subscriptions.Webhook and subscriptions.Polling).
const (
	TypeWebhook = "webhook"
	TypePolling = "polling"
)

// PollingName is what pages call a polling subscription without a description (it has no URL to show).
const PollingName = "Polling subscription"

// Branded says the pages carry a platform's own name: they then name neither Hookline nor its command
// line (hookline listen), which the platform's customers do not have.
func (l Layout) Branded() bool { return l.Brand != "" && l.Brand != "Hookline" }

// TypeFields are the endpoint form's type choice: Type is webhook or polling; Fixed (a stored
// subscription) shows the type without offering to change it.
type TypeFields struct {
	Type  string
	Fixed bool
	Error FieldError
}

// Polling reports whether the form is for a polling subscription.
func (t TypeFields) Polling() bool { return t.Type == TypePolling }

// PollingPanel is a polling subscription's part of its page: how its consumers pull and commit, and each
// consumer with its cursor and lag.
type PollingPanel struct {
	// PollPath, CommitPath and ConsumersPath are the API's paths for this subscription (CommitPath with
	// {name} for the consumer's name).
	PollPath      string
	CommitPath    string
	ConsumersPath string
	// Window says in words how long a delivery waits to be committed before it expires ("3 days").
	Window string
	// Paused is true while the subscription is paused or disabled: polls are refused until it is resumed.
	Paused    bool
	Consumers []ConsumerRow
}

// ConsumerRow is one consumer of a polling subscription. Cursor says in words where its committed cursor
// is ("after the delivery of invoice.paid created 14:02:11 UTC"; "not committed yet"); Lag counts the
// deliveries after it ("3", "10,000+"), LagN the number.
type ConsumerRow struct {
	Name       string
	Committed  bool
	CursorType string
	CursorAt   Time
	Cursor     string
	LastCommit Time
	LastPoll   Time
	Lag        string
	LagN       int64
}

// PollingDelivery is what a polling subscription's delivery page says instead of a request sent:
// CommittedBy names the consumer whose commit delivered it, at CommittedAt; Expired says it was never
// committed in time. PollPath is where consumers pull it from.
type PollingDelivery struct {
	CommittedBy string
	CommittedAt Time
	PollPath    string
	Window      string
}
