package templates

// View models of finding deliveries: the header's search, an event's page, the Deliveries page and the
// deliveries list (filters, state tabs, rows) that it shares with a subscription's page.

// DeliveryList is a filtered, paged list of deliveries with its filter form and state tabs.
type DeliveryList struct {
	// Action is the page the filter form and tabs lead to (/deliveries, /subscriptions/{id}).
	Action string
	Filter Filter
	Tabs   []Tab
	Rows   []DeliveryRow
	// Total says how many match the current tab ("30 matching deliveries", "1,000+ matching deliveries").
	Total     string
	NextHref  string // older deliveries
	FirstHref string // back to the newest, when paging
	// AllSubscriptions: the list spans subscriptions (the Deliveries page): a subscription column and filter.
	AllSubscriptions bool
}

// Tab is one state tab of a list: its link keeps the other filters.
type Tab struct {
	State   string // the ?state= value
	Label   string
	Count   string // "12", "1,000+"; empty when not counted
	Href    string
	Current bool
}

// DeliveriesPage is /deliveries: every delivery of the tenant, across its subscriptions.
type DeliveriesPage struct {
	Layout
	List DeliveryList
}

// EventPage is /events/{id}: one event and its deliveries, one per subscription it went to.
type EventPage struct {
	Layout
	ID        string
	EventType string
	Created   Time
	Body      string
	Rows      []DeliveryRow
	// More links the Deliveries page filtered to the event when it has more deliveries than shown.
	More string
}

// FindPage is /find: what the header's search found nothing for, or why it could not search.
type FindPage struct {
	Layout
	Query   string
	Message string
}
