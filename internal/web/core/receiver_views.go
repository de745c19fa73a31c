package core

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// This file is how pages tell an endpoint's receiver settings: its authentication, client certificate,
// payload filter and retry schedule, and the banner of client certificates that expire soon.

// DateLayout is a calendar date as pages write one: "3 Mar 2027".
const DateLayout = "2 Jan 2006"

// CertificateExpiry says when a client certificate expires, from now: "expires 3 Mar 2027 (in 95 days)",
// "expires 3 Mar 2027 (in under a day)", or once past "expired on 3 Mar 2027". Whole days are counted
// down: 95 days and 20 hours is "in 95 days".
func CertificateExpiry(now, notAfter time.Time) (text string, expired bool) {
	date := notAfter.UTC().Format(DateLayout)
	left := notAfter.Sub(now)
	switch days := int(left / (24 * time.Hour)); {
	case left <= 0:
		return "expired on " + date, true
	case days == 0:
		return "expires " + date + " (in under a day)", false
	case days == 1:
		return "expires " + date + " (in 1 day)", false
	default:
		return fmt.Sprintf("expires %s (in %d days)", date, days), false
	}
}

// CertificateLine is a stored client certificate as pages name it.
func (h *Handler) CertificateLine(c *subscriptions.CertificateView) *templates.CertificateLine {
	if c == nil {
		return nil
	}
	now := h.Now()
	text, expired := CertificateExpiry(now, c.NotAfter)
	return &templates.CertificateLine{Subject: cmp.Or(c.Subject, "(no subject)"), Expiry: text, Expired: expired,
		Soon: subscriptions.CertificateExpiresSoon(c.NotAfter, now)}
}

// AuthText says how an endpoint authenticates us, without its secret: "Basic auth as billing, password
// set", "OAuth 2 client credentials via auth.example.com, client hookline, scopes webhooks:write"; "" for
// none.
func AuthText(a *subscriptions.AuthView) string {
	if a == nil {
		return ""
	}
	set := func(p *bool) bool { return p != nil && *p }
	switch a.Type {
	case subscriptions.AuthBasic:
		s := "Basic auth as " + a.Username
		if set(a.PasswordSet) {
			return s + ", password set"
		}
		return s + ", no password set"
	case subscriptions.AuthOAuth2:
		host := a.TokenURL
		if u, err := url.Parse(a.TokenURL); err == nil && u.Host != "" {
			host = u.Host
		}
		s := "OAuth 2 client credentials via " + host + ", client " + a.ClientID
		if len(a.Scopes) > 0 {
			s += ", scopes " + strings.Join(a.Scopes, " ")
		}
		if a.Audience != "" {
			s += ", audience " + a.Audience
		}
		if !set(a.ClientSecretSet) {
			s += ", no client secret set"
		}
		return s
	}
	return a.Type
}

// StandardSchedule tells the server's retry policy as the delivery contract does: "up to 24 attempts in
// all, the first retry after about 5 seconds, each wait doubling up to 1 hour, for up to 72 hours after
// the event".
func (h *Handler) StandardSchedule() string {
	p := h.Policy
	return fmt.Sprintf("up to %d attempts in all, the first retry after about %s, each wait doubling up to %s, for up to %s after the event",
		p.MaxAttempts, Words(p.Base), Words(p.MaxDelay), Words(p.Window))
}

// ScheduleText tells an endpoint's retry schedule: "Standard: …" (the server's policy), or its own delays,
// "Custom: 30s → 5m → 1h, then the delivery expires". Custom delays still end at the server's window: when
// they add up to more, the text says so.
func (h *Handler) ScheduleText(delays []string) string {
	if len(delays) == 0 {
		return "Standard: " + h.StandardSchedule() + "."
	}
	var total time.Duration
	for _, d := range delays {
		if v, err := time.ParseDuration(d); err == nil {
			total += v
		}
	}
	s := "Custom: " + strings.Join(delays, " → ") + ", then the delivery expires"
	if h.Policy.Window > 0 && total >= h.Policy.Window {
		s += " (at the latest " + Words(h.Policy.Window) + " after the event)"
	}
	return s + "."
}

// CertificateBanners are the tenant's endpoints whose client certificate expires within
// subscriptions.CertificateExpiryNotice or has expired, as the banner names them: one query per page. A
// failure to read them is logged and shows no banner: the page itself must not fail for it.
func (h *Handler) CertificateBanners(r *http.Request, tenantID uuid.UUID) []templates.CertificateBanner {
	if h.Subs == nil {
		return nil
	}
	list, err := h.Subs.CertificatesExpiring(r.Context(), tenantID)
	if err != nil {
		httpx.Logger(r.Context()).Error("certificate banner", "err", err, "tenant_id", tenantID)
		return nil
	}
	now := h.Now()
	out := make([]templates.CertificateBanner, 0, len(list))
	for _, c := range list {
		text, expired := CertificateExpiry(now, c.NotAfter)
		if expired {
			text += ". Upload a renewed certificate: an endpoint that asks for it refuses our deliveries until then."
		} else {
			text += ". Upload a renewed certificate before then."
		}
		out = append(out, templates.CertificateBanner{
			Href: "/subscriptions/" + c.SubscriptionID.String() + "/edit", Name: cmp.Or(c.Description, c.URL),
			Text: text, Expired: expired,
		})
	}
	return out
}
