package deliveries

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// This file is the delivery page's answer first: its summary, Retry now and Resend with why they are
// disabled, and what lets the page follow an unfinished delivery.

// answerFirst fills the summary, the actions and the live-update fields of a delivery's page, and orders
// its attempts newest first.
// wait is how long until the subscription's resend budget allows another retry by hand; circuit is the
// subscription's circuit breaker.
func (h *Handler) answerFirst(p *templates.DeliveryPage, d deliveries.Detail, subState string, circuit subscriptions.Circuit, admin bool, wait time.Duration) {
	p.Final = d.State == delivery.Delivered || d.State.Dead()
	p.Live = !p.Final && !d.Discarded
	if p.Live {
		p.RefreshWithoutScript = 5
	}
	p.Version = fmt.Sprintf("%s-%d-%d-%d", d.State, d.TotalAttempts, d.ManualRetries, d.UpdatedAt.UnixNano())
	p.RequestHeading = "Request as sent"
	if len(d.Attempts) == 0 {
		p.RequestHeading = "Request to be sent"
	}
	for k, v := range d.Request.Headers {
		if strings.EqualFold(k, "webhook-signature") {
			p.Signature = v
		}
	}
	switch {
	case d.Endpoint.Deleted() && (d.State == delivery.Pending || d.State == delivery.InFlight):
		p.TimelineEnd, p.EndClass = "no more attempts: its subscription was deleted", "end"
	case d.State == delivery.Pending && d.NextAttemptAt != nil:
		p.TimelineEnd, p.EndClass = "next attempt at "+d.NextAttemptAt.UTC().Format(core.TimeLayout)+" ("+core.Ago(h.Now(), *d.NextAttemptAt)+")", "upcoming"
	case d.State == delivery.InFlight:
		p.TimelineEnd, p.EndClass = "an attempt is being made now", "upcoming"
	case d.State.Dead():
		p.TimelineEnd, p.EndClass = "gave up: "+string(d.State), "end"
	}
	p.Summary = h.summary(d, subState)
	p.Resend, p.RetryNow = h.actions(d, admin)
	if held := h.circuitHold(circuit); held != "" && p.RetryNow.Enabled() {
		p.RetryNow.Reason = held
	}
	if wait > 0 {
		reason := fmt.Sprintf("Too many retries by hand for this subscription right now: try again in %d s.", max(core.SecondsUp(wait), 1))
		for _, a := range []*templates.Action{&p.Resend, &p.RetryNow} {
			if a.Enabled() {
				a.Reason = reason
			}
		}
	}
	p.CanResend, p.ResendNote = p.Resend.Enabled(), p.Resend.Note

	// Newest first: each attempt says how long after the one before it was made.
	for i := 1; i < len(p.Attempts); i++ {
		p.Attempts[i].GapBefore = strings.Replace(p.Attempts[i-1].GapAfter, " before the next attempt", " after attempt "+strconv.Itoa(p.Attempts[i-1].N), 1)
	}
	for i, j := 0, len(p.Attempts)-1; i < j; i, j = i+1, j-1 {
		p.Attempts[i], p.Attempts[j] = p.Attempts[j], p.Attempts[i]
	}
}

// summary says in one glance what happened to a delivery and what happens next.
func (h *Handler) summary(d deliveries.Detail, subState string) templates.Summary {
	var s templates.Summary
	s.Response = lastResponse(d)
	now := h.Now()
	switch {
	case d.State == delivery.Delivered:
		s.Class = "ok"
		s.Headline = "Delivered on the first attempt"
		if d.TotalAttempts > 1 {
			s.Headline = fmt.Sprintf("Delivered in %d attempts", d.TotalAttempts)
		}
		s.At = h.TimePtr(d.LastAttemptAt)
	case d.State.Dead():
		// The moment it died, as its age alone ("5 s ago"): "since 5 s ago" read oddly.
		s.Class, s.Headline, s.At = "dead", "Dead", h.TimePtr(d.DeadAt)
		if d.DeadReason != nil {
			s.Headline += ": " + delivery.DeadReasonText(*d.DeadReason, d.LastStatus)
		}
		if d.DeadAt == nil {
			s.At = h.TimePtr(d.LastAttemptAt)
		}
		s.Note = "Nothing more is tried. Fix the endpoint, then Resend."
		if d.Discarded {
			s.Note = ""
		}
		if d.Endpoint.Deleted() {
			s.Note = "Nothing more is tried."
		}
	case d.State == delivery.InFlight:
		s.Class, s.Headline = "waiting", "Being sent now"
	case d.Retrying():
		s.Class, s.Headline = "retry", "Retrying"
		s.AtLabel, s.At = "next attempt", h.TimePtr(d.NextAttemptAt)
		if d.NextAttemptAt != nil && !d.NextAttemptAt.After(now) {
			s.AtLabel = "due"
		}
	default:
		s.Class, s.Headline = "waiting", "Not tried yet"
		s.AtLabel, s.At = "due", h.TimePtr(d.NextAttemptAt)
	}
	if d.Endpoint.Deleted() && (d.State == delivery.Pending || d.State == delivery.InFlight) {
		// Not retrying any more, whatever its schedule says: nothing is sent to a deleted subscription.
		s.Class, s.Headline = "dead", "No more attempts: its subscription was deleted"
		s.AtLabel, s.At, s.Note = "", templates.Time{}, ""
		return s
	}
	if d.State == delivery.Pending && subState == subscriptions.Paused {
		s.Headline += ": waiting for the subscription to be resumed"
		s.AtLabel, s.At = "", templates.Time{}
		s.Note = "The subscription is paused: nothing is sent until you resume it. Its deadline still runs."
	}
	return s
}

