package admin

import (
	"net/url"
	"strings"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// parseDeadFilter reads the dead-letter criteria of a form or query (params, in the dashboard's dialect),
// then checks them as a whole (DeadFilter.Validate). The form view is filled even when a
// value is wrong, so the page shows what was typed next to the message.
func parseDeadFilter(v url.Values, tenants []templates.Option) (replays.DeadFilter, templates.DeadFilterForm, error) {
	var f replays.DeadFilter
	form := templates.DeadFilterForm{
		Tenant: strings.TrimSpace(v.Get("tenant")), Subscription: strings.TrimSpace(v.Get("subscription")),
		EventType: strings.TrimSpace(v.Get("event_type")), From: v.Get("from"), To: v.Get("to"),
	}
	state, reason := v.Get("state"), v.Get("reason")
	for _, k := range params.DeadFormKeys {
		form.Active = form.Active || v.Get(k) != ""
	}
	for _, o := range tenants {
		o.Selected = o.Value == form.Tenant
		form.Tenants = append(form.Tenants, o)
	}
	for _, o := range []templates.Option{{Value: "", Label: "Failed and expired"}, {Value: "failed", Label: "Failed"}, {Value: "expired", Label: "Expired"}} {
		o.Selected = o.Value == state
		form.States = append(form.States, o)
	}
	form.Reasons = append(form.Reasons, templates.Option{Value: "", Label: "Any reason", Selected: reason == ""})
	for _, r := range replays.DeadReasons {
		form.Reasons = append(form.Reasons, templates.Option{Value: r, Label: strings.ReplaceAll(r, "_", " "), Selected: r == reason})
	}
	f, err := params.Form.DeadFilter(params.FormDeadCriteria(v))
	if err != nil {
		return f, form, err
	}
	return f, form, f.Validate()
}

// criteriaQuery carries the dead-letter criteria of v (only those set) to another page.
func criteriaQuery(v url.Values) url.Values {
	out := url.Values{}
	for _, k := range append(params.DeadFormKeys, "limit") {
		if s := v.Get(k); s != "" {
			out.Set(k, s)
		}
	}
	return out
}

func (h *Handler) deadRow(d replays.DeadLetter) templates.DeadLetterRow {
	label, class := core.DeliveryState(d.Delivery)
	row := templates.DeadLetterRow{
		ID: d.ID.String(), ShortID: core.ShortID(d.ID), Href: "/deliveries/" + d.ID.String(),
		TenantName: d.TenantName, TenantHref: "/admin/tenants/" + d.TenantID.String(),
		SubURL: d.SubscriptionURL, SubDeleted: d.SubscriptionDeleted, EventType: d.EventType,
		State: label, StateClass: class, Attempts: d.TotalAttempts, Created: h.TimeView(d.CreatedAt), DeadAt: h.TimePtr(d.DeadAt),
	}
	if !d.SubscriptionDeleted {
		row.SubHref = "/subscriptions/" + d.SubscriptionID.String()
	}
	if d.DeadReason != nil {
		row.Reason = delivery.DeadReasonText(*d.DeadReason, d.LastStatus)
	}
	return row
}
