package endpoints

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// This file is a polling subscription's part of its page: how its consumers pull and commit, each
// consumer's cursor and lag, and the words that replace a webhook endpoint's (its contract, why it fails).

// pollingPanel is the how-to-pull and consumers of a polling subscription; nil for a webhook one.
func (h *Handler) pollingPanel(ctx context.Context, tenantID uuid.UUID, s subscriptions.Subscription) (*templates.PollingPanel, error) {
	if s.Type != subscriptions.Polling {
		return nil, nil
	}
	base := "/api/v1/tenants/" + tenantID.String() + "/subscriptions/" + s.ID.String()
	p := &templates.PollingPanel{PollPath: core.PollPath(tenantID, s.ID), CommitPath: base + "/consumers/{name}/commit",
		ConsumersPath: base + "/consumers", Window: core.Words(h.Policy.Window), Paused: s.State != subscriptions.Active}
	if h.Polling == nil {
		return p, nil
	}
	consumers, err := h.Polling.Consumers(ctx, tenantID, s.ID)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	for _, c := range consumers {
		row := templates.ConsumerRow{Name: c.Name, Committed: c.CommittedAt != nil, LastCommit: h.TimePtr(c.CommittedAt),
			LastPoll: h.TimePtr(c.LastPolledAt), LagN: c.Lag, Lag: core.CountText(c.Lag, c.Lag >= polling.LagUpTo)}
		switch {
		case c.AtEventType != "" && c.AtCreatedAt != nil:
			row.CursorType = c.AtEventType
			row.CursorAt = templates.Time{ISO: c.AtCreatedAt.UTC().Format(time.RFC3339), Text: clockText(now, *c.AtCreatedAt)}
		case row.Committed:
			// The delivery at its cursor is no longer kept (retention): its position is all that is known.
			row.Cursor = "committed; the delivery at its cursor is no longer kept"
		}
		p.Consumers = append(p.Consumers, row)
	}
	return p, nil
}

// clockText writes a moment as a cursor is told: "14:02:11 UTC" today, else with its date.
func clockText(now, t time.Time) string {
	now, t = now.UTC(), t.UTC()
	if y, m, d := t.Date(); now.Year() == y && now.Month() == m && now.Day() == d {
		return t.Format("15:04:05 UTC")
	}
	return t.Format(core.TimeLayout)
}

// pollingContract tells how a polling subscription's deliveries are pulled, from the server's settings,
// in place of the webhook contract (nothing is POSTed, nothing is retried).
func (h *Handler) pollingContract() []string {
	return []string{
		"Nothing is sent: each event this subscription receives becomes a delivery that waits, pending, until a consumer pulls and commits it.",
		"A poll answers up to 500 deliveries after the consumer's committed cursor, oldest first, with the event's id, type, time and payload, and the cursor to commit.",
		"A commit makes every delivery up to its cursor delivered, with an attempt naming the consumer. What was pulled but not committed comes again at the next poll: delivery is at least once, so dedupe on the event id.",
		"A new consumer starts at the oldest delivery not yet delivered. A cursor never passes a delivery published before it but committed to the database after the poll.",
		fmt.Sprintf("A delivery not committed within %s of its event expires and stays here as dead; resending it (up to %d times by hand) puts it after every cursor, so consumers get it again.",
			core.Words(h.Policy.Window), h.MaxManual),
		"While deliveries wait and nobody commits, the subscription is failing: the incident rules (emails, auto-disable) apply as to a failing endpoint.",
	}
}

// pollingFailingText says since when a polling subscription has had deliveries waiting and no commit.
func pollingFailingText(since, now time.Time) string {
	return "Nothing has been committed since " + since.UTC().Format(core.TimeLayout) + " (" + core.Ago(now, since) +
		") while deliveries wait: no consumer is pulling them."
}

// failingText is FailingText, or its polling words for a polling subscription.
func (h *Handler) failingText(s subscriptions.Subscription, attempts int) string {
	if s.Type == subscriptions.Polling {
		return pollingFailingText(*s.FailingSince, h.Now())
	}
	return core.FailingText(*s.FailingSince, attempts, h.Now())
}

// pollingHealth words a polling subscription's health card: its attempts are its consumers' commits
// (each one a success, taking no time), so no latency is shown and the counts say what they are.
func pollingHealth(v *templates.Subscription) {
	if !v.Polling {
		return
	}
	v.Health.P50, v.Health.P95 = "—", "—"
	v.Health.Outcomes = slices.DeleteFunc(v.Health.Outcomes, func(o templates.Outcome) bool { return o.TestID == "retrying-count" })
	for i, o := range v.Health.Outcomes {
		switch o.TestID {
		case "delivered-count":
			v.Health.Outcomes[i].Label = "committed"
		case "pending-count":
			v.Health.Outcomes[i].Label = "waiting to be pulled"
		}
	}
	v.Health.OutcomesNote = "Committed: the deliveries consumers committed in the " + v.Health.RangeLabel +
		". Dead, waiting and in flight: this subscription's deliveries in that state now, as its list counts them."
}

// applyType puts the form's type into in. A new polling subscription is created as one, without a URL;
// on edit the stored type stays (the form does not offer to change it). For a polling subscription a
// sending field is sent only when filled in, so the service refuses it beside its field ("this setting
// does not apply"), while what the form posts by default (an empty URL, no ordering) is no setting.
func (f endpointForm) applyType(in *subscriptions.Input, sub *subscriptions.Subscription) {
	polling := f.typ == subscriptions.Polling
	if sub != nil {
		polling = sub.Type == subscriptions.Polling
	} else if f.typ != subscriptions.Webhook {
		typ := f.typ // polling, or a type the service refuses beside the choice
		in.Type = &typ
	}
	if !polling {
		return
	}
	if f.url == "" {
		in.URL = nil
	}
	if in.Ordered != nil && !*in.Ordered {
		in.Ordered = nil
		if in.OnDead != nil && *in.OnDead == subscriptions.OnDeadSkip {
			in.OnDead = nil
		}
	}
}

// pollingRefusal puts a refusal of a sending field at the top of a stored polling subscription's form,
// which has no such field to show it beside (only a post no form makes can carry one).
func pollingRefusal(p *templates.EndpointFormPage, field *subscriptions.FieldError) {
	if !p.Type.Fixed || !p.Type.Polling() {
		return
	}
	switch field.Field {
	case "description", "event_types", "filter":
	default:
		p.FormError = field.Message
	}
}
