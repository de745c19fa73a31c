package templates

import "strconv"

// View models of the operator pages (/admin/...) and of the replay parts of customer pages.

// Admin sections, for the sub-navigation's current page.
const (
	NavOverview   = "overview"
	NavDead       = "dead"
	NavReplay     = "replay"
	NavReplays    = "replays"
	NavNoneActive = ""
)

// SortLink is one sortable column header of the overview.
type SortLink struct {
	Key, Label, Href string
	Current          bool
}

// TenantLine is one tenant of the overview; counts are capped ("10000+").
type TenantLine struct {
	ID, Name, Href                               string
	Subscriptions                                int
	Pending, Retrying, Dead, Attempts            string
	PendingBad, RetryingBad, DeadBad, NoAttempts bool
	Created                                      Time
}

// AdminPage is /admin: every tenant with its counts.
type AdminPage struct {
	Layout
	Sorts   []SortLink
	Tenants []TenantLine
	Error   string
	// Operator is the operator notifications' card (admin_operator.templ).
	Operator OperatorCard
	// History is the delivery history's card (admin_history.templ).
	History HistoryCard
}

// AdminTenantPage is /admin/tenants/{id}: one tenant's subscriptions with their health, read-only.
type AdminTenantPage struct {
	Layout
	ID, Name      string
	Created       Time
	Subscriptions []Subscription
	DeadHref      string
	ReplaysHref   string
	// Tokens are the tenant's API tokens that are not revoked; never their values, which are not stored.
	Tokens []TokenLine
	// Activity is the tenant's newest activity log entries and the link to the whole log.
	Activity TenantActivity
}

// TokenLine is one API token on the operator's tenant page, with the action revoking it.
type TokenLine struct {
	ID, Name     string
	Scopes       string
	Created      Time
	LastUsed     Time // zero: never used
	RevokeAction string
}

// DeadFilterForm is the dead-letter criteria as the dead-letter list and the bulk replay form show them.
type DeadFilterForm struct {
	Tenant       string
	Tenants      []Option
	Subscription string
	EventType    string
	States       []Option
	Reasons      []Option
	From, To     string // datetime-local values, UTC
	Spread       string // minutes, bulk replay only
	Error        string
	Active       bool
}

// DeadLetterRow is one dead delivery of the cross-tenant list.
type DeadLetterRow struct {
	ID, ShortID, Href      string
	TenantName, TenantHref string
	// SubHref is empty, and SubDeleted true, when the subscription was deleted (its page is gone).
	SubURL, SubHref   string
	SubDeleted        bool
	EventType         string
	State, StateClass string
	Reason            string
	Attempts          int
	Created, DeadAt   Time
}

// DeadLettersPage is /admin/dead.
type DeadLettersPage struct {
	Layout
	Filter     DeadFilterForm
	Rows       []DeadLetterRow
	Total      string
	NextHref   string
	FirstHref  string
	ReplayHref string // the bulk replay form with the same criteria
	// Chart is dead letters by hour of creation; Groups the same deliveries by tenant, subscription and
	// last status. Both count only the newest few (Capped says so).
	Chart  DeadChart
	Groups DeadGroups
}

// DeadChart is dead letters by hour as a bar chart (inline SVG) and a visually hidden table.
type DeadChart struct {
	Width, Height int
	Bars          []DeadBar
	Label         string
	From, To      string
	Max           int64
	Total         int64
	// Capped says the counts stopped at the newest CapText dead letters of the range.
	Capped  bool
	CapText string
	// Note says what range it covers when the filter did not say ("the last 48 hours").
	Note string
}

// DeadBar is one hour of the dead-letter chart; heights in SVG units.
type DeadBar struct {
	X, Y, W, H float64
	When       string
	Count      int64
	Title      string
}

