package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// activityPageSize is how many entries a page of the activity log shows; recentActivity how many the
// operator's tenant page does.
const (
	activityPageSize = 50
	recentActivity   = 10
)

// actionLabels say each action in words.
var actionLabels = map[string]string{
	activity.SubscriptionCreated: "Subscription created",
	activity.SubscriptionChanged: "Subscription changed",
	activity.SubscriptionDeleted: "Subscription deleted",
	activity.SubscriptionPaused:  "Subscription paused",
	activity.SubscriptionResumed: "Subscription resumed",
	activity.SecretRevealed:      "Signing secret revealed",
	activity.SecretRotated:       "Signing secret rotated",
	activity.DeliveryResent:      "Delivery resent",
	activity.DeliveryRetriedNow:  "Delivery retried now",
	activity.DeliveryDiscarded:   "Delivery discarded",
	activity.RecoverStarted:      "Recover started",
	activity.TestEventSent:       "Test event sent",
	activity.ExampleEventSent:    "Example event sent",
	activity.PortalLinkCreated:   "Portal link created",
	activity.PortalSessionsEnded: "Portal sessions ended",
	activity.TokenCreated:        "API token created",
	activity.TokenRevoked:        "API token revoked",
	activity.UserCreated:         "Dashboard user added",
	activity.UserRemoved:         "Dashboard user removed",
	activity.PasswordSet:         "Dashboard user's password set",
}

var actorKinds = map[string]string{
	activity.ActorUser: "dashboard user", activity.ActorPortal: "portal user", activity.ActorToken: "API token",
	activity.ActorAdmin: "operator", activity.ActorSystem: "system",
}

// tenantActivity is /activity: the signed-in tenant's own log.
func (h *Handler) tenantActivity(w http.ResponseWriter, r *http.Request) {
	tenantID, ok := tenantOf(currentUser(r))
	if !ok {
		h.notFound(w, r)
		return
	}
	p := templates.ActivityPage{Layout: h.layout(r, "Activity", templates.Crumb{Label: "Activity"}), FormAction: "/activity"}
	h.activityPage(w, r, tenantID, p)
}

// adminTenantActivity is /admin/tenants/{id}/activity: any tenant's log, for operators.
func (h *Handler) adminTenantActivity(w http.ResponseWriter, r *http.Request) {
	t, ok := h.adminTenantPath(w, r)
	if !ok {
		return
	}
	base := tenantHref(t)
	p := templates.ActivityPage{
		Layout: h.adminLayout(r, templates.NavOverview, "Activity of "+t.Name, h.tenantCrumb(t), templates.Crumb{Label: "Activity"}),
		Scope:  "Activity of " + t.Name + ": every change made through its dashboard, portal sessions and the API.", FormAction: base + "/activity",
	}
	h.activityPage(w, r, t.ID, p)
}

