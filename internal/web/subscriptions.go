package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// pageSize is how many deliveries a subscription page lists.
const pageSize = 25

// countUpTo caps the "N matching deliveries" count, which would otherwise scan every match.
const countUpTo = 10000

// TestEventType is the event type "Send test event" publishes, to one subscription whatever its event types,
// without a brand; under a brand it names no product (brand.Brand.TestEventType).
const TestEventType = brand.DefaultTestEventType

// home lists the tenant's subscriptions with their health. An operator without a tenant goes to /admin.
func (h *Handler) home(w http.ResponseWriter, r *http.Request) {
	u := currentUser(r)
	tenantID, ok := tenantOf(u)
	if !ok {
		http.Redirect(w, r, "/admin", http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	p := templates.HomePage{Layout: h.layout(r, "Subscriptions", templates.Crumb{Label: "Subscriptions"})}
	if t, err := h.tenants.GetTenant(ctx, tenantID); err == nil {
		p.TenantName = t.Name
	}
	var err error
	if p.Subscriptions, err = h.subscriptionsWithHealth(ctx, tenantID); err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, templates.Home(p))
}

// customerSubscription loads the {id} subscription: of the user's tenant for a customer (anything else is
// NOT_FOUND), of whichever tenant owns it for an operator.
func (h *Handler) customerSubscription(r *http.Request) (uuid.UUID, subscriptions.Subscription, error) {
	u := currentUser(r)
	tenantID, ok := tenantOf(u)
	id, err := pathID(r)
	if err != nil {
		return uuid.Nil, subscriptions.Subscription{}, err
	}
	if u.Admin {
		if tenantID, err = h.subs.TenantOf(r.Context(), id); err != nil {
			return uuid.Nil, subscriptions.Subscription{}, err
		}
		ok = true
	}
	if !ok {
		return uuid.Nil, subscriptions.Subscription{}, fault.Missing("subscription")
	}
	s, err := h.subs.Get(r.Context(), tenantID, id)
	return tenantID, s, err
}

// tenantCrumbs start the breadcrumb of a tenant's page: the customer's own list, or for an operator the
// admin pages and the tenant.
func (h *Handler) tenantCrumbs(r *http.Request, tenantID uuid.UUID) []templates.Crumb {
	u := currentUser(r)
	if own, ok := tenantOf(u); !u.Admin || (ok && own == tenantID) {
		return []templates.Crumb{{Label: "Subscriptions", Href: "/"}}
	}
	name := "Tenant"
	if t, err := h.tenants.GetTenant(r.Context(), tenantID); err == nil {
		name = t.Name
	}
	return []templates.Crumb{{Label: "Admin", Href: "/admin"}, {Label: name, Href: "/admin/tenants/" + tenantID.String()}}
}

// subscription is one subscription's page: actions, health, contract and its deliveries, filtered and paged.
func (h *Handler) subscription(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	rec := templates.RecoverForm{Since: h.recoverSince(r, s.ID)}
	h.renderSubscription(w, r, tenantID, s, rec)
}

// renderSubscription renders a subscription's page; rec is the recover form's state (a preview's answer
// when a recover preview renders the page).
func (h *Handler) renderSubscription(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, s subscriptions.Subscription, rec templates.RecoverForm) {
	ctx := r.Context()
	q := r.URL.Query()
	q.Del("recover_since")
	subs, err := h.tenantSubscriptions(ctx, tenantID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	subs[s.ID] = s
	base := "/subscriptions/" + s.ID.String()
	// The list, its tabs and the subscription's counts by state (the health card's and the paused note's)
	// come from one snapshot: the card's "3 pending", the note's "3 waiting" and the Pending tab of an
	// unfiltered list are one number.
	l, status, states, err := h.deliveryList(ctx, q, listScope{tenantID: tenantID, base: base, sub: &s, subs: subs})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sv, err := h.subscriptionWithHealth(r, tenantID, s, states)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := templates.SubscriptionPage{
		Layout: h.tenantLayout(r, tenantID, sv.Name(), append(h.tenantCrumbs(r, tenantID), templates.Crumb{Label: sv.Name()})...),
		Sub:    sv, ActionBase: base, Contract: h.contract(),
		CanPause:  s.State == subscriptions.Active,
		CanResume: s.State == subscriptions.Paused || s.State == subscriptions.Disabled,
		CanTest:   s.State != subscriptions.Disabled,
		TestType:  h.brand.TestEventType(),
		List:      l,
	}
	if p.Incidents, err = h.incidentRows(r, tenantID, s.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	if p.Recover, err = h.recoverForm(r, tenantID, s.ID, rec); err != nil {
		h.fail(w, r, err)
		return
	}
	if s.State != subscriptions.Active {
		p.Waiting = countText(states.Pending.N, states.Pending.AtLeast)
	}
	h.render(w, r, status, templates.SubscriptionView(p))
}

func (h *Handler) pause(w http.ResponseWriter, r *http.Request) {
	h.setSubscriptionState(w, r, true)
}

func (h *Handler) resume(w http.ResponseWriter, r *http.Request) {
	h.setSubscriptionState(w, r, false)
}

// setSubscriptionState pauses or resumes, then leads back to the subscription's page (303) with a message.
func (h *Handler) setSubscriptionState(w http.ResponseWriter, r *http.Request, pause bool) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if pause {
		_, err = h.subs.Pause(r.Context(), tenantID, s.ID)
	} else {
		_, err = h.subs.Resume(r.Context(), tenantID, s.ID)
	}
	switch fe := fault.As(err); {
	case err == nil && pause:
		h.setFlash(r, "success", "Paused. New events are kept and wait; nothing is sent until you resume.")
	case err == nil:
		h.setFlash(r, "success", "Resumed. Waiting deliveries are being sent.")
	case fe != nil && fe.Code != fault.NotFound && fe.Code != fault.Internal:
		h.setFlash(r, "error", "Not changed: "+fe.Message+".")
	default:
		h.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/subscriptions/"+s.ID.String(), http.StatusSeeOther)
}

// sendTest publishes a test event (hookline.test, or webhook.test under a brand) to this subscription only,
// whatever its event types (no real type: a handler of invoice.paid must never receive a made-up invoice),
// and says what it sent, with a link to the delivery it made. The body (the event's data) is documented in
// docs/dashboard.md; the message names the brand, so a white-labelled platform's receivers never read Hookline:
//
//	{"test": true, "message": "A test event sent from the <brand> dashboard.", "subscription_id": "…", "sent_at": "…"}
func (h *Handler) sendTest(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back := "/subscriptions/" + s.ID.String()
	// No personal data: the payload leaves for the customer's endpoint (and its logs), so it does not
	// say who pressed the button.
	payload, _ := json.Marshal(map[string]any{
		"test": true, "message": "A test event sent from the " + h.brand.Name + " dashboard.",
		"subscription_id": s.ID.String(), "sent_at": h.now().UTC().Format(time.RFC3339),
	})
	testType := h.brand.TestEventType()
	deliveryID, ok := h.sendOne(w, r, tenantID, s, testType, payload, activity.TestEventSent, "Test event", back)
	if !ok {
		return
	}
	msg := "Sent a " + testType + " event (a test, not a real event) to this endpoint only."
	if s.State == subscriptions.Paused {
		msg = "Queued a " + testType + " event (a test, not a real event) for this endpoint only; it waits until you resume the subscription."
	}
	h.setFlashLink(r, "success", msg, "/deliveries/"+deliveryID, "Open its delivery →")
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// sendOne publishes one event to s only, whatever its event types, recording action (Send test event,
// Send example). It answers the request itself when nothing was sent: a refusal, or a subscription that
// takes no new deliveries, is a flash on back (what names the event in it); ok is false then.
func (h *Handler) sendOne(w http.ResponseWriter, r *http.Request, tenantID uuid.UUID, s subscriptions.Subscription,
	eventType string, payload []byte, action, what, back string) (deliveryID string, ok bool) {
	pub, err := h.publisher.SendTo(r.Context(), tenantID, s.ID, eventType, payload, action)
	if err != nil {
		if fe := fault.As(err); fe != nil && fe.Code != fault.Internal {
			h.setFlash(r, "error", what+" not sent: "+fe.Message+".")
			http.Redirect(w, r, back, http.StatusSeeOther)
			return "", false
		}
		h.fail(w, r, err)
		return "", false
	}
	if len(pub.Deliveries) == 0 {
		h.setFlash(r, "warning", what+" not sent: that subscription takes no new deliveries ("+s.State+"). Resume it on its page first.")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return "", false
	}
	return pub.Deliveries[0].ID, true
}
