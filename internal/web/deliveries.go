package web

import (
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
	"github.com/hookline/hookline/web/templates"
)

// delivery is one delivery's page: the answer first (summary, Retry now / Resend), the attempts newest
// first, the request as sent.
func (h *Handler) delivery(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := h.deliveryTenant(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d, err := h.dels.Get(r.Context(), tenantID, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	subName, subState := "Subscription", ""
	var circuit subscriptions.Circuit
	if s, err := h.subs.Get(r.Context(), tenantID, d.SubscriptionID); err == nil {
		v := h.subscriptionView(s)
		subName, subState, circuit = v.Name(), s.State, s.Circuit
	}
	subHref := "/subscriptions/" + d.SubscriptionID.String()
	if d.Endpoint.Deleted() {
		// Its page is gone: name it without a link.
		subName, subHref = "deleted subscription "+httpx.RedactURL(d.Endpoint.URL), ""
	}
	label, class := deliveryState(d.Delivery)
	p := templates.DeliveryPage{
		Layout: h.tenantLayout(r, tenantID, "Delivery "+shortID(d.ID), append(h.tenantCrumbs(r, tenantID),
			templates.Crumb{Label: subName, Href: subHref}, templates.Crumb{Label: "Delivery " + shortID(d.ID)})...),
		ID: d.ID.String(), EventID: d.EventID.String(), EventType: d.EventType, SubHref: subHref, SubName: subName,
		State: label, StateClass: class, StateText: h.stateText(d, subState), Discarded: d.Discarded,
		Created: h.timeView(d.CreatedAt), NextAttempt: h.timePtr(d.NextAttemptAt), GiveUp: h.timeView(d.GiveUpAt),
		LastAttempt: h.timePtr(d.LastAttemptAt), DeadAt: h.timePtr(d.DeadAt), RequestURL: d.Request.URL, Headers: headersView(d.Request.Headers),
		Body: prettyJSON(d.Request.Body), Attempts: h.attemptsView(d.Attempts),
		ManualRetries: d.ManualRetries, MaxManual: h.maxManual, ActionBase: "/deliveries/" + d.ID.String(),
	}
	p.Replay, p.ReplayHref = h.replayedBy(r, tenantID, d.ReplayID)
	p.Headers = h.brandedHeaders(r, p.Headers)
	if n := len(p.Attempts); n > 0 && d.State == delivery.Expired && p.Attempts[n-1].Class == "retry" {
		p.Attempts[n-1].Outcome = "temporary error, but no attempts or time left"
	}
	wait, err := h.dels.ResendWait(r.Context(), d.SubscriptionID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerFirst(&p, d, subState, circuit, currentUser(r).Admin, wait)
	if p.ReadOnly && d.State.Dead() && !d.Discarded {
		// Someone who may only look has no Resend: tell them who can, not to do it.
		p.Summary.Note = "Nothing more is tried. Once the endpoint is fixed, someone with edit access can resend it."
	}
	if d.State == delivery.Pending && subState != subscriptions.Paused && circuit.State == delivery.CircuitOpen {
		p.Summary.Note = "The endpoint's circuit is open after failures in a row: due deliveries wait until one probe delivery succeeds"
		if circuit.NextProbeAt != nil {
			p.Summary.Note += " (next probe " + ago(h.now(), *circuit.NextProbeAt) + ")"
		}
		p.Summary.Note += ". Retry now cannot skip that wait, so it is off until then."
	}
	h.render(w, r, http.StatusOK, templates.DeliveryView(p))
}

// resend puts a delivery back in the queue and says what happened: queued, rate-limited or not allowed.
func (h *Handler) resend(w http.ResponseWriter, r *http.Request) {
	h.manualRetry(w, r, h.dels.Retry, "Queued: the delivery is back in the queue and will be sent again shortly.",
		"Not resent", "too many resends")
}

// manualRetry runs Resend or Retry now (do) on the {id} delivery and says what happened in a flash: done,
// rate-limited ("<notDone>: <limited> for this subscription right now") or not allowed, with the reason.
func (h *Handler) manualRetry(w http.ResponseWriter, r *http.Request,
	do func(ctx context.Context, tenantID, id uuid.UUID, actor deliveries.Actor) (deliveries.Delivery, error),
	done, notDone, limited string) {
	u := currentUser(r)
	tenantID, id, err := h.deliveryTenant(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	_, err = do(r.Context(), tenantID, id, deliveries.Actor{Admin: u.Admin})
	fe := fault.As(err)
	switch {
	case err == nil:
		h.setFlash(r, "success", done)
	case fe != nil && fe.Code == fault.RateLimited:
		h.setFlash(r, "warning", fmt.Sprintf("%s: %s for this subscription right now. Try again in %d s.",
			notDone, limited, max(secondsUp(fe.RetryAfter), 1)))
	case fe != nil && (fe.Code == fault.InvalidState || fe.Code == fault.MaxRetries):
		h.setFlash(r, "error", notDone+": "+fe.Message+".")
	default:
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/deliveries/"+id.String(), http.StatusSeeOther)
}

// deliveryTenant reads the {id} delivery's id and the tenant to look it up in: the customer's own (another
// tenant's delivery is then NOT_FOUND), or for an operator the tenant that owns it.
func (h *Handler) deliveryTenant(r *http.Request) (uuid.UUID, uuid.UUID, error) {
	u := currentUser(r)
	id, err := pathID(r)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	if u.Admin {
		tenantID, err := h.dels.TenantOf(r.Context(), id)
		return tenantID, id, err
	}
	tenantID, ok := tenantOf(u)
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
	u := currentUser(r)
	if u.Admin {
		text = "replay " + shortID(*replayID)
		if rep, err := h.replays.Get(r.Context(), *replayID, nil); err == nil {
			text = rep.Kind + " replay by " + rep.Actor + ", " + rep.StartedAt.UTC().Format(timeLayout)
			if rep.Kind == replays.ReplayRecover {
				text = "recover by " + rep.Actor + ", " + rep.StartedAt.UTC().Format(timeLayout)
			}
		}
		return text, "/admin/replays/" + replayID.String()
	}
	if rep, err := h.replays.Get(r.Context(), *replayID, &tenantID); err == nil {
		return "your recover of " + rep.StartedAt.UTC().Format(timeLayout) + " (by " + rep.Actor + ")", ""
	}
	return "an operator's bulk replay", ""
}
