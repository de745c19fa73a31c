package eventtypes

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
)

// SendExample is POST /event-types/{name}/send: the type's example payload as an event of that type, to
// the subscription_id subscription only (whatever its event types, as Send test event), recorded in the
// activity log as example_event.sent; then the delivery it made (303). An unknown or archived type, or a
// subscription that is not the tenant's, is the 404 page; a type without an example is 400.
func (h *Handler) SendExample(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	// A name with a slash comes escaped (a%2Fb), as links to this page write it.
	name := httpx.PathValue(r, "name")
	var t catalogue.EventType
	var err error = fault.Missing("event type")
	if h.Catalogue != nil {
		t, err = h.Catalogue.Get(ctx, name)
	}
	if err == nil && t.Archived {
		err = fault.Missing("event type")
	}
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	if isJSONNull(t.Example) {
		h.Fail(w, r, fault.Invalid("event type %s has no example to send: the platform registered none", t.Name))
		return
	}
	tenantID, s, err := h.formSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	back := "/event-types"
	deliveryID, ok := h.SendOne(w, r, tenantID, s, t.Name, t.Example, activity.ExampleEventSent, "Example", back)
	if !ok {
		return
	}
	msg := "Sent the catalogue's example of " + t.Name + " (example data, not a real event) to this subscription only."
	if s.State == subscriptions.Paused {
		msg = "Queued the catalogue's example of " + t.Name + " (example data, not a real event) for this subscription only; it waits until you resume the subscription."
	}
	h.SetFlash(r, "success", msg)
	http.Redirect(w, r, "/deliveries/"+deliveryID, http.StatusSeeOther)
}

// formSubscription loads the subscription_id form field's subscription as the subscription pages load a
// path's: the user's tenant's (anything else is NOT_FOUND), or for an operator whichever tenant's it is.
// A missing or malformed id is INVALID_REQUEST.
func (h *Handler) formSubscription(r *http.Request) (uuid.UUID, subscriptions.Subscription, error) {
	raw := strings.TrimSpace(r.PostForm.Get("subscription_id"))
	if raw == "" {
		return uuid.Nil, subscriptions.Subscription{}, fault.Invalid("choose a subscription to send the example to")
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, subscriptions.Subscription{}, fault.Invalid("subscription_id must be a subscription's id")
	}
	u := core.Caller(r)
	tenantID, ok := u.Tenant()
	if u.Admin {
		if tenantID, err = h.Subs.TenantOf(r.Context(), id); err != nil {
			return uuid.Nil, subscriptions.Subscription{}, err
		}
		ok = true
	}
	if !ok {
		return uuid.Nil, subscriptions.Subscription{}, fault.Missing("subscription")
	}
	s, err := h.Subs.Get(r.Context(), tenantID, id)
	return tenantID, s, err
}