// lastResponse is the last attempt's answer: "Last response 400: {…}", or why there was none.
func lastResponse(d deliveries.Detail) string {
	if len(d.Attempts) == 0 {
		return ""
	}
	a := d.Attempts[len(d.Attempts)-1]
	if a.Status == nil {
		if a.Error != "" {
			return "No response: " + clip(a.Error, 200)
		}
		return "No response"
	}
	s := "Last response " + delivery.StatusLine(*a.Status)
	if body := clip(strings.Join(strings.Fields(a.ResponseSnippet), " "), 200); body != "" {
		s += ": " + body
	}
	return s
}

// clip shortens s to at most n characters, with an ellipsis when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// endpointDeletedText says that a delivery's subscription was deleted, naming it (by its description, when
// it had one, then its URL and id), and what that means for the delivery: nothing is sent to it any more, so
// it cannot be resent, and one still waiting ends as dead.
func endpointDeletedText(d deliveries.Detail, description string) string {
	s := "Its subscription " + httpx.RedactURL(d.Endpoint.URL) + " (" + d.SubscriptionID.String() + ") was deleted"
	if description != "" {
		s = "Its subscription " + description + " (" + httpx.RedactURL(d.Endpoint.URL) + ", " + d.SubscriptionID.String() + ") was deleted"
	}
	if d.Endpoint.URL == "" { // a polling subscription: no URL to name it by
		s = "Its polling subscription " + strings.TrimSpace(description+" ("+d.SubscriptionID.String()+")") + " was deleted"
	}
	if d.Endpoint.DeletedAt != nil {
		s += " on " + d.Endpoint.DeletedAt.UTC().Format(core.TimeLayout)
	}
	s += ": nothing is sent to it any more, so this delivery cannot be resent."
	if !d.State.Dead() && d.State != delivery.Delivered {
		s += " It ends as dead (reason: subscription deleted) within seconds."
	}
	return s
}

// actions says which of Resend and Retry now a delivery's page offers, and why one is disabled. A deleted
// subscription's delivery gets neither: nothing would ever send it (the page says why instead).
func (h *Handler) actions(d deliveries.Detail, admin bool) (resend, retryNow templates.Action) {
	if d.Endpoint.Deleted() {
		return resend, retryNow
	}
	capped := fmt.Sprintf("Retried by hand %d of %d times, the most allowed: it cannot be retried again from here.", d.ManualRetries, h.MaxManual)
	if d.Retrying() {
		retryNow.Show = true
		switch deliveries.CheckRetryNow(d.Delivery, d.Endpoint, admin, h.MaxManual) {
		case deliveries.RetryCapped:
			retryNow.Reason = capped
		case deliveries.RetryDiscarded:
			retryNow.Reason = "It was discarded."
		default:
			retryNow.Note = "Retry now sends it right away instead of at the next attempt; it counts toward the limit of retries by hand."
		}
		return resend, retryNow
	}
	resend.Show = true
	switch deliveries.CheckRetry(d.Delivery, d.Endpoint, admin, h.MaxManual) {
	case deliveries.RetryDiscarded:
		resend.Reason = "It was discarded and cannot be resent."
	case deliveries.RetryQueued:
		resend.Reason = "It is queued already; Resend is for delivered, failed and expired deliveries."
	case deliveries.RetryCapped:
		resend.Reason = capped
	default:
		resend.Note = "Resend puts it back in the queue with a fresh schedule; it counts toward the limit of retries by hand."
	}
	return resend, retryNow
}

// circuitHold is deliveries.CircuitHold in the page's words: while the subscription's circuit is open
// nothing but its probe is sent, so the API refuses Retry now and the page disables it with this reason.
func (h *Handler) circuitHold(c subscriptions.Circuit) string {
	switch c.State {
	case delivery.CircuitOpen:
		s := "The endpoint's circuit is open after failures in a row: nothing is sent to it until its probe"
		if c.NextProbeAt != nil {
			s += " (" + core.Ago(h.Now(), *c.NextProbeAt) + ")"
		}
		return s + ", and Retry now cannot skip that wait."
	case delivery.CircuitHalfOpen:
		return "A probe attempt is being made to the endpoint, whose circuit is open: nothing else is sent until it answers, and Retry now cannot skip that wait."
	}
	return ""
}
