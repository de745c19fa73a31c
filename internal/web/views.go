package web

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

// This file turns domain values into the templates' view models: words, numbers with units, times.

const timeLayout = "2006-01-02 15:04:05 UTC"

func (h *Handler) timeView(t time.Time) templates.Time {
	if t.IsZero() {
		return templates.Time{}
	}
	return templates.Time{ISO: t.UTC().Format(time.RFC3339), Text: t.UTC().Format(timeLayout), Ago: ago(h.now(), t)}
}

func (h *Handler) timePtr(t *time.Time) templates.Time {
	if t == nil {
		return templates.Time{}
	}
	return h.timeView(*t)
}

// ago says how far t is from now: "just now", "5 min ago", "in 2 h".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	default:
		s = fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// span writes a short duration: "120 ms", "5.2 s", "4 min 3 s", "2 h 5 min".
func span(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		m, s := int(d.Minutes()), int(d.Seconds())%60
		if s == 0 {
			return fmt.Sprintf("%d min", m)
		}
		return fmt.Sprintf("%d min %d s", m, s)
	default:
		hr, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%d h", hr)
		}
		return fmt.Sprintf("%d h %d min", hr, m)
	}
}

// words writes a configured duration in words: "72 hours", "5 seconds", "200 milliseconds".
func words(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.FormatInt(n, 10) + " " + one + "s"
	}
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return unit(int64(d/time.Minute), "minute")
	case d >= time.Second && d%time.Second == 0:
		return unit(int64(d/time.Second), "second")
	case d >= time.Second:
		return span(d)
	}
	return unit(d.Milliseconds(), "millisecond")
}

func subStateClass(state string) string {
	switch state {
	case subscriptions.Active:
		return "badge-ok"
	case subscriptions.Paused:
		return "badge-warn"
	}
	return "badge-bad"
}

// deliveryState is a delivery's state as pages name it ("retrying" is pending after a failed attempt).
func deliveryState(d deliveries.Delivery) (label, class string) {
	switch {
	case d.Retrying():
		return "retrying", "badge-warn"
	case d.State == delivery.Pending:
		return "pending", "badge-info"
	case d.State == delivery.InFlight:
		return "in flight", "badge-info"
	case d.State == delivery.Delivered:
		return "delivered", "badge-ok"
	}
	return string(d.State), "badge-bad"
}

// failingText says how the endpoint has been failing, from the start of its run of only failures and the
// number of attempts in it: "all" only when there were several, and never more than is known.
func failingText(since time.Time, attempts int, now time.Time) string {
	at := since.UTC().Format(timeLayout) + " (" + ago(now, since) + ")"
	switch {
	case attempts == 1:
		return "The last attempt failed at " + at + "."
	case attempts > 1:
		return fmt.Sprintf("All %d attempts since %s have failed.", attempts, at)
	}
	// Its attempts are gone (retention): the run's start is all that is known.
	return "No attempt has succeeded since " + at + "."
}

func (h *Handler) subscriptionView(s subscriptions.Subscription) templates.Subscription {
	v := templates.Subscription{
		ID: s.ID.String(), Href: "/subscriptions/" + s.ID.String(), URL: s.URL, Description: s.Description,
		EventTypes: s.EventTypes, State: s.State, StateClass: subStateClass(s.State), StateReason: s.DisabledReason,
		Created: h.timeView(s.CreatedAt),
	}
	for _, n := range s.HeaderNames {
		v.HeaderNames = append(v.HeaderNames, strings.ToLower(n))
	}
	if r := s.RateLimitPerSecond; r != nil {
		v.RateLimit = "at most " + templates.Plural(int64(*r), "request", "requests") + " a second"
	}
	now := h.now()
	switch c := s.Circuit; c.State {
	case delivery.CircuitOpen:
		v.Circuit = "Circuit open"
		if c.OpenedAt != nil {
			v.Circuit += " since " + c.OpenedAt.UTC().Format(timeLayout) + " (" + ago(now, *c.OpenedAt) + ")"
		}
		v.Circuit += ": too many failures in a row, so due deliveries wait instead of being sent (their deadline still runs)."
		if c.NextProbeAt != nil {
			v.Circuit += " One delivery will be tried at " + c.NextProbeAt.UTC().Format(timeLayout) + " (" + ago(now, *c.NextProbeAt) +
				"); if it succeeds, the rest follow."
		}
	case delivery.CircuitHalfOpen:
		v.Circuit = "Circuit half open: one delivery is being tried to see whether the endpoint is back; if it succeeds, the rest follow."
	}
	return v
}

