package core

import (
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/fault"
)

// Reading a dashboard request: path ids, form times and query values, shared by every handler.

// pathID reads the {id} path value; a malformed id is as missing as another tenant's.
func PathID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil, fault.Missing("page")
	}
	return id, nil
}

// formTime is the datetime-local format; the filter's times are UTC.
const FormTime = "2006-01-02T15:04"

func ParseFormTime(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{FormTime, "2006-01-02T15:04:05", time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, fault.Invalid("%s must be a date and time such as 2026-01-02T15:04 (UTC)", name)
}

// cloneValues copies a query's first non-empty value of each key: the base of a page's links that change one filter.
func CloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		if len(v) > 0 && v[0] != "" {
			out[k] = []string{v[0]}
		}
	}
	return out
}
