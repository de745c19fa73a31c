package templates

// View models of the delivery page's summary and actions, the health panel's outcome counts and ranges.

// Summary leads a delivery's page with the answer: what happened and what happens next.
type Summary struct {
	Class    string // ok, retry, dead, waiting: the summary's colour
	Headline string // "Delivered in 2 attempts", "Retrying", "Dead"
	AtLabel  string // "next attempt", "due", "": said before At
	At       Time
	Response string // "Last response 400: {…}"
	Note     string // one more sentence: paused, circuit open, discarded
}

// Action is a button of the delivery page: shown or not, and when shown but disabled, why.
type Action struct {
	Show   bool
	Reason string // why it is disabled; empty when it can be pressed
	Note   string // what it does, when it can be pressed
}

// Enabled reports whether the button can be pressed.
func (a Action) Enabled() bool { return a.Show && a.Reason == "" }

// Outcome is one count of the health panel's deliveries: over the range (delivered) or now (dead, pending,
// retrying, in flight), the latter linking to the list's tab that counts the same.
type Outcome struct {
	Label string // delivered, pending, retrying, in flight, dead
	Count string // as shown: "12", "1,000+"
	N     int64  // the number, for data-count
	Href  string // the list's tab; empty for a count no list shows (delivered over the range)
	Class string // badge class
	When  string // what it counts over, when not now: "in the last 24 hours"
	// TestID names the count for tests ("pending-count"); Part marks a count that is part of the one
	// before it (retrying ones are pending), shown as "of the pending".
	TestID string
	Part   bool
}

// RangeOption is one choice of the health chart's range (1 h, 24 h, 7 d).
type RangeOption struct {
	Value, Label string
	Href         string
	Current      bool
}

// Tick is one label of a chart's time axis, under the bar it names (Label empty: no label there).
type Tick struct {
	Label string
}

// ChartRow is one bar of a chart as a table row: the numbers without hovering.
type ChartRow struct {
	When                string
	Successes, Failures int
}
