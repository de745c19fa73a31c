package api_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestResendOfADeletedSubscriptionIsInvalidState: a delivery of a deleted subscription cannot be resent
// (nothing is sent to a deleted subscription): 409 INVALID_STATE whose message names the subscription,
// for a tenant token and an admin, with nothing counted. It was 202, counted a manual retry and left the
// delivery "retrying" for good.
func TestResendOfADeletedSubscriptionIsInvalidState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	rc := newReceiver(t, func(string, int) int { return 400 })
	tid := e.newTenant("resend-deleted")
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL + "/gone"})
	id := e.publish(tid, "order.paid", map[string]any{}).Deliveries[0].ID
	e.waitState(tid, id, "failed")
	if r := e.call("DELETE", "/tenants/"+tid+"/subscriptions/"+sub.ID, adminToken, nil); r.status != 204 {
		t.Fatalf("delete: %s", r)
	}
	token := e.newToken(tid, "deliveries:read", "deliveries:write")
	for _, tok := range []string{token, adminToken} {
		got := wantError(t, "resend of a deleted subscription's delivery", e.call("POST", "/tenants/"+tid+"/deliveries/"+id+"/retry", tok, nil), "INVALID_STATE")
		for _, want := range []string{sub.ID, rc.URL + "/gone", "deleted"} {
			if !strings.Contains(got.Error.Message, want) {
				t.Errorf("message %q does not name %q", got.Error.Message, want)
			}
		}
	}
	if d := e.delivery(tid, id); d.State != "failed" || d.ManualRetries != 0 {
		t.Errorf("after the refused resends: %s with %d manual retries, want failed with 0", d.State, d.ManualRetries)
	}
}

// TestDeletedSubscriptionsInFlightDeliveryEndsDead: an attempt in flight when its subscription is deleted
// finishes, and when it fails transiently the delivery does not wait for a retry that never comes (no
// worker claims a deleted subscription's deliveries): the maintenance run after it ends it as failed,
// reason subscription_deleted, and it no longer counts as pending.
func TestDeletedSubscriptionsInFlightDeliveryEndsDead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	rc := newReceiver(t, func(_ string, n int) int {
		if n == 1 {
			arrived <- struct{}{}
			<-release
		}
		return 503
	})
	tid := e.newTenant("in-flight-deleted")
	sub := e.newSubscription(tid, map[string]any{"url": rc.URL + "/slow"})
	id := e.publish(tid, "order.paid", map[string]any{}).Deliveries[0].ID
	<-arrived
	if r := e.call("DELETE", "/tenants/"+tid+"/subscriptions/"+sub.ID, adminToken, nil); r.status != 204 {
		t.Fatalf("delete: %s", r)
	}
	close(release)
	e.waitState(tid, id, "failed")
	var d struct {
		State      string  `json:"state"`
		DeadReason *string `json:"dead_reason"`
	}
	r := e.call("GET", "/tenants/"+tid+"/deliveries/"+id, adminToken, nil)
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatal(err)
	}
	if d.DeadReason == nil || *d.DeadReason != "subscription_deleted" {
		t.Errorf("the deleted subscription's delivery ended %s, reason %v, want subscription_deleted", d.State, d.DeadReason)
	}
	p := must[page](e, 200, "GET", "/tenants/"+tid+"/deliveries?state=pending&include_totals=true", adminToken, nil)
	if *p.Total != 0 {
		t.Errorf("%d deliveries still pending", *p.Total)
	}
}
