package deliveries

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/web/templates"
)

// Delivery is one delivery's page: the answer first (summary, Retry now / Resend), the attempts newest
// first, the request as sent.
func (h *Handler) Delivery(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := h.deliveryTenant(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	d, err := h.Dels.Get(r.Context(), tenantID, id)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	subName, subState := "Subscription", ""
	var circuit subscriptions.Circuit
	var sub *subscriptions.Subscription
	if s, err := h.Subs.Get(r.Context(), tenantID, d.SubscriptionID); err == nil {
		v := h.SubscriptionView(s)
		subName, subState, circuit, sub = v.Name(), s.State, s.Circuit, &s
	}
	if sub != nil && len(d.Attempts) == 0 {
		addAuthorization(d.Request.Headers, sub.Auth)
	}
	subHref := "/subscriptions/" + d.SubscriptionID.String()
	var deletedDesc string
	if d.Endpoint.Deleted() {
		// Its page is gone: name it as the activity log does, without a link.
		if deletedDesc, err = h.deletedDescription(r.Context(), tenantID, d); err != nil {
			h.Fail(w, r, err)
			return
		}
		subName, subHref = cmp.Or(deletedDesc, httpx.RedactURL(d.Endpoint.URL), templates.PollingName)+" (deleted)", ""
	}
	label, class := core.DeliveryState(d.Delivery)
	p := templates.DeliveryPage{
		Layout: h.TenantLayout(r, tenantID, "Delivery "+core.ShortID(d.ID), append(h.TenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName, Href: subHref}, templates.Crumb{Label: "Delivery " + core.ShortID(d.ID)})...),
		ID: d.ID.String(), EventID: d.EventID.String(), EventType: d.EventType, SubHref: subHref, SubName: subName,
		State: label, StateClass: class, StateText: h.StateText(d, subState), Discarded: d.Discarded,
		Created: h.TimeView(d.CreatedAt), NextAttempt: h.TimePtr(d.NextAttemptAt), GiveUp: h.TimeView(d.GiveUpAt),
		LastAttempt: h.TimePtr(d.LastAttemptAt), DeadAt: h.TimePtr(d.DeadAt), RequestURL: d.Request.URL, Headers: core.HeadersView(d.Request.Headers),
		Body: core.PrettyJSON(d.Request.Body), Attempts: h.AttemptsView(d.Attempts),
		ManualRetries: d.ManualRetries, MaxManual: h.MaxManual, ActionBase: "/deliveries/" + d.ID.String(),
	}
	if sub != nil && d.State == delivery.Pending {
		p.ScheduleNote = scheduleNote(d, sub.RetrySchedule)
	}
	p.Replay, p.ReplayHref = h.replayedBy(r, tenantID, d.ReplayID)
	p.Headers = h.BrandedHeaders(r, p.Headers)
	if n := len(p.Attempts); n > 0 && p.Attempts[n-1].Class == "retry" {
		// The last attempt's answer called for a retry that never came: say why rather than "retried".
		switch {
		case d.State == delivery.Expired:
			p.Attempts[n-1].Outcome = "temporary error, but no attempts or time left"
		case d.State.Dead() && d.DeadReason != nil && *d.DeadReason == delivery.ReasonSubscriptionDeleted:
			p.Attempts[n-1].Outcome = "temporary error, not retried: its subscription was deleted"
		}
	}
	wait, err := h.Dels.ResendWait(r.Context(), d.SubscriptionID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.answerFirst(&p, d, subState, circuit, core.Caller(r).Admin, wait)
	if isPolling(d, sub) {
		h.pollingAnswer(&p, tenantID, d, subState)
	}
	if d.Endpoint.Deleted() {
		p.EndpointDeleted = endpointDeletedText(d, deletedDesc)
	}
	if p.ReadOnly && d.State.Dead() && !d.Discarded {
		// Someone who may only look has no Resend: tell them who can, not to do it.
		p.Summary.Note = "Nothing more is tried. Once the endpoint is fixed, someone with edit access can resend it."
	}
	if d.State == delivery.Pending && subState != subscriptions.Paused && circuit.State == delivery.CircuitOpen {
		p.Summary.Note = "The endpoint's circuit is open after failures in a row: due deliveries wait until one probe delivery succeeds"
		if circuit.NextProbeAt != nil {
			p.Summary.Note += " (next probe " + core.Ago(h.Now(), *circuit.NextProbeAt) + ")"
		}
		p.Summary.Note += ". Retry now cannot skip that wait, so it is off until then."
	}
	if err := h.orderingOfDelivery(r.Context(), &p, tenantID, d, sub); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Render(w, r, http.StatusOK, templates.DeliveryView(p))
}

// deletedDescription is the description of a delivery's deleted subscription ("" when it had none): pages
// name a subscription by its description, also once it is deleted.
func (h *Handler) deletedDescription(ctx context.Context, tenantID uuid.UUID, d deliveries.Detail) (string, error) {
	names, err := h.Subs.Names(ctx, tenantID, []uuid.UUID{d.SubscriptionID})
	if err != nil {
		return "", err
	}
	// Names falls back to the URL, which the page shows without credentials.
	if n, ok := names[d.SubscriptionID]; ok && n.Name != d.Endpoint.URL {
		return n.Name, nil
	}
	return "", nil
}

// deliveryTenant reads the {id} delivery's id and the tenant to look it up in: the customer's own (another
// tenant's delivery is then NOT_FOUND), or for an operator the tenant that owns it.
func (h *Handler) deliveryTenant(r *http.Request) (uuid.UUID, uuid.UUID, error) {
	u := core.Caller(r)
	id, err := core.PathID(r)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	if u.Admin {
		tenantID, err := h.Dels.TenantOf(r.Context(), id)
		return tenantID, id, err
	}
	tenantID, ok := u.Tenant()
	if !ok {
		return uuid.Nil, uuid.Nil, fault.Missing("delivery")
	}
	return tenantID, id, nil
}

// replayedBy says which replay last put a delivery back in the queue: a link to it for operators; for a
// customer their own recover, or an operator's replay they cannot open.
func (h *Handler) replayedBy(r *http.Request, tenantID uuid.UUID, replayID *uuid.UUID) (text, href string) {
	if replayID == nil {
		return "", ""
	}
	u := core.Caller(r)
	if u.Admin {
		text = "replay " + core.ShortID(*replayID)
		if rep, err := h.Replays.Get(r.Context(), *replayID, nil); err == nil {
			text = rep.Kind + " replay by " + rep.Actor + ", " + rep.StartedAt.UTC().Format(core.TimeLayout)
			if rep.Kind == replays.ReplayRecover {
				text = "recover by " + rep.Actor + ", " + rep.StartedAt.UTC().Format(core.TimeLayout)
			}
		}
		return text, "/admin/replays/" + replayID.String()
	}
	if rep, err := h.Replays.Get(r.Context(), *replayID, &tenantID); err == nil {
		return "your recover of " + rep.StartedAt.UTC().Format(core.TimeLayout) + " (by " + rep.Actor + ")", ""
	}
	return "an operator's bulk replay", ""
}

// addAuthorization adds to the headers of a request not sent yet the Authorization header its endpoint's
// authentication adds, masked as the sender records it once sent: the page shows what will be sent,
// never the credential.
func addAuthorization(headers map[string]string, auth *subscriptions.AuthView) {
	if headers == nil || auth == nil {
		return
	}
	switch auth.Type {
	case subscriptions.AuthBasic:
		headers["authorization"] = "Basic " + delivery.Masked
	case subscriptions.AuthOAuth2:
		headers["authorization"] = "Bearer " + delivery.Masked
	}
}

// scheduleNote says where a waiting delivery's next attempt is on its endpoint's own retry schedule:
// "attempt 3 of 4 on this endpoint's schedule" (its attempts since it was last queued, against the
// schedule's delays plus the first attempt); "" on the standard schedule.
func scheduleNote(d deliveries.Detail, delays []string) string {
	if len(delays) == 0 {
		return ""
	}
	next, last := d.AttemptCount+1, len(delays)+1
	if next > last {
		// The schedule was shortened since: this attempt is its last.
		return "the last attempt on this endpoint's schedule"
	}
	return fmt.Sprintf("attempt %d of %d on this endpoint's schedule", next, last)
}
