package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/params"
)

func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request) {
	// Any malformed or unknown parameter is INVALID_REQUEST.
	f, _, err := params.Deliveries(r.URL.Query(), params.ListOptions{Dialect: params.API, Across: true})
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := a.Deliveries.List(r.Context(), tenantID(r), f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *API) getDelivery(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "deliveryID", "delivery")
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := a.Deliveries.Get(r.Context(), tenantID(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (a *API) retryDelivery(w http.ResponseWriter, r *http.Request) {
	a.manualRetry(w, r, a.Deliveries.Retry)
}

// retryDeliveryNow makes a retrying delivery's next attempt now (the endpoint was fixed); /retry stays for
// finished deliveries and keeps answering 409 for pending ones.
func (a *API) retryDeliveryNow(w http.ResponseWriter, r *http.Request) {
	a.manualRetry(w, r, a.Deliveries.RetryNow)
}

// manualRetry is /retry and /retry-now: the same path, the same answer, another rule in the service.
func (a *API) manualRetry(w http.ResponseWriter, r *http.Request,
	retry func(context.Context, uuid.UUID, uuid.UUID, deliveries.Actor) (deliveries.Delivery, error)) {
	id, err := pathID(r, "deliveryID", "delivery")
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := retry(r.Context(), tenantID(r), id, deliveries.Actor{Admin: caller(r).Admin})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": d.ID, "state": d.State, "manual_retries": d.ManualRetries,
		"next_attempt_at": d.NextAttemptAt, "give_up_at": d.GiveUpAt})
}

func (a *API) discardDelivery(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "deliveryID", "delivery")
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := a.Deliveries.Discard(r.Context(), tenantID(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listBlockedKeys is GET /tenants/{t}/subscriptions/{id}/blocked-keys: the ordering keys a dead delivery
// holds (on_dead block), by key.
func (a *API) listBlockedKeys(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subscriptionID", "subscription")
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	limit := 0
	err = params.API.Known(q, "limit", "cursor")
	if err == nil {
		limit, err = params.API.Limit(q.Get("limit"), 50)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := a.Deliveries.BlockedKeys(r.Context(), tenantID(r), id, q.Get("cursor"), limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
