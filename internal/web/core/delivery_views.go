package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

func (h *Handler) DeliveryRow(d deliveries.Delivery) templates.DeliveryRow {
	label, class := DeliveryState(d)
	row := templates.DeliveryRow{
		ID: d.ID.String(), ShortID: ShortID(d.ID), Href: "/deliveries/" + d.ID.String(), EventType: d.EventType,
		State: label, StateClass: class, Attempts: d.TotalAttempts, Created: h.TimeView(d.CreatedAt), LastStatus: "—",
	}
	if d.LastStatus != nil {
		row.LastStatus, row.LastStatusText = strconv.Itoa(*d.LastStatus), delivery.StatusLine(*d.LastStatus)
	} else if d.LastError != nil && *d.LastError != "" {
		row.LastStatus = "no response"
	}
	if d.State == delivery.Pending {
		row.Next = h.TimePtr(d.NextAttemptAt)
	}
	if d.Parked {
		// Parked behind its key's head (ordered delivery): it has no attempt time until that one is done.
		row.Waiting = "waits for an earlier delivery of its key"
	}
	return row
}

func ShortID(id uuid.UUID) string {
	s := id.String()
	return s[:8] + "…" + s[len(s)-4:]
}

// StateText says in words why a delivery is where it is.
func (h *Handler) StateText(d deliveries.Detail, subState string) string {
	last := func() string {
		if d.LastStatus != nil {
			return "the endpoint answered " + delivery.StatusLine(*d.LastStatus)
		}
		if d.LastError != nil && *d.LastError != "" {
			return "no answer (" + *d.LastError + ")"
		}
		return "no answer"
	}
	reason := ""
	if d.DeadReason != nil {
		reason = *d.DeadReason
	}
	switch {
	case d.State == delivery.Delivered:
		return fmt.Sprintf("delivered: %s on attempt %d.", last(), d.TotalAttempts)
	case d.State == delivery.Failed && reason == delivery.ReasonSubscriptionDeleted:
		return "failed: its subscription was deleted before it could be delivered."
	case d.State == delivery.Failed:
		return fmt.Sprintf("failed: %s — a permanent error, not retried.", last())
	case d.State == delivery.Expired && reason == delivery.ReasonDeadline:
		return fmt.Sprintf("expired: past the %s window while still failing (last: %s).", Words(h.Policy.Window), last())
	case d.State == delivery.Expired:
		return fmt.Sprintf("expired: out of attempts — all %d failed (last: %s).", d.AttemptCount, last())
	case d.State == delivery.InFlight && d.Endpoint.Deleted():
		return "in flight: an attempt that began before its subscription was deleted; it is the last one."
	case d.State == delivery.InFlight:
		return "in flight: an attempt is being made right now."
	case d.State == delivery.Pending && d.Endpoint.Deleted():
		return "ending: its subscription was deleted, so it is not sent again and ends as dead (subscription deleted)."
	case d.Retrying():
		s := fmt.Sprintf("retrying: attempt %d failed (%s); ", d.TotalAttempts, last())
		if d.NextAttemptAt != nil {
			s += "next attempt at " + d.NextAttemptAt.UTC().Format(TimeLayout) + " (" + Ago(h.Now(), *d.NextAttemptAt) + ")."
		}
		if subState == subscriptions.Paused {
			s += " The subscription is paused: it waits until you resume it."
		}
		return s
	}
	s := "pending: waiting for its first attempt"
	if d.NextAttemptAt != nil {
		s += ", due at " + d.NextAttemptAt.UTC().Format(TimeLayout) + " (" + Ago(h.Now(), *d.NextAttemptAt) + ")"
	}
	s += "."
	if subState == subscriptions.Paused {
		s += " The subscription is paused: it waits until you resume it."
	}
	return s
}

// HeadersView lists the request's headers, sorted. The stored ones carry no secrets (custom headers are
// never stored); the signature is shown shortened all the same.
func HeadersView(hd map[string]string) []templates.KV {
	out := make([]templates.KV, 0, len(hd))
	for _, k := range slices.Sorted(maps.Keys(hd)) {
		v := hd[k]
		if strings.EqualFold(k, "webhook-signature") && len(v) > 16 {
			v = v[:16] + "…"
		}
		out = append(out, templates.KV{Key: k, Value: v})
	}
	return out
}

// PrettyJSON indents a JSON body; anything else is shown as is.
func PrettyJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

func (h *Handler) AttemptsView(as []deliveries.Attempt) []templates.Attempt {
	out := make([]templates.Attempt, 0, len(as))
	for i, a := range as {
		v := templates.Attempt{
			N: a.Attempt, Started: h.TimeView(a.StartedAt), Duration: Span(time.Duration(a.DurationMs) * time.Millisecond),
			Status: "no response", Snippet: a.ResponseSnippet, Error: a.Error,
		}
		if v.N == 0 {
			v.N = i + 1
		}
		if a.Status != nil {
			v.Status = strconv.Itoa(*a.Status)
		}
		switch {
		case a.Consumer != "":
			// A polling consumer's commit: no request was made, so no status and no time taken.
			v.Status, v.Duration, v.Class, v.Outcome = "committed", "", "ok", "committed by consumer "+a.Consumer
		case a.Outcome == delivery.OutcomeDelivered:
			v.Class, v.Outcome = "ok", "delivered"
		case a.Outcome == delivery.OutcomeFailed:
			v.Class, v.Outcome = "fail", "permanent error, not retried"
		default:
			v.Class, v.Outcome = "retry", "temporary error, retried"
		}
		if i+1 < len(as) {
			end := a.StartedAt.Add(time.Duration(a.DurationMs) * time.Millisecond)
			gap := max(as[i+1].StartedAt.Sub(end), 0)
			v.GapAfter = "waited " + Span(gap) + " before the next attempt"
		}
		out = append(out, v)
	}
	return out
}