// activityPage fills p with one page of tenantID's log as the query filters it, and renders it.
func (h *Handler) activityPage(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, p templates.ActivityPage) {
	q := r.URL.Query()
	p.Action, p.Since, p.Until = q.Get("action"), q.Get("since"), q.Get("until")
	for _, a := range activity.Actions {
		p.Actions = append(p.Actions, [2]string{a, actionLabels[a]})
	}
	f := activity.Filter{Action: p.Action, Limit: activityPageSize, Cursor: q.Get("cursor")}
	var err error
	if f.Since, err = parseFormTime("From", p.Since); err == nil {
		f.Until, err = parseFormTime("Until", p.Until)
	}
	if err == nil && f.Action != "" && !activity.ValidAction(f.Action) {
		err = fault.Invalid("there is no action %q", f.Action)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page, err := h.activity.List(r.Context(), tenantID, f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if p.Rows, err = h.activityRows(r, tenantID, page.Items); err != nil {
		h.fail(w, r, err)
		return
	}
	filter := url.Values{}
	for k, v := range map[string]string{"action": p.Action, "since": p.Since, "until": p.Until} {
		if v != "" {
			filter.Set(k, v)
		}
	}
	p.Filtered, p.ClearHref = len(filter) > 0, p.FormAction
	here := p.FormAction
	if len(filter) > 0 {
		here += "?" + filter.Encode()
	}
	if page.NextCursor != "" {
		filter.Set("cursor", page.NextCursor)
		p.NextHref = p.FormAction + "?" + filter.Encode()
	}
	if f.Cursor != "" {
		p.FirstHref = here
	}
	h.render(w, r, http.StatusOK, templates.Activity(p))
}

// recentTenantActivity is the newest entries of a tenant's log for the operator's tenant page.
func (h *Handler) recentTenantActivity(r *http.Request, tenantID uuid.UUID) (templates.TenantActivity, error) {
	out := templates.TenantActivity{Href: "/admin/tenants/" + tenantID.String() + "/activity"}
	page, err := h.activity.List(r.Context(), tenantID, activity.Filter{Limit: recentActivity})
	if err != nil {
		return out, err
	}
	out.Rows, err = h.activityRows(r, tenantID, page.Items)
	return out, err
}

// activityRows are entries as a page shows them, naming the subscriptions they are about as pages do
// (their description, else their URL), also those deleted since.
func (h *Handler) activityRows(r *http.Request, tenantID uuid.UUID, entries []activity.Entry) ([]templates.ActivityRow, error) {
	var ids []uuid.UUID
	for _, e := range entries {
		if e.Object.Type == "subscription" {
			if id, err := uuid.Parse(e.Object.ID); err == nil {
				ids = append(ids, id)
			}
		}
	}
	names, err := h.subs.Names(r.Context(), tenantID, ids)
	if err != nil {
		return nil, err
	}
	rows := make([]templates.ActivityRow, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, h.activityRow(e, names))
	}
	return rows, nil
}

// activityRow is an entry as a page shows it: in words, with a link to what it changed where that has a
// page; names are the tenant's subscriptions the entries are about.
func (h *Handler) activityRow(e activity.Entry, names map[uuid.UUID]subscriptions.Named) templates.ActivityRow {
	row := templates.ActivityRow{
		At: h.timeView(e.At), Action: e.Action, Label: actionLabels[e.Action], Who: e.Actor.Label(),
		WhoKind: actorKinds[e.Actor.Kind], Correlation: e.CorrelationID, Details: activityDetails(e),
	}
	if v := e.Actor.Via; v != nil {
		row.WhoKind += ", by a link from " + v.Label()
	}
	if row.Label == "" {
		row.Label = e.Action
	}
	short := e.Object.ID
	if len(short) > 8 {
		short = short[len(short)-8:]
	}
	switch e.Object.Type {
	case "subscription":
		id, _ := uuid.Parse(e.Object.ID)
		n, ok := names[id]
		switch {
		case !ok:
			row.Object = "subscription …" + short
		case n.Deleted:
			row.Object = n.Name + " (deleted)"
		default:
			row.Object, row.ObjectHref = n.Name, "/subscriptions/"+e.Object.ID
		}
	case "delivery":
		row.Object, row.ObjectHref = "delivery …"+short, "/deliveries/"+e.Object.ID
	case "recover":
		row.Object, row.ObjectHref = "recover …"+short, "/recovers/"+e.Object.ID
	case "portal_link":
		row.Object = "portal link …" + short
	case "tenant":
		row.Object = "every portal session"
	case "token":
		row.Object = "API token …" + short
	case "user":
		row.Object = "user …" + short
	default:
		row.Object = e.Object.Type + " " + e.Object.ID
	}
	return row
}

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
		who := ""
		if u, ok := d["user"].(map[string]any); ok {
			for _, k := range []string{"name", "email", "id"} {
				if s, _ := u[k].(string); s != "" {
					who = " for " + s
					break
				}
			}
		}
		return str("role") + " link" + who
	case activity.TokenCreated:
		var scopes []string
		if ss, ok := d["scopes"].([]any); ok {
			for _, sc := range ss {
				if v, ok := sc.(string); ok {
					scopes = append(scopes, v)
				}
			}
		}
		return str("name") + " (" + strings.Join(scopes, ", ") + ")"
	case activity.UserCreated:
		return str("email")
	case activity.PortalSessionsEnded:
		return plural(num("ended"), "session or unused link", "sessions or unused links") + " ended"
	case activity.TokenRevoked:
		if n := num("portal_links_ended"); n > 0 {
			return "its portal links ended: " + plural(n, "session or unused link", "sessions or unused links")
		}
	}
	return ""
}

// fieldLabels name a subscription's fields as the endpoint form does.
var fieldLabels = map[string]string{
	"url": "URL", "event_types": "event types", "description": "description", "headers": "custom headers",
	"rate_limit_per_second": "rate limit",
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
