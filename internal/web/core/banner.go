package core

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/web/templates"
)

// IncidentBanners are a tenant's open incidents as the banner tells them: one query (OpenOf) per page.
// A failure to read them is logged and shows no banner: the page itself must not fail for it.
func (h *Handler) IncidentBanners(r *http.Request, tenantID uuid.UUID) []templates.IncidentBanner {
	if h.Incidents == nil {
		return nil
	}
	open, err := h.Incidents.OpenOf(r.Context(), tenantID)
	if err != nil {
		httpx.Logger(r.Context()).Error("incident banner", "err", err, "tenant_id", tenantID)
		return nil
	}
	now := h.Now()
	out := make([]templates.IncidentBanner, 0, len(open))
	for _, in := range open {
		name := cmp.Or(in.Description, in.SubscriptionURL, templates.PollingName)
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
	if in.SubscriptionURL == "" { // a polling subscription (it has no URL): nobody commits what waits
		s = fmt.Sprintf("has had nothing committed since %s (%s): no consumer is pulling its deliveries.", clock(now, in.FailingSince),
			roughly(now.Sub(in.FailingSince)))
	}
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
