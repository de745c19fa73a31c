package admin

import (
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// deadCriteriaKeys are the form fields of the dead-letter criteria, in the order links carry them.
var deadCriteriaKeys = []string{"tenant", "subscription", "event_type", "state", "reason", "from", "to"}

// parseDeadFilter reads the dead-letter criteria of a form or query. The form view is filled even when a
// value is wrong, so the page shows what was typed next to the message.
func parseDeadFilter(v url.Values, tenants []templates.Option) (delivery.DeadFilter, templates.DeadFilterForm, error) {
	var f delivery.DeadFilter
	form := templates.DeadFilterForm{
		Tenant: strings.TrimSpace(v.Get("tenant")), Subscription: strings.TrimSpace(v.Get("subscription")),
		EventType: strings.TrimSpace(v.Get("event_type")), From: v.Get("from"), To: v.Get("to"),
	}
	state, reason := v.Get("state"), v.Get("reason")
	for _, k := range deadCriteriaKeys {
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
	for _, r := range delivery.DeadReasons {
		form.Reasons = append(form.Reasons, templates.Option{Value: r, Label: strings.ReplaceAll(r, "_", " "), Selected: r == reason})
	}
	if form.Tenant != "" {
		id, err := uuid.Parse(form.Tenant)
		if err != nil {
			return f, form, fault.Invalid("tenant %q is not a tenant id", form.Tenant)
		}
		f.TenantID = &id
	}
	if form.Subscription != "" {
		id, err := uuid.Parse(form.Subscription)
		if err != nil {
			return f, form, fault.Invalid("subscription %q is not a subscription id", form.Subscription)
		}
		f.SubscriptionID = &id
	}
	f.EventType = form.EventType
	switch state {
	case "":
	case string(delivery.Failed), string(delivery.Expired):
		f.States = []delivery.State{delivery.State(state)}
	default:
		return f, form, fault.Invalid("state must be failed or expired")
	}
	f.DeadReason = reason
	var err error
	if f.CreatedFrom, err = core.ParseFormTime("Created from", form.From); err != nil {
		return f, form, err
	}
	if f.CreatedTo, err = core.ParseFormTime("Created before", form.To); err != nil {
		return f, form, err
	}
	return f, form, f.Validate()
}

// criteriaQuery carries the dead-letter criteria of v (only those set) to another page.
func criteriaQuery(v url.Values) url.Values {
	out := url.Values{}
	for _, k := range append(deadCriteriaKeys, "limit") {
		if s := v.Get(k); s != "" {
			out.Set(k, s)
		}
	}
	return out
}

func (h *Handler) deadRow(d delivery.DeadLetter) templates.DeadLetterRow {
	label, class := core.DeliveryState(d.Delivery)
	row := templates.DeadLetterRow{
		ID: d.ID.String(), ShortID: core.ShortID(d.ID), Href: "/deliveries/" + d.ID.String(),
		TenantName: d.TenantName, TenantHref: "/admin/tenants/" + d.TenantID.String(),
		SubURL: d.SubscriptionURL, SubHref: "/subscriptions/" + d.SubscriptionID.String(), EventType: d.EventType,
		State: label, StateClass: class, Attempts: d.TotalAttempts, Created: h.TimeView(d.CreatedAt), DeadAt: h.TimePtr(d.DeadAt),
	}
	if d.DeadReason != nil {
		row.Reason = delivery.DeadReasonText(*d.DeadReason, d.LastStatus)
	}
	return row
}
