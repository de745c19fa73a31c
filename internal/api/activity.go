package api

import (
	"net/http"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/params"
)

// listActivity is GET /tenants/{t}/activity: the tenant's activity log, newest first, keyset-paginated,
// filtered by action and time.
func (a *API) listActivity(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := activity.Filter{Action: q.Get("action"), Cursor: q.Get("cursor")}
	err := params.API.Known(q, "action", "since", "until", "limit", "cursor")
	if err == nil {
		f.Since, f.Until, err = params.Range(q)
	}
	if err == nil {
		f.Limit, err = params.API.Limit(q.Get("limit"), 0)
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
