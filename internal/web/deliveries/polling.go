package deliveries

import (
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// This file is the page of a polling subscription's delivery: nothing is sent to a polling subscription,
// so the page says that it waits to be pulled and committed by a consumer (no next attempt, no Retry
// now), or which consumer committed it and when, instead of a request and its answer.

// isPolling says whether a delivery is a polling subscription's: its subscription says so, or, once that
// was deleted, its URL (a webhook subscription always has one, a polling subscription never).
func isPolling(d deliveries.Detail, sub *subscriptions.Subscription) bool {
	if sub != nil {
		return sub.Type == subscriptions.Polling
	}
	return d.Endpoint.URL == ""
}

// committedBy is the consumer whose commit delivered the delivery, with that attempt ("" when none did).
func committedBy(d deliveries.Detail) (string, *deliveries.Attempt) {
	if d.State != delivery.Delivered {
		return "", nil
	}
	for i := len(d.Attempts) - 1; i >= 0; i-- {
		if a := d.Attempts[i]; a.Consumer != "" {
			return a.Consumer, &d.Attempts[i]
		}
	}
	return "", nil
}

// pollingAnswer rewords a polling delivery's page after answerFirst: its summary, state, timeline end
// and actions say what a consumer does, never what a sender would.
func (h *Handler) pollingAnswer(p *templates.DeliveryPage, tenantID uuid.UUID, d deliveries.Detail, subState string) {
	window := core.Words(h.Policy.Window)
	pd := &templates.PollingDelivery{PollPath: core.PollPath(tenantID, d.SubscriptionID), Window: window}
	name, at := committedBy(d)
	if at != nil {
		pd.CommittedBy, pd.CommittedAt = name, h.TimeView(at.StartedAt)
	}
	p.Polling = pd
	p.RetryNow = templates.Action{} // nothing is sent, so nothing can be sent sooner
	p.Summary.Response = ""
	switch {
	case d.Endpoint.Deleted():
		// answerFirst's words hold: no consumer can pull it any more.
	case d.State == delivery.Pending:
		p.State, p.StateClass = "pending", "badge-info" // a resent one is not retrying: nothing was sent
		p.Summary.Class, p.Summary.Headline = "waiting", "Waiting to be pulled"
		p.Summary.AtLabel, p.Summary.At = "", templates.Time{}
		p.Summary.Note = "A consumer pulls it (GET …/poll) and commits it; nothing is sent. Unless it is committed, it expires at " +
			p.GiveUp.Text + " (" + p.GiveUp.Ago + ")."
		p.StateText = "pending: waiting for a consumer of this polling subscription to pull and commit it."
		if subState == subscriptions.Paused || subState == subscriptions.Disabled {
			p.Summary.Headline += ": the subscription is " + subState
			p.Summary.Note = "Polls are refused until you resume the subscription; its deliveries wait. Its deadline still runs."
		}
		p.TimelineEnd, p.EndClass = "waits for a consumer to pull and commit it", "upcoming"
		p.Resend = templates.Action{}
	case d.State == delivery.Delivered && at != nil:
		p.Summary.Headline = "Committed by consumer " + name
		p.Summary.AtLabel, p.Summary.At = "", h.TimeView(at.StartedAt)
		p.StateText = "delivered: consumer " + name + " pulled it and committed its cursor at " +
			at.StartedAt.UTC().Format(core.TimeLayout) + "."
	case d.State == delivery.Expired:
		p.Summary.Note = "No consumer committed it within " + window + ". Resend puts it back after every cursor, so consumers pull it again."
		p.StateText = "expired: no consumer committed it within the " + window + " window."
	}
	if p.Resend.Enabled() && p.Resend.Note != "" {
		p.Resend.Note = "Resend puts it back after every consumer's cursor: each consumer pulls it again at its next poll. It counts toward the limit of retries by hand."
	}
	p.CanResend, p.ResendNote = p.Resend.Enabled(), p.Resend.Note
}
