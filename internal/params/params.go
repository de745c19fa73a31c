// Package params reads what a request says, for the JSON API and the dashboard alike: ids, times, page
// sizes, event types and statuses, the deliveries list's filter and a replay's criteria. Both ways in
// read the same things, so they are read here once; where they differ (the API names its parameters and
// refuses ones it does not know, the dashboard quotes what was typed and takes the form's times), the
// difference is a Dialect, spelled out at the one place it applies. Every error is a *fault.Error with
// the text and code the caller has always answered with.
package params

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/eventtype"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/keyset"
)

// Dialect is how one way in writes its values and says what is wrong with them.
//
//	                    API                                     Form (the dashboard)
//	unknown parameter   INVALID_REQUEST "unknown query …"       ignored (links carry other state)
//	malformed id        "<name> is not a valid id"              "<name> \"<value>\" is not a <name> id"
//	time                RFC 3339                                the form's datetime-local (UTC), RFC 3339, a date
//	event type filter   exact only                              exact, or a prefix ending in "." or "*"
//	state filter        a comma list, checked by the service    one tab's state or "all"
//	page size           limit=1…keyset.MaxPageSize              the page's own (dead letters: any positive limit)
//	values              as sent                                 trimmed where the form trims them
type Dialect int

const (
	// API is the JSON API's dialect (/api/v1).
	API Dialect = iota
	// Form is the dashboard's dialect: its query strings and forms.
	Form
)

// FormTime is the layout of the dashboard's datetime-local fields; their times are UTC.
const FormTime = "2006-01-02T15:04"

// formTimes are the layouts a dashboard time may take: the form's, with seconds, RFC 3339 (a link written
// for the API), or a bare date.
var formTimes = []string{FormTime, "2006-01-02T15:04:05", time.RFC3339Nano, "2006-01-02"}

// Known refuses a query parameter not among names (API only: the dashboard ignores what it does not read).
// With several unknown parameters, which one the message names is not defined.
func (d Dialect) Known(q url.Values, names ...string) error {
	if d != API {
		return nil
	}
	for key := range q {
		if !contains(names, key) {
			return fault.Invalid("unknown query parameter %q", key)
		}
	}
	return nil
}

// PathID parses an id from a path: a malformed one is NOT_FOUND (what not found), like an unknown one, since
// no object has it.
func PathID(v, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, fault.Missing(what)
	}
	return id, nil
}

// ID parses an optional id named name: nil when v is empty; a malformed one is INVALID_REQUEST naming it.
func (d Dialect) ID(name, v string) (*uuid.UUID, error) {
	if v == "" {
		return nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return nil, d.badID(name, v)
	}
	return &id, nil
}

// BodyID parses an optional id field of a JSON body (API): absent (nil) is none, and anything sent,
// the empty string included, must be an id.
func BodyID(name string, v *string) (*uuid.UUID, error) {
	if v == nil {
		return nil, nil
	}
	id, err := uuid.Parse(*v)
	if err != nil {
		return nil, API.badID(name, *v)
	}
	return &id, nil
}

func (d Dialect) badID(name, v string) error {
	if d == API {
		return fault.Invalid("%s is not a valid id", name)
	}
	return fault.Invalid("%s %q is not %s %s id", name, v, article(name), name)
}

// article is "a" or "an" before word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// Time parses an optional time named name: nil when v is empty.
func (d Dialect) Time(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	if d == API {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, fault.Invalid("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z", name)
		}
		return &t, nil
	}
	for _, layout := range formTimes {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, fault.Invalid("%s must be a date and time such as 2026-01-02T15:04 (UTC)", name)
}

// BodyTime parses a required RFC 3339 time field of a JSON body (API).
func BodyTime(name string, v *string) (time.Time, error) {
	if v == nil || *v == "" {
		return time.Time{}, fault.Invalid("%s is required (an RFC 3339 time such as 2026-01-02T15:04:05Z)", name)
	}
	t, err := API.Time(name, *v)
	if err != nil {
		return time.Time{}, err
	}
	return *t, nil
}

// Range reads a list's since and until (API): RFC 3339 times, each optional.
func Range(q url.Values) (since, until *time.Time, err error) {
	if since, err = API.Time("since", q.Get("since")); err != nil {
		return nil, nil, err
	}
	if until, err = API.Time("until", q.Get("until")); err != nil {
		return nil, nil, err
	}
	return since, until, nil
}

// Limit reads a page size: def when v is empty. The API takes 1 to keyset.MaxPageSize; the dashboard
// any positive number (its service caps it).
func (d Dialect) Limit(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if d == API {
		if err != nil || n < 1 || n > keyset.MaxPageSize {
			return 0, fault.Invalid("limit must be a whole number from 1 to %d", keyset.MaxPageSize)
		}
		return n, nil
	}
	if err != nil || n < 1 {
		return 0, fault.Invalid("limit must be a positive whole number")
	}
	return n, nil
}

// Bool reads an optional true/false query parameter (API): set says whether q has it at all; one that is
// there but empty or not a boolean is INVALID_REQUEST.
func Bool(q url.Values, name string) (value, set bool, err error) {
	if !q.Has(name) {
		return false, false, nil
	}
	b, err := strconv.ParseBool(q.Get(name))
	if err != nil {
		return false, true, fault.Invalid("%s must be true or false", name)
	}
	return b, true, nil
}

// EventType reads an event-type filter named name: an exact type, or (Form only) a prefix ending in "."
// or "*" ("invoice.*" and "invoice." both select every invoice. type), returned without its "*". In the
// API a value ending in "." is an exact type (a valid one, if unusual).
func (d Dialect) EventType(name, v string) (exact, prefix string, err error) {
	if v == "" {
		return "", "", nil
	}
	if d == API {
		if !eventtype.Valid(v) {
			return "", "", fault.Invalid("%s is not a valid event type", name)
		}
		return v, "", nil
	}
	if typ, star := strings.CutSuffix(v, "*"); star || strings.HasSuffix(typ, ".") {
		if !eventtype.Valid(typ) {
			return "", "", fault.Invalid("event type prefix %q is not the start of a valid event type", v)
		}
		return "", typ, nil
	}
	if !eventtype.Valid(v) {
		return "", "", fault.Invalid("event type %q is not a valid event type", v)
	}
	return v, "", nil
}

// Status reads a last-status filter ("404", "5xx"): see deliveries.ParseStatus, whose error it returns.
func Status(v string) (string, error) {
	if _, _, err := deliveries.ParseStatus(v); err != nil {
		return "", err
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
