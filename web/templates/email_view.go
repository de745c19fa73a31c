package templates

// Email is a customer alert email's content: internal/notify writes the words, and renders the same view
// as the plain-text part, so both parts always say the same thing. It holds no secrets or payloads.
type Email struct {
	// Subject is the message's subject, also the HTML document's title.
	Subject string
	// Heading is the first line, in bold.
	Heading string
	// Paragraphs say what happened and what happens next.
	Paragraphs []string
	// Facts are labelled values (endpoint, failing since, waiting deliveries, ...).
	Facts []EmailFact
	// Lost lists the last expired events (incident_expired only); LostMore counts the ones not listed.
	Lost     []EmailEvent
	LostMore int
	// Link opens the subscription in the dashboard; LinkLabel is its text.
	Link      string
	LinkLabel string
	// Footer says why the recipient gets this.
	Footer string
}

// EmailFact is one labelled value.
type EmailFact struct {
	Label string
	Value string
}

// EmailEvent is one event that was not delivered: its id and type, never its payload.
type EmailEvent struct {
	ID   string
	Type string
}
