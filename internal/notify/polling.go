package notify

import (
	"fmt"
	"strings"

	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/web/templates"
)

// A polling subscription's incident is not an endpoint failing: nothing is sent to it, and it "fails"
// while deliveries wait and no consumer commits them (internal/polling's upkeep). Its emails say so, and
// name it by its description, never by a URL it does not have.

// polling reports whether the step is a polling subscription's: it has no URL (a webhook subscription
// always has one), which also holds for notifications queued before polling subscriptions existed.
func (d stepData) polling() bool { return d.URL == "" }

// pollingName is what an email calls a polling subscription.
func (d stepData) pollingName() string {
	if name := strings.TrimSpace(d.Description); name != "" {
		return name
	}
	return templates.PollingName
}

// pollingView words one step of a polling subscription's incident.
func pollingView(kind string, d stepData, brand string) (templates.Email, error) {
	v := templates.Email{LinkLabel: "Open the subscription in " + brand,
		Footer: "You get this email because you are a user of this " + brand + " account. " + brand + " sends one email per step of an " +
			"incident (it opens, a day later, before deliveries expire, when they expired, when it recovers), never one per event."}
	name, since := d.pollingName(), when(d.FailingSince)
	v.Facts = []templates.EmailFact{{Label: "Subscription", Value: name + " (polling: pulled by your consumers)"},
		{Label: "Nothing committed since", Value: since}}
	idle := "No consumer has committed a delivery of " + name + " since " + since + ", while deliveries wait to be pulled."
	switch kind {
	case incidents.KindOpened:
		v.Subject = "Polling subscription not pulled: " + name
		v.Heading = "Nobody is pulling your polling subscription"
		v.Paragraphs = []string{idle, d.pollingWaiting(), d.pollingExpiry()}
	case incidents.KindDay:
		v.Subject = "Polling subscription not pulled for 24 hours: " + name
		v.Heading = "Nobody has pulled your polling subscription for more than 24 hours"
		v.Paragraphs = []string{idle, d.pollingWaiting(), d.pollingExpiry()}
	case incidents.KindExpiring:
		v.Subject = "Polled deliveries expiring soon: " + name
		v.Heading = "Deliveries nobody pulled expire soon"
		v.Paragraphs = []string{idle, d.pollingWaiting(), d.pollingExpiry(), "Start a consumer (poll and commit) before then to receive them."}
	case incidents.KindExpired:
		v.Subject = "Polled deliveries lost: " + name
		v.Heading = "Deliveries nobody pulled expired"
		n := "deliveries have"
		if d.Expired == 1 {
			n = "delivery has"
		}
		v.Paragraphs = []string{
			fmt.Sprintf("%d %s expired without being committed by a consumer of %s (nothing committed since %s).", d.Expired, n, name, since),
			"They are dead-lettered, but kept: once a consumer pulls again, you can resend them from the dashboard (Recover on the subscription's page).",
			d.pollingWaiting(),
		}
		if len(d.LastEvents) > 0 {
			v.Paragraphs = append(v.Paragraphs, "The last events that were not delivered:")
		}
		for _, e := range d.LastEvents {
			v.Lost = append(v.Lost, templates.EmailEvent{ID: e.EventID, Type: e.EventType})
		}
		v.LostMore = max(d.Expired-len(d.LastEvents), 0)
	case incidents.KindEnded:
		ended := "now"
		if d.EndedAt != nil {
			ended = when(*d.EndedAt)
		}
		v.Subject = "Polling subscription pulled again: " + name
		v.Heading = "Your polling subscription is being pulled again"
		v.Paragraphs = []string{"A consumer committed deliveries of " + name + " (" + ended + ") after none had since " + since + "."}
		v.Facts = append(v.Facts, templates.EmailFact{Label: "Recovered", Value: ended})
	default:
		return v, fmt.Errorf("unknown notification kind %q", kind)
	}
	v.Paragraphs = nonEmpty(v.Paragraphs)
	if kind != incidents.KindEnded {
		v.Facts = append(v.Facts, templates.EmailFact{Label: "Waiting deliveries", Value: fmt.Sprint(d.Waiting)})
		if d.FirstExpiry != nil && d.Waiting > 0 {
			v.Facts = append(v.Facts, templates.EmailFact{Label: "First expiry", Value: when(*d.FirstExpiry)})
		}
	}
	v.Link = safeLink(d.Link)
	return v, nil
}

// pollingWaiting says how many deliveries wait to be pulled.
func (d stepData) pollingWaiting() string {
	switch d.Waiting {
	case 0:
		return "No deliveries are waiting right now."
	case 1:
		return "1 delivery is waiting to be pulled and committed."
	default:
		return fmt.Sprintf("%d deliveries are waiting to be pulled and committed.", d.Waiting)
	}
}

// pollingExpiry says when the first waiting delivery expires, if one waits.
func (d stepData) pollingExpiry() string {
	if d.FirstExpiry == nil || d.Waiting == 0 {
		return ""
	}
	return "If no consumer commits it, the first of them expires at " + when(*d.FirstExpiry) +
		" and is then dead-lettered: kept, so you can resend it."
}
