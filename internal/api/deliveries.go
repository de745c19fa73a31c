package api

import (
	"context"
	"net/http"
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

// listFilter parses the list's query parameters; any malformed one is INVALID_REQUEST.
func listFilter(r *http.Request) (deliveries.Filter, error) {
	q := r.URL.Query()
	var f deliveries.Filter
	for key := range q {
		switch key {
		case "subscription_id", "event_id", "state", "event_type", "status", "since", "until", "limit", "cursor", "include_totals":
		default:
			return f, fault.Invalid("unknown query parameter %q", key)
		}
	}
	if v := q.Get("subscription_id"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, fault.Invalid("subscription_id is not a valid id")
		}
		f.SubscriptionID = &id
	}
	if v := q.Get("event_id"); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return f, fault.Invalid("event_id is not a valid id")
		}
		f.EventID = &id
	}
	if v := q.Get("state"); v != "" {
		f.States = strings.Split(v, ",")
	}
	if v := q.Get("event_type"); v != "" {
		if !eventtype.Valid(v) {
			return f, fault.Invalid("event_type is not a valid event type")
		}
		f.EventType = v
	}
	if v := q.Get("status"); v != "" {
		if _, _, err := deliveries.ParseStatus(v); err != nil {
			return f, err
		}
		f.Status = v
	}
	var err error
	if f.Since, f.Until, err = queryRange(q); err != nil {
		return f, err
	}
	if f.Limit, err = queryLimit(q); err != nil {
		return f, err
	}
	f.Cursor = q.Get("cursor")
	if v := q.Get("include_totals"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, fault.Invalid("include_totals must be true or false")
		}
		f.WithTotal = b
		f.CountUpTo = deliveries.TotalUpTo // any deliveries:read token may ask: never an unbounded count
	}
	return f, nil
}

func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request) {
	f, err := listFilter(r)
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
	d, err := retry(r.Context(), tenantID(r), id, deliveries.Actor{Admin: principal(r).Admin})
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

// queryRange reads a list's since and until: RFC 3339 times, each optional.
func queryRange(q url.Values) (since, until *time.Time, err error) {
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"since", &since}, {"until", &until}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, nil, fault.Invalid("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z", p.name)
			}
			*p.dst = &t
		}
	}
	return since, until, nil
}

// queryLimit reads a list's page size: 0 (the default) when absent.
func queryLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > keyset.MaxPageSize {
		return 0, fault.Invalid("limit must be a whole number from 1 to %d", keyset.MaxPageSize)
	}
	return n, nil
}
