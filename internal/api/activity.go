package api

import (
	"net/http"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
)

// listActivity is GET /tenants/{t}/activity: the tenant's activity log, newest first, keyset-paginated,
// filtered by action and time.
func (a *API) listActivity(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for key := range q {
		switch key {
		case "action", "since", "until", "limit", "cursor":
		default:
			writeError(w, r, fault.Invalid("unknown query parameter %q", key))
			return
		}
	}
	f := activity.Filter{Action: q.Get("action"), Cursor: q.Get("cursor")}
	var err error
	if f.Since, f.Until, err = queryRange(q); err == nil {
		f.Limit, err = queryLimit(q)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := a.Activity.List(r.Context(), tenantID(r), f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
