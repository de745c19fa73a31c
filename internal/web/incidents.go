package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
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
			Ended: h.timePtr(in.EndedAt), Ongoing: in.EndedAt == nil, Told: []string{"opened"}}
		end := now
		if in.EndedAt != nil {
			end = *in.EndedAt
		}
		row.Duration = downFor(end.Sub(in.FailingSince))
		if in.DayToldAt != nil {
			row.Told = append(row.Told, "after 24 h")
		}
		if in.ExpiringToldAt != nil {
			row.Told = append(row.Told, "before expiry")
		}
		if in.ExpiredToldAt != nil {
			if in.ExpiredCount == 1 {
				row.Told = append(row.Told, "1 delivery expired")
			} else {
				row.Told = append(row.Told, fmt.Sprintf("%d deliveries expired", in.ExpiredCount))
			}
		}
		if in.EndedAt != nil {
			row.Told = append(row.Told, "ended")
		}
		out = append(out, row)
	}
	return out, nil
}
