package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/web/templates"
)

// stepData is what incidents.Service.tell puts in a notification's data. Only these fields are read, so
// nothing else that may be added there later can leak into a message by accident.
type stepData struct {
	URL          string     `json:"url"`
	Description  string     `json:"description"`
	FailingSince time.Time  `json:"failing_since"`
	OpenedAt     time.Time  `json:"opened_at"`
	EndedAt      *time.Time `json:"ended_at"`
	Waiting      int        `json:"waiting"`
	FirstExpiry  *time.Time `json:"first_expiry"`
	Link         string     `json:"link"`
	Expired      int        `json:"expired"`
	LastEvents   []struct {
		EventID   string `json:"event_id"`
		EventType string `json:"event_type"`
	} `json:"last_events"`
}

// message is one email's content.
type message struct {
	Subject string
	Text    string
	HTML    string
}

// permanentError marks a notification that can never be sent as it is (unknown kind, unreadable data):
// retrying would not help, so it is given up at once.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// compose writes the message for one notification.
func compose(ctx context.Context, kind string, raw []byte, brand string) (message, error) {
	var v templates.Email
	var err error
	if kind == incidents.KindCertificateExpiring {
		var d certificateData
		if err := json.Unmarshal(raw, &d); err != nil {
			return message{}, permanentError{fmt.Errorf("notification data: %w", err)}
		}
		v = d.view(brand)
	} else {
		var d stepData
		if err := json.Unmarshal(raw, &d); err != nil {
			return message{}, permanentError{fmt.Errorf("notification data: %w", err)}
		}
		if v, err = view(kind, d, brand); err != nil {
			return message{}, permanentError{err}
		}
	}
	var html bytes.Buffer
	if err := templates.IncidentEmail(v).Render(ctx, &html); err != nil {
		return message{}, fmt.Errorf("render html: %w", err)
	}
	return message{Subject: v.Subject, Text: plainText(v), HTML: html.String()}, nil
}