// DeadGroups is the dead-letter table grouped by tenant, subscription and last status.
type DeadGroups struct {
	Rows []DeadGroupRow
	// Capped: only the newest CapText dead letters were grouped; More: only the largest groups are shown.
	Capped  bool
	CapText string
	More    bool
}

// DeadGroupRow is one tenant's subscription's dead letters with one last status.
type DeadGroupRow struct {
	TenantName, TenantHref string
	SubURL, SubHref        string
	Status                 string
	Count                  int64
	First, Last            Time
	// ReplayHref is the bulk replay form filled with this group's window, tenant and subscription. A
	// deleted subscription's group (SubDeleted) has neither it nor SubHref: no replay sends its deliveries.
	ReplayHref string
	SubDeleted bool
}

// GroupRow is one tenant's subscription's share of a replay preview.
type GroupRow struct {
	TenantName, TenantHref string
	SubURL, SubHref        string
	Deliveries             int64
}

// ReplayPreview is what a bulk replay would do, shown before it is confirmed.
type ReplayPreview struct {
	Matched int64
	Groups  []GroupRow
	// MoreGroups says the breakdown shows only the largest groups.
	MoreGroups bool
	Sample     []DeadLetterRow
	// Hidden carries the criteria to the confirm form.
	Hidden []KV
	// DeletedNote says why dead deliveries that fit the criteria are not matched (their endpoints were
	// deleted); empty when there are none.
	DeletedNote string
}

// BulkReplayPage is /admin/replay.
type BulkReplayPage struct {
	Layout
	Filter  DeadFilterForm
	Preview *ReplayPreview
}

// Progress is how far a replay is: Value of Max scheduled.
type Progress struct {
	Value, Max int64
	Percent    int
	Text       string
}

// ReplayRow is a replay as the audit log and a subscription's recovers show it.
type ReplayRow struct {
	ID, ShortID, Href           string
	Kind                        string
	Actor                       string
	Criteria                    string
	Matched, Scheduled, Skipped int64
	State                       string
	// Status is the badge's word (scheduling, delivering, finished, failed): a replay is finished only
	// once every delivery it scheduled is final.
	Status, StatusClass string
	DryRun              bool
	Started, Finished   Time
	Progress            Progress
	Error               string
	// The outcome of what it scheduled: delivered, dead again, still pending, taken over by a later replay.
	Delivered, Failed, Pending, TakenOver int64
	Settled                               bool
}

// ReplaysPage is /admin/replays: the audit log.
type ReplaysPage struct {
	Layout
	Scope string // "" or whose replays: "Recovers of Acme"
	// DryRuns says the page lists dry runs (?dry_run=1); real replays are listed by default. RealHref and
	// DryHref are the two tabs.
	DryRuns           bool
	RealHref, DryHref string
	Rows              []ReplayRow
	NextHref          string
	FirstHref         string
}

// ReplayPage is /admin/replays/{id}, and a customer's recover at /recovers/{id} (Customer set: no actor
// column, words for a customer).
type ReplayPage struct {
	Layout
	Customer bool
	Replay   ReplayRow
	Spread   string
	Running  bool
	// Version changes when what the page shows does, so a following page swaps only then.
	Version    string
	Deliveries []DeliveryRow
	NextHref   string
	FirstHref  string
}

// RecoverForm is a subscription page's self-service recover: the form, a preview's answer and recent recovers.
type RecoverForm struct {
	Action string // /subscriptions/{id}/recover
	Since  string // datetime-local, UTC
	// Preview is a dry run's answer; CanConfirm shows the confirm button under it.
	Preview    string
	CanConfirm bool
	// Recovers are the recent real recovers; Previews the recent dry runs, listed apart.
	Recovers []ReplayRow
	Previews []ReplayRow
}

func sprint(n int64) string { return strconv.FormatInt(n, 10) }

// Plural writes a count with the noun that fits it: "1 delivery", "3 deliveries".
func Plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return sprint(n) + " " + many
}

func boolText(b bool) string { return strconv.FormatBool(b) }
