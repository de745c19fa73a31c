package templates

// The incident view models live apart from view.go so that pages and emails can grow their own types
// without touching the same file.

// IncidentBanner is one open incident as the banner on every customer page tells it: "Your endpoint
// <Name> " then Text, with Name linking to the subscription.
type IncidentBanner struct {
	Href string
	Name string
	Text string
}

// IncidentRow is one of a subscription's incidents, as its page lists them.
type IncidentRow struct {
	ID       string
	Opened   Time
	Failing  Time // the first failure of the run that opened it
	Ended    Time // zero while ongoing
	Ongoing  bool
	Duration string // from the first failure to the end (or now)
	// Steps are the steps reached, in order ("opened", "after 24 h", "before expiry", "12 deliveries
	// expired", "ended"), each with what it actually sent.
	Steps []IncidentStep
}

// IncidentStep is one step of an incident and what it sent, read from the outbox, not from the claim.
type IncidentStep struct {
	Step string
	// Email: "emailed 3 people at 14:02 UTC", "email queued", "email retrying (last error: …)", "not
	// emailed: no mail server configured"…; EmailBad marks what was not (or not yet) sent.
	Email    string
	EmailBad bool
	// Operator, for the steps that notify the operator's webhook: "operator notified" only once that
	// delivery was delivered.
	Operator    string
	OperatorBad bool
}
