package templates

// ActivityPage is a tenant's activity log: who changed what, newest first.
type ActivityPage struct {
	Layout
	// Scope names whose log this is on an operator's page ("" on the tenant's own).
	Scope string
	// Action, Since and Until are the filter as the form shows it; Actions are the choices (code, label).
	Action, Since, Until string
	Actions              [][2]string
	// Filtered is true when any filter is set; ClearHref removes them.
	Filtered  bool
	ClearHref string
	// FormAction is where the filter form goes (the page itself).
	FormAction string
	Rows       []ActivityRow
	// FirstHref and NextHref page through the log.
	FirstHref, NextHref string
}

// ActivityRow is one entry of the activity log.
type ActivityRow struct {
	At     Time
	Action string // the code, as the API names it
	Label  string // in words: "Subscription paused"
	// Object is what the change was made to, ObjectHref its page ("" when it has none, or is gone).
	Object, ObjectHref string
	// Who names the actor; WhoKind says what kind (dashboard user, portal user, API token, admin).
	Who, WhoKind string
	Details      string
	Correlation  string
}

// TenantActivity is the few newest entries the operator's tenant page shows, and the link to the rest.
type TenantActivity struct {
	Rows []ActivityRow
	Href string
}
