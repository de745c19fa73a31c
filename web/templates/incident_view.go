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
	// Told lists the steps customers were told of, in order: "opened", "after 24 h", "before expiry",
	// "12 expired", "ended".
	Told []string
}
