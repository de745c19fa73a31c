package params

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/replays"
)

// DeadCriteria are the criteria of dead deliveries as sent: a replay's (the API's POST /replays body, the
// dashboard's bulk replay form) and the dashboard's dead-letter list. Ids and times are strings, so a
// malformed one gets a message naming its field; nil is a criterion not given.
type DeadCriteria struct {
	TenantID       *string
	SubscriptionID *string
	EventType      string
	States         []string
	DeadReason     string
	CreatedFrom    *string
	CreatedTo      *string
}

// DeadFormKeys are the dashboard's fields of the dead-letter criteria, in the order its links carry them.
var DeadFormKeys = []string{"tenant", "subscription", "event_type", "state", "reason", "from", "to"}

// FormDeadCriteria reads the dead-letter criteria of a dashboard form or query (DeadFormKeys), trimmed as
// the form trims them; an empty field is no criterion.
func FormDeadCriteria(v url.Values) DeadCriteria {
	c := DeadCriteria{
		TenantID: nonEmpty(strings.TrimSpace(v.Get("tenant"))), SubscriptionID: nonEmpty(strings.TrimSpace(v.Get("subscription"))),
		EventType: strings.TrimSpace(v.Get("event_type")), DeadReason: v.Get("reason"),
		CreatedFrom: nonEmpty(v.Get("from")), CreatedTo: nonEmpty(v.Get("to")),
	}
	if s := v.Get("state"); s != "" {
		c.States = []string{s}
	}
	return c
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// deadNames are the names each dialect gives the criteria in its messages.
var deadNames = map[Dialect]struct{ tenant, subscription, from, to string }{
	API:  {"tenant_id", "subscription_id", "created_from", "created_to"},
	Form: {"tenant", "subscription", "Created from", "Created before"},
}

// DeadFilter reads criteria into a filter, checking what only the way in can say (an id or a time that is
// malformed, a time the API requires, a dashboard state that is not failed or expired). The caller checks
// the filter as a whole after (replays.ValidateReplay for a replay, DeadFilter.Validate for a list),
// since the dashboard's list takes criteria a replay refuses.
//
// The API's ids must be ids whenever they are sent (an empty string too: BodyID), and both its times are
// required; its states are passed on as sent, for Validate to refuse. The dashboard's empty fields are no
// criterion, and its state is failed or expired.
func (d Dialect) DeadFilter(c DeadCriteria) (replays.DeadFilter, error) {
	names := deadNames[d]
	var f replays.DeadFilter
	var err error
	if f.TenantID, err = d.criterionID(names.tenant, c.TenantID); err != nil {
		return f, err
	}
	if f.SubscriptionID, err = d.criterionID(names.subscription, c.SubscriptionID); err != nil {
		return f, err
	}
	f.EventType, f.DeadReason = c.EventType, c.DeadReason
	for _, s := range c.States {
		if d == Form && s != string(delivery.Failed) && s != string(delivery.Expired) {
			return f, fault.Invalid("state must be failed or expired")
		}
		f.States = append(f.States, delivery.State(s))
	}
	if d == API {
		from, err := BodyTime(names.from, c.CreatedFrom)
		if err != nil {
			return f, err
		}
		to, err := BodyTime(names.to, c.CreatedTo)
		if err != nil {
			return f, err
		}
		f.CreatedFrom, f.CreatedTo = &from, &to
		return f, nil
	}
	if f.CreatedFrom, err = d.Time(names.from, deref(c.CreatedFrom)); err != nil {
		return f, err
	}
	f.CreatedTo, err = d.Time(names.to, deref(c.CreatedTo))
	return f, err
}

func (d Dialect) criterionID(name string, v *string) (*uuid.UUID, error) {
	if d == API {
		return BodyID(name, v)
	}
	return d.ID(name, deref(v))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SpreadSeconds reads the API's spread_seconds: replays.DefaultSpread when absent, else 1 second to
// replays.MaxSpread.
func SpreadSeconds(v *int) (time.Duration, error) {
	if v == nil {
		return replays.DefaultSpread, nil
	}
	maxSpread := int(replays.MaxSpread / time.Second)
	if *v < 1 || *v > maxSpread {
		return 0, fault.Invalid("spread_seconds must be a whole number from 1 to %d", maxSpread)
	}
	return time.Duration(*v) * time.Second, nil
}

// DefaultSpreadMinutes is the bulk replay form's spread when it names none.
var DefaultSpreadMinutes = strconv.Itoa(int(replays.DefaultSpread / time.Minute))

// SpreadMinutes reads the bulk replay form's spread: whole minutes from 0 to replays.MaxSpread. 0 means
// "at once" on the form, while a replay reads 0 as its default, so 0 is the smallest spread, a second.
func SpreadMinutes(v string) (time.Duration, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || time.Duration(n)*time.Minute > replays.MaxSpread {
		return 0, fault.Invalid("spread must be a whole number of minutes from 0 to %d", int(replays.MaxSpread/time.Minute))
	}
	return max(time.Duration(n)*time.Minute, time.Second), nil
}

// ReplayList reads the replay audit log's query (API): limit, cursor and dry_run (true: dry runs only;
// false: real replays only; absent: both, the whole log). Any other or malformed parameter is
// INVALID_REQUEST.
func ReplayList(q url.Values) (replays.ReplayListFilter, error) {
	var f replays.ReplayListFilter
	if err := API.Known(q, "limit", "cursor", "dry_run"); err != nil {
		return f, err
	}
	dry, set, err := Bool(q, "dry_run")
	if err != nil {
		return f, err
	}
	if set {
		f.DryRun = &dry
	}
	if f.Limit, err = API.Limit(q.Get("limit"), 0); err != nil {
		return f, err
	}
	f.Cursor = q.Get("cursor")
	return f, nil
}
