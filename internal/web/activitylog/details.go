package activitylog

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/hookline/hookline/internal/activity"
)

// activityDetails says an entry's details in words; never a secret (none are recorded).
func activityDetails(e activity.Entry) string {
	d := e.Details
	str := func(k string) string { s, _ := d[k].(string); return s }
	num := func(k string) int64 { n, _ := d[k].(float64); return int64(n) }
	switch e.Action {
	case activity.SubscriptionCreated:
		return str("url")
	case activity.SubscriptionChanged:
		return changedFields(d)
	case activity.SubscriptionDeleted:
		if n := num("dead_lettered"); n > 0 {
			return fmt.Sprintf("%s waiting dead-lettered", plural(n, "delivery", "deliveries"))
		}
		return "nothing was waiting"
	case activity.RecoverStarted:
		return fmt.Sprintf("%s matched", plural(num("matched"), "dead delivery", "dead deliveries"))
	case activity.TestEventSent, activity.ExampleEventSent:
		return str("event_type")
	case activity.PortalLinkCreated:
		// Whom it lets in names the object (portalPerson).
		return str("role") + " link"
	case activity.TokenCreated:
		var scopes []string
		if ss, ok := d["scopes"].([]any); ok {
			for _, sc := range ss {
				if v, ok := sc.(string); ok {
					scopes = append(scopes, v)
				}
			}
		}
		// Its name names the object.
		return "scopes: " + strings.Join(scopes, ", ")
	case activity.PortalSessionsEnded:
		return plural(num("ended"), "session or unused link", "sessions or unused links") + " ended"
	case activity.TokenRevoked:
		if n := num("portal_links_ended"); n > 0 {
			return "its portal links ended: " + plural(n, "session or unused link", "sessions or unused links")
		}
	}
	return ""
}

// portalPerson is whom a portal link entry's link lets in, as the platform named them: their name, else
// email, else id ("" when the details do not say).
func portalPerson(d map[string]any) string {
	u, _ := d["user"].(map[string]any)
	for _, k := range []string{"name", "email", "id"} {
		if s, _ := u[k].(string); s != "" {
			return s
		}
	}
	return ""
}

// fieldLabels name a subscription's fields as the endpoint form does.
var fieldLabels = map[string]string{
	"url": "URL", "event_types": "event types", "description": "description", "headers": "custom headers",
	"rate_limit_per_second": "rate limit", "auth": "authentication", "tls_client_certificate": "client certificate",
	"filter": "payload filter", "retry_schedule": "retry schedule",
}

// authPartLabels name the parts of a subscription's authentication as the endpoint form does.
var authPartLabels = map[string]string{
	"type": "kind", "username": "user name", "password": "password", "token_url": "token URL", "client_id": "client ID",
	"client_secret": "client secret", "scopes": "scopes", "audience": "audience", "client_auth": "how the client secret is sent",
}

// changedFields says what a subscription change changed: the fields whose value moved and, for custom
// headers, which were added, removed or given a new value (their names; values are never recorded).
func changedFields(d map[string]any) string {
	strs := func(v any) []string {
		var out []string
		l, _ := v.([]any)
		for _, x := range l {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	var parts []string
	for _, f := range strs(d["fields"]) {
		label := cmp.Or(fieldLabels[f], strings.ReplaceAll(f, "_", " "))
		if h, ok := d["headers"].(map[string]any); ok && f == "headers" {
			var what []string
			for _, k := range [][2]string{{"added", "added"}, {"removed", "removed"}, {"changed", "new value"}} {
				if names := strs(h[k[0]]); len(names) > 0 {
					what = append(what, strings.Join(names, ", ")+" "+k[1])
				}
			}
			if len(what) > 0 {
				label += " (" + strings.Join(what, "; ") + ")"
			}
		}
		if f == "auth" {
			var what []string
			for _, p := range strs(d["auth"]) {
				what = append(what, cmp.Or(authPartLabels[p], p))
			}
			if len(what) > 0 {
				label += " (" + strings.Join(what, ", ") + ")"
			}
		}
		parts = append(parts, label)
	}
	if len(parts) == 0 {
		return ""
	}
	return "changed: " + strings.Join(parts, ", ")
}

// plural writes n and the noun that fits it.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
