package core

import (
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/params"
)

// Reading a dashboard request: path ids and query values, shared by every handler. Values themselves
// (ids, times, filters) are read by package params in its Form dialect.

// PathID reads the {id} path value; a malformed id is as missing as another tenant's.
func PathID(r *http.Request) (uuid.UUID, error) {
	return params.PathID(r.PathValue("id"), "page")
}

// CloneValues copies a query's first non-empty value of each key: the base of a page's links that change one filter.
func CloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		if len(v) > 0 && v[0] != "" {
			out[k] = []string{v[0]}
		}
	}
	return out
}
