package endpoints

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// incidentListSize is how many incidents a subscription's page lists.
const incidentListSize = 10

// downFor writes how long an incident lasted, to the minute: "45 min", "3 h 12 min", "2 days 5 h".
func downFor(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < 48*time.Hour:
		return core.Span(d.Truncate(time.Minute))
	}
	days, hours := int(d.Hours())/24, int(d.Hours())%24
	if hours == 0 {
		return fmt.Sprintf("%d days", days)
	}
	return fmt.Sprintf("%d days %d h", days, hours)
}

// incidentRows are a subscription's latest incidents for its page, newest first, with what was told.
func (h *Handler) incidentRows(r *http.Request, tenantID, subID uuid.UUID) ([]templates.IncidentRow, error) {
	if h.Incidents == nil {
		return nil, nil
	}
	list, err := h.Incidents.OfSubscription(r.Context(), tenantID, subID, incidentListSize)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	out := make([]templates.IncidentRow, 0, len(list))
	for _, in := range list {
		row := templates.IncidentRow{ID: in.ID.String(), Opened: h.TimeView(in.OpenedAt), Failing: h.TimeView(in.FailingSince),
			Ended: h.TimePtr(in.EndedAt), Ongoing: in.EndedAt == nil}
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
