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
	// Bad parameters are told after the subscription is found (Poll checks it first): another tenant's
	// id is 404 whatever else is wrong.
	q := r.URL.Query()
	consumer, limit := q.Get("consumer"), polling.DefaultLimit
	if raw := q.Get("limit"); q.Has("limit") {
		if limit, err = strconv.Atoi(raw); err != nil {
			limit = 0 // refused by Poll
		}
	}
	page, err := a.Polling.Poll(r.Context(), tenantID(r), id, consumer, limit)
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
