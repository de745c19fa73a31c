package endpoints

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/subscriptions"
)

// SendTest publishes a test event (hookline.test, or webhook.test under a brand) to this subscription only,
// whatever its event types (no real type: a handler of invoice.paid must never receive a made-up invoice),
// and says what it sent, with a link to the delivery it made. The body (the event's data) is documented in
// docs/dashboard.md; the message names the brand, so a white-labelled platform's receivers never read Hookline:
//
//	{"test": true, "message": "A test event sent from the <brand> dashboard.", "subscription_id": "…", "sent_at": "…"}
func (h *Handler) SendTest(w http.ResponseWriter, r *http.Request) {
	tenantID, s, err := h.customerSubscription(r)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	back := "/subscriptions/" + s.ID.String()
	// No personal data: the payload leaves for the customer's endpoint (and its logs), so it does not
	// say who pressed the button.
	payload, _ := json.Marshal(map[string]any{
		"test": true, "message": "A test event sent from the " + h.Brand.Name + " dashboard.",
		"subscription_id": s.ID.String(), "sent_at": h.Now().UTC().Format(time.RFC3339),
	})
	testType := h.Brand.TestEventType()
	deliveryID, ok := h.SendOne(w, r, tenantID, s, testType, payload, activity.TestEventSent, "Test event", back)
	if !ok {
		return
	}
	msg := "Sent a " + testType + " event (a test, not a real event) to this endpoint only."
	if s.State == subscriptions.Paused {
		msg = "Queued a " + testType + " event (a test, not a real event) for this endpoint only; it waits until you resume the subscription."
	}
	h.SetFlashLink(r, "success", msg, "/deliveries/"+deliveryID, "Open its delivery →")
	http.Redirect(w, r, back, http.StatusSeeOther)
}