// contract tells the delivery contract in plain words, from the server's actual settings.
func (h *Handler) contract() []string {
	p := h.policy
	out := []string{
		"We POST each event to your URL as JSON and sign it (Standard Webhooks: webhook-id, webhook-timestamp and webhook-signature headers).",
		"Any 2xx answer means delivered.",
		fmt.Sprintf("Timeouts (after %s), network errors and 408, 425, 429 and 5xx answers are retried: up to %d attempts in all, "+
			"the first retry after about %s, each wait doubling (±10 %%) up to %s, for up to %s after the event.",
			words(h.timeout), p.MaxAttempts, words(p.Base), words(p.MaxDelay), words(p.Window)),
		"A Retry-After header is honoured, up to " + words(p.MaxDelay) + ".",
		"Any other answer, redirects included (we do not follow them), is a permanent error: the delivery fails and is not retried.",
		fmt.Sprintf("Failed and expired deliveries stay here as dead; you can resend one by hand up to %d times.", h.maxManual),
		"Delivery is at least once and not in order: the same event can arrive more than once, so dedupe on webhook-id.",
	}
	if h.timeout <= 0 {
		out[2] = strings.Replace(out[2], "Timeouts (after 0 milliseconds)", "Timeouts", 1)
	}
	return out
}

func (h *Handler) deliveryRow(d deliveries.Delivery) templates.DeliveryRow {
	label, class := deliveryState(d)
	row := templates.DeliveryRow{
		ID: d.ID.String(), ShortID: shortID(d.ID), Href: "/deliveries/" + d.ID.String(), EventType: d.EventType,
		State: label, StateClass: class, Attempts: d.TotalAttempts, Created: h.timeView(d.CreatedAt), LastStatus: "—",
	}
	if d.LastStatus != nil {
		row.LastStatus, row.LastStatusText = strconv.Itoa(*d.LastStatus), delivery.StatusLine(*d.LastStatus)
	} else if d.LastError != nil && *d.LastError != "" {
		row.LastStatus = "no response"
	}
	if d.State == delivery.Pending {
		row.Next = h.timePtr(d.NextAttemptAt)
	}
	return row
}

func shortID(id uuid.UUID) string {
	s := id.String()
	return s[:8] + "…" + s[len(s)-4:]
}

// stateText says in words why a delivery is where it is.
func (h *Handler) stateText(d deliveries.Detail, subState string) string {
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
		return fmt.Sprintf("expired: past the %s window while still failing (last: %s).", words(h.policy.Window), last())
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
			s += "next attempt at " + d.NextAttemptAt.UTC().Format(timeLayout) + " (" + ago(h.now(), *d.NextAttemptAt) + ")."
		}
		if subState == subscriptions.Paused {
			s += " The subscription is paused: it waits until you resume it."
		}
		return s
	}
	s := "pending: waiting for its first attempt"
	if d.NextAttemptAt != nil {
		s += ", due at " + d.NextAttemptAt.UTC().Format(timeLayout) + " (" + ago(h.now(), *d.NextAttemptAt) + ")"
	}
	s += "."
	if subState == subscriptions.Paused {
		s += " The subscription is paused: it waits until you resume it."
	}
	return s
}

// headersView lists the request's headers, sorted. The stored ones carry no secrets (custom headers are
// never stored); the signature is shown shortened all the same.
func headersView(hd map[string]string) []templates.KV {
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

// prettyJSON indents a JSON body; anything else is shown as is.
func prettyJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

func (h *Handler) attemptsView(as []deliveries.Attempt) []templates.Attempt {
	out := make([]templates.Attempt, 0, len(as))
	for i, a := range as {
		v := templates.Attempt{
			N: a.Attempt, Started: h.timeView(a.StartedAt), Duration: span(time.Duration(a.DurationMs) * time.Millisecond),
			Status: "no response", Snippet: a.ResponseSnippet, Error: a.Error,
		}
		if v.N == 0 {
			v.N = i + 1
		}
		if a.Status != nil {
			v.Status = strconv.Itoa(*a.Status)
		}
		switch a.Outcome {
		case delivery.OutcomeDelivered:
			v.Class, v.Outcome = "ok", "delivered"
		case delivery.OutcomeFailed:
			v.Class, v.Outcome = "fail", "permanent error, not retried"
		default:
			v.Class, v.Outcome = "retry", "temporary error, retried"
		}
		if i+1 < len(as) {
			end := a.StartedAt.Add(time.Duration(a.DurationMs) * time.Millisecond)
			gap := max(as[i+1].StartedAt.Sub(end), 0)
			v.GapAfter = "waited " + span(gap) + " before the next attempt"
		}
		out = append(out, v)
	}
	return out
}
