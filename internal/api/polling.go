package api

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/polling"
)

// pollDeliveries answers GET .../subscriptions/{id}/poll?consumer=&limit=: a polling subscription's
// deliveries after the consumer's committed cursor.
func (a *API) pollDeliveries(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	for k := range q {
		if k != "consumer" && k != "limit" {
			writeError(w, r, fault.Invalid("unknown query parameter %q: poll takes consumer and limit", k))
			return
		}
	}
	if !q.Has("consumer") {
		writeError(w, r, fault.Invalid("consumer is required: the name of the consumer polling (1 to 64 letters, digits, '.', '_' or '-')"))
		return
	}
	limit := polling.DefaultLimit
	if raw := q.Get("limit"); q.Has("limit") {
		if limit, err = strconv.Atoi(raw); err != nil || limit < 1 || limit > polling.MaxLimit {
			writeError(w, r, fault.Invalid("limit must be a whole number from 1 to %d", polling.MaxLimit))
			return
		}
	}
	page, err := a.Polling.Poll(r.Context(), tenantID(r), id, q.Get("consumer"), limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// listConsumers answers GET .../subscriptions/{id}/consumers.
func (a *API) listConsumers(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	consumers, err := a.Polling.Consumers(r.Context(), tenantID(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": consumers})
}

// commitCursor answers POST .../subscriptions/{id}/consumers/{consumer}/commit {"cursor"}: 204.
func (a *API) commitCursor(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	var b struct {
		Cursor *string `json:"cursor"`
	}
	if err := decode(r, &b); err != nil {
		writeError(w, r, err)
		return
	}
	if b.Cursor == nil {
		writeError(w, r, fault.Invalid("cursor is required: the cursor of a poll of this consumer"))
		return
	}
	if err := a.Polling.Commit(r.Context(), tenantID(r), id, chi.URLParam(r, "consumer"), *b.Cursor); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
