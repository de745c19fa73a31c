package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// This file turns domain values into the templates' view models: words, numbers with units, times.

const TimeLayout = "2006-01-02 15:04:05 UTC"

func (h *Handler) TimeView(t time.Time) templates.Time {
	if t.IsZero() {
		return templates.Time{}
	}
	return templates.Time{ISO: t.UTC().Format(time.RFC3339), Text: t.UTC().Format(TimeLayout), Ago: Ago(h.Now(), t)}
}

func (h *Handler) TimePtr(t *time.Time) templates.Time {
	if t == nil {
		return templates.Time{}
	}
	return h.TimeView(*t)
}

// Ago says how far t is from now: "just now", "5 min ago", "in 2 h".
func Ago(now, t time.Time) string {
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

// Span writes a short duration: "120 ms", "5.2 s", "4 min 3 s", "2 h 5 min".
func Span(d time.Duration) string {
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

// Words writes a configured duration in words: "72 hours", "5 seconds", "200 milliseconds".
func Words(d time.Duration) string {
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
		return Span(d)
	}
	return unit(d.Milliseconds(), "millisecond")
}

func SecondsUp(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// CountText writes a capped count: "12", "1,000+".
func CountText(n int64, atLeast bool) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if atLeast {
		s += "+"
	}
	return s
}

func SubStateClass(state string) string {
	switch state {
	case subscriptions.Active:
		return "badge-ok"
	case subscriptions.Paused:
		return "badge-warn"
	}
	return "badge-bad"
}

// DeliveryState is a delivery's state as pages name it ("retrying" is pending after a failed attempt).
func DeliveryState(d deliveries.Delivery) (label, class string) {
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

// FailingText says how the endpoint has been failing, from the start of its run of only failures and the
// number of attempts in it: "all" only when there were several, and never more than is known.
func FailingText(since time.Time, attempts int, now time.Time) string {
	at := since.UTC().Format(TimeLayout) + " (" + Ago(now, since) + ")"
	switch {
	case attempts == 1:
		return "The last attempt failed at " + at + "."
	case attempts > 1:
		return fmt.Sprintf("All %d attempts since %s have failed.", attempts, at)
	}
	// Its attempts are gone (retention): the run's start is all that is known.
	return "No attempt has succeeded since " + at + "."
}

func (h *Handler) SubscriptionView(s subscriptions.Subscription) templates.Subscription {
	v := templates.Subscription{
		ID: s.ID.String(), Href: "/subscriptions/" + s.ID.String(), URL: s.URL, Description: s.Description,
		EventTypes: s.EventTypes, State: s.State, StateClass: SubStateClass(s.State), StateReason: s.DisabledReason,
		Created: h.TimeView(s.CreatedAt), HeaderNames: s.HeaderNames, Polling: s.Type == subscriptions.Polling,
	}
	if r := s.RateLimitPerSecond; r != nil {
		v.RateLimit = "at most " + templates.Plural(int64(*r), "request", "requests") + " a second"
	}
	v.Auth, v.Certificate, v.Schedule = AuthText(s.Auth), h.CertificateLine(s.TLSClientCertificate), h.ScheduleText(s.RetrySchedule)
	v.Ordered, v.OnDead = s.Ordered, s.OnDead
	if len(s.Filter) > 0 {
		v.Filter = PrettyJSON(s.Filter)
	}
	now := h.Now()
	switch c := s.Circuit; c.State {
	case delivery.CircuitOpen:
		v.Circuit = "Circuit open"
		if c.OpenedAt != nil {
			v.Circuit += " since " + c.OpenedAt.UTC().Format(TimeLayout) + " (" + Ago(now, *c.OpenedAt) + ")"
		}
		v.Circuit += ": too many failures in a row, so due deliveries wait instead of being sent (their deadline still runs)."
		if c.NextProbeAt != nil {
			v.Circuit += " One delivery will be tried at " + c.NextProbeAt.UTC().Format(TimeLayout) + " (" + Ago(now, *c.NextProbeAt) +
				"); if it succeeds, the rest follow."
		}
	case delivery.CircuitHalfOpen:
		v.Circuit = "Circuit half open: one delivery is being tried to see whether the endpoint is back; if it succeeds, the rest follow."
	}
	return v
}

// Contract tells the delivery contract in plain words, from the server's actual settings.
func (h *Handler) Contract() []string {
	p := h.Policy
	out := []string{
		"We POST each event to your URL as JSON and sign it (Standard Webhooks: webhook-id, webhook-timestamp and webhook-signature headers).",
		"Any 2xx answer means delivered.",
		fmt.Sprintf("Timeouts (after %s), network errors and 408, 425, 429 and 5xx answers are retried: up to %d attempts in all, "+
			"the first retry after about %s, each wait doubling (±10 %%) up to %s, for up to %s after the event.",
			Words(h.Timeout), p.MaxAttempts, Words(p.Base), Words(p.MaxDelay), Words(p.Window)),
		"A Retry-After header is honoured, up to " + Words(p.MaxDelay) + ".",
		"Any other answer, redirects included (we do not follow them), is a permanent error: the delivery fails and is not retried.",
		fmt.Sprintf("Failed and expired deliveries stay here as dead; you can resend one by hand up to %d times.", h.MaxManual),
		"Delivery is at least once and not in order: the same event can arrive more than once, so dedupe on webhook-id.",
	}
	if h.Timeout <= 0 {
		out[2] = strings.Replace(out[2], "Timeouts (after 0 milliseconds)", "Timeouts", 1)
	}
	return out
}