// view words one step. The endpoint is named by its description when it has one, its URL otherwise;
// brand is the product's name (HOOKLINE_BRAND_NAME).
func view(kind string, d stepData, brand string) (templates.Email, error) {
	if d.polling() {
		return pollingView(kind, d, brand)
	}
	v := templates.Email{LinkLabel: "Open the endpoint in " + brand,
		Footer: "You get this email because you are a user of this " + brand + " account. " + brand + " sends one email per step of an " +
			"incident (it opens, a day later, before deliveries expire, when they expired, when the endpoint recovers), " +
			"never one per event."}
	v.Facts = []templates.EmailFact{{Label: "Endpoint", Value: d.endpoint()}}
	if d.Description != "" {
		v.Facts = append(v.Facts, templates.EmailFact{Label: "Description", Value: d.Description})
	}
	v.Facts = append(v.Facts, templates.EmailFact{Label: "Failing since", Value: when(d.FailingSince)})
	if err := d.words(kind, &v); err != nil {
		return v, err
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

// safeLink is the dashboard link of a message: it comes from HOOKLINE_PUBLIC_URL (checked to be http or
// https at start); anything else is dropped rather than put in an href.
func safeLink(link string) string {
	if u, err := url.Parse(link); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return link
	}
	return ""
}

// endpoint is the endpoint's URL as an email may show it.
func (d stepData) endpoint() string { return safeURL(d.URL) }

// name is the endpoint's description, else its URL.
func (d stepData) name() string {
	if name := strings.TrimSpace(d.Description); name != "" {
		return name
	}
	return d.endpoint()
}

// words sets the subject, heading and paragraphs of a step (and the facts only some steps have).
func (d stepData) words(kind string, v *templates.Email) error {
	endpoint, name, since := d.endpoint(), d.name(), when(d.FailingSince)
	failing := "Every delivery attempt to " + endpoint + " has failed since " + since + "."
	switch kind {
	case incidents.KindOpened:
		v.Subject = "Webhook endpoint failing: " + name
		v.Heading = "Your webhook endpoint is failing"
		v.Paragraphs = []string{failing, d.waiting(), d.expiry()}
	case incidents.KindDay:
		v.Subject = "Webhook endpoint still failing after 24 hours: " + name
		v.Heading = "Your webhook endpoint has been failing for more than 24 hours"
		v.Paragraphs = []string{failing, d.waiting(), d.expiry()}
	case incidents.KindExpiring:
		v.Subject = "Webhook deliveries expiring soon: " + name
		v.Heading = "Deliveries to your failing endpoint expire soon"
		v.Paragraphs = []string{failing, d.waiting(), d.expiry(), "Fix the endpoint before then to receive them."}
	case incidents.KindExpired:
		v.Subject = "Webhook deliveries lost: " + name
		v.Heading = "Deliveries to your failing endpoint expired"
		d.expired(v)
	case incidents.KindEnded:
		v.Subject = "Webhook endpoint recovered: " + name
		v.Heading = "Your webhook endpoint works again"
		d.ended(v)
	default:
		return fmt.Errorf("unknown notification kind %q", kind)
	}
	return nil
}

// waiting says how many deliveries wait.
func (d stepData) waiting() string {
	switch d.Waiting {
	case 0:
		return "No deliveries are waiting right now."
	case 1:
		return "1 delivery is waiting and is retried automatically."
	default:
		return fmt.Sprintf("%d deliveries are waiting and are retried automatically.", d.Waiting)
	}
}

// expiry says when the first waiting delivery expires, if one waits.
func (d stepData) expiry() string {
	if d.FirstExpiry == nil || d.Waiting == 0 {
		return ""
	}
	return "If the endpoint still fails, the first of them expires at " + when(*d.FirstExpiry) +
		" and is then dead-lettered: no longer retried, but kept so you can resend it."
}

// expired words the summary of what expired, with the last events lost.
func (d stepData) expired(v *templates.Email) {
	n := "deliveries have"
	if d.Expired == 1 {
		n = "delivery has"
	}
	v.Paragraphs = []string{
		fmt.Sprintf("%d %s expired without reaching %s, which has failed since %s.", d.Expired, n, d.endpoint(), when(d.FailingSince)),
		"They are dead-lettered: no longer retried, but kept. Once the endpoint works, you can resend them from the " +
			"dashboard (Recover on the endpoint's page).",
		d.waiting(),
	}
	if len(d.LastEvents) > 0 {
		v.Paragraphs = append(v.Paragraphs, "The last events that were not delivered:")
	}
	for _, e := range d.LastEvents {
		v.Lost = append(v.Lost, templates.EmailEvent{ID: e.EventID, Type: e.EventType})
	}
	v.LostMore = max(d.Expired-len(d.LastEvents), 0)
}

// ended words the recovery.
func (d stepData) ended(v *templates.Email) {
	ended := "now"
	if d.EndedAt != nil {
		ended = when(*d.EndedAt)
	}
	p := "No deliveries were waiting."
	switch {
	case d.Waiting == 1:
		p = "The delivery that waited is being sent now."
	case d.Waiting > 1:
		p = fmt.Sprintf("The %d deliveries that waited are being sent now.", d.Waiting)
	}
	v.Paragraphs = []string{d.endpoint() + " answered successfully (" + ended + ") after failing since " + when(d.FailingSince) + ".", p}
	v.Facts = append(v.Facts, templates.EmailFact{Label: "Recovered", Value: ended})
}

// plainText lays the view out as the text/plain part.
func plainText(v templates.Email) string {
	var b strings.Builder
	b.WriteString(v.Heading + "\n\n")
	for _, p := range v.Paragraphs {
		b.WriteString(p + "\n\n")
	}
	width := 0
	for _, f := range v.Facts {
		width = max(width, len(f.Label))
	}
	for _, f := range v.Facts {
		fmt.Fprintf(&b, "%-*s  %s\n", width+1, f.Label+":", f.Value)
	}
	if len(v.Lost) > 0 {
		b.WriteString("\n")
		for _, e := range v.Lost {
			fmt.Fprintf(&b, "- %s  %s\n", e.ID, e.Type)
		}
		if v.LostMore > 0 {
			fmt.Fprintf(&b, "and %d more.\n", v.LostMore)
		}
	}
	if v.Link != "" {
		b.WriteString("\n" + v.LinkLabel + ":\n" + v.Link + "\n")
	}
	if v.Footer != "" {
		b.WriteString("\n-- \n" + v.Footer + "\n")
	}
	return b.String()
}

// safeURL shows an endpoint URL without what may be a credential: user info is dropped and a query
// string (endpoints often carry a token there) becomes "?…". Email is a less guarded place than the
// dashboard, and the recipient knows their endpoint by host and path.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(endpoint)"
	}
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		out += "?…"
	}
	return out
}

// when writes a time in UTC to the minute: recipients are anywhere, and the dashboard link shows local times.
func when(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func nonEmpty(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
