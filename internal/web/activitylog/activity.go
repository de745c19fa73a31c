package activitylog

import (
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/params"
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

// Page fills p with one page of tenantID's log as the query filters it, and renders it.
func (h *Handler) Page(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, p templates.ActivityPage) {
	q := r.URL.Query()
	p.Action, p.Since, p.Until = q.Get("action"), q.Get("since"), q.Get("until")
	for _, a := range activity.Actions {
		p.Actions = append(p.Actions, [2]string{a, actionLabels[a]})
	}
	f := activity.Filter{Action: p.Action, Limit: activityPageSize, Cursor: q.Get("cursor")}
	var err error
	if f.Since, err = params.Form.Time("From", p.Since); err == nil {
		f.Until, err = params.Form.Time("Until", p.Until)
	}
	if err == nil && f.Action != "" && !activity.ValidAction(f.Action) {
		err = fault.Invalid("there is no action %q", f.Action)
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	page, err := h.Activity.List(r.Context(), tenantID, f)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if p.Rows, err = h.activityRows(r, tenantID, page.Items); err != nil {
		h.Fail(w, r, err)
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
	h.Render(w, r, http.StatusOK, templates.Activity(p))
}

// Recent is the newest entries of a tenant's log for the operator's tenant page.
func (h *Handler) Recent(r *http.Request, tenantID uuid.UUID) (templates.TenantActivity, error) {
	out := templates.TenantActivity{Href: "/admin/tenants/" + tenantID.String() + "/activity"}
	page, err := h.Activity.List(r.Context(), tenantID, activity.Filter{Limit: recentActivity})
	if err != nil {
		return out, err
	}
	out.Rows, err = h.activityRows(r, tenantID, page.Items)
	return out, err
}

// activityRows are entries as a page shows them, naming what they are about as pages do.
func (h *Handler) activityRows(r *http.Request, tenantID uuid.UUID, entries []activity.Entry) ([]templates.ActivityRow, error) {
	names, err := h.objectNames(r.Context(), tenantID, entries)
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
// page.
func (h *Handler) activityRow(e activity.Entry, names objectNames) templates.ActivityRow {
	row := templates.ActivityRow{
		At: h.TimeView(e.At), Action: e.Action, Label: actionLabels[e.Action], Who: e.Actor.Label(),
		WhoKind: actorKinds[e.Actor.Kind], Correlation: e.CorrelationID, Details: activityDetails(e),
	}
	if v := e.Actor.Via; v != nil {
		row.WhoKind += ", by a link from " + v.Label()
	}
	if row.Label == "" {
		row.Label = e.Action
	}
	row.Object, row.ObjectHref = names.object(e)
	return row
}
