package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/web/templates"
)

// incidentListSize is how many incidents a subscription's page lists.
const incidentListSize = 10

// incidentBanners are a tenant's open incidents as the banner tells them: one query (OpenOf) per page.
// A failure to read them is logged and shows no banner: the page itself must not fail for it.
func (h *Handler) incidentBanners(r *http.Request, tenantID uuid.UUID) []templates.IncidentBanner {
	if h.incidents == nil {
		return nil
	}
	open, err := h.incidents.OpenOf(r.Context(), tenantID)
	if err != nil {
		httpx.Logger(r.Context()).Error("incident banner", "err", err, "tenant_id", tenantID)
		return nil
	}
	now := h.now()
	out := make([]templates.IncidentBanner, 0, len(open))
	for _, in := range open {
		name := in.Description
		if name == "" {
			name = in.SubscriptionURL
		}
		out = append(out, templates.IncidentBanner{
			Href: "/subscriptions/" + in.SubscriptionID.String(), Name: name, Text: bannerText(now, in),
		})
	}
	return out
}

// bannerText is what follows "Your endpoint <name>": since when it fails, what waits and when the first
// of it expires (the customer's deadline to fix it before anything is lost).
func bannerText(now time.Time, in incidents.Incident) string {
	s := fmt.Sprintf("has failed every attempt since %s (%s).", clock(now, in.FailingSince), roughly(now.Sub(in.FailingSince)))
	expiry := ""
	if in.FirstExpiry != nil {
		if d := in.FirstExpiry.Sub(now); d > 0 {
			expiry = "in " + roughly(d)
		} else {
			expiry = "any moment now"
		}
	}
	switch {
	case in.Waiting == 0:
		s += " No deliveries are waiting."
	case in.Waiting == 1 && expiry != "":
		s += " 1 delivery is waiting; it expires " + expiry + "."
	case in.Waiting == 1:
		s += " 1 delivery is waiting."
	case expiry != "":
		s += fmt.Sprintf(" %d deliveries are waiting; the first expires %s.", in.Waiting, expiry)
	default:
		s += fmt.Sprintf(" %d deliveries are waiting.", in.Waiting)
	}
	return s
}

// clock writes a moment for a sentence: "09:12 UTC" today, "Jan 2, 09:12 UTC" another day.
func clock(now, t time.Time) string {
	now, t = now.UTC(), t.UTC()
	if y, m, d := t.Date(); now.Year() == y && now.Month() == m && now.Day() == d {
		return t.Format("15:04 UTC")
	}
	if now.Year() == t.Year() {
		return t.Format("Jan 2, 15:04 UTC")
	}
	return t.Format("Jan 2 2006, 15:04 UTC")
}

// roughly writes a length of time as a person would say it: "under a minute", "45 min", "3 h", "2 days".
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// downFor writes how long an incident lasted, to the minute: "45 min", "3 h 12 min", "2 days 5 h".
func downFor(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < 48*time.Hour:
		return span(d.Truncate(time.Minute))
	}
	days, hours := int(d.Hours())/24, int(d.Hours())%24
	if hours == 0 {
		return fmt.Sprintf("%d days", days)
	}
	return fmt.Sprintf("%d days %d h", days, hours)
}

// incidentRows are a subscription's latest incidents for its page, newest first, with what was told.
func (h *Handler) incidentRows(r *http.Request, tenantID, subID uuid.UUID) ([]templates.IncidentRow, error) {
	if h.incidents == nil {
		return nil, nil
	}
	list, err := h.incidents.OfSubscription(r.Context(), tenantID, subID, incidentListSize)
	if err != nil {
		return nil, err
	}
	now := h.now()
	out := make([]templates.IncidentRow, 0, len(list))
	for _, in := range list {
		row := templates.IncidentRow{ID: in.ID.String(), Opened: h.timeView(in.OpenedAt), Failing: h.timeView(in.FailingSince),
			Ended: h.timePtr(in.EndedAt), Ongoing: in.EndedAt == nil}
		end := now
		if in.EndedAt != nil {
			end = *in.EndedAt
		}
		row.Duration = downFor(end.Sub(in.FailingSince))
		step := func(kind, label string) {
			row.Steps = append(row.Steps, stepView(now, label, in.Notices[kind]))
		}
		step(incidents.KindOpened, "opened")
		if in.DayToldAt != nil {
			step(incidents.KindDay, "after 24 h")
		}
		if in.ExpiringToldAt != nil {
			step(incidents.KindExpiring, "before expiry")
		}
		if in.ExpiredToldAt != nil {
			if in.ExpiredCount == 1 {
				step(incidents.KindExpired, "1 delivery expired")
			} else {
				step(incidents.KindExpired, fmt.Sprintf("%d deliveries expired", in.ExpiredCount))
			}
		}
		if in.EndedAt != nil {
			step(incidents.KindEnded, "ended")
		}
		out = append(out, row)
	}
	return out, nil
}

// stepView says what a step of an incident actually sent, from its outbox rows and its operator
// notification's delivery: never "told" on the strength of the claim alone.
func stepView(now time.Time, label string, n incidents.StepNotice) templates.IncidentStep {
	st := templates.IncidentStep{Step: label}
	var parts []string
	if n.Sent > 0 {
		who := "1 person"
		if n.Sent > 1 {
			who = fmt.Sprintf("%d people", n.Sent)
		}
		at := ""
		if n.LastSentAt != nil {
			at = " at " + clockTime(now, *n.LastSentAt)
		}
		parts = append(parts, "emailed "+who+at)
	}
	if n.Pending > 0 {
		st.EmailBad = true
		if n.LastError == "" {
			parts = append(parts, "email queued")
		} else {
			parts = append(parts, "email retrying (last error: "+n.LastError+")")
		}
	}
	if n.SetAside > 0 {
		st.EmailBad = true
		if n.NoMailServer {
			parts = append(parts, "not emailed: no mail server configured")
		} else {
			parts = append(parts, "not emailed: gave up ("+n.LastError+")")
		}
	}
	if len(parts) == 0 {
		// No outbox rows: the account had no users to email (or the rows were pruned long after).
		parts, st.EmailBad = append(parts, "no email on record"), true
	}
	st.Email = strings.Join(parts, "; ")
	switch n.Operator {
	case "":
	case string(delivery.Delivered):
		st.Operator = "operator notified"
	case string(delivery.Failed), string(delivery.Expired):
		st.Operator, st.OperatorBad = "operator notification failed", true
	case "gone":
		st.Operator, st.OperatorBad = "operator notification no longer on record", true
	default:
		st.Operator, st.OperatorBad = "operator notification pending", true
	}
	return st
}

// clockTime is a moment as "14:02 UTC", with the date when it is not today's.
func clockTime(now, t time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Format("2006-01-02") == now.Format("2006-01-02") {
		return t.Format("15:04 UTC")
	}
	return t.Format("2006-01-02 15:04 UTC")
}
