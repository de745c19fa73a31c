package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type orderingView struct {
	ID      string `json:"id"`
	Ordered bool   `json:"ordered"`
	OnDead  string `json:"on_dead"`
}

// Ordering through the API end to end: an ordered subscription with on_dead block, an event that dies
// holds its key (the later ones are pending, say what they wait for, and are listed under blocked-keys);
// discarding the dead one (Skip) lets the rest go, in order.
func TestOrderedDeliveryThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBackground, ownDatabase(t))
	// The ordered endpoint refuses its second request for good: that is event 2, which then dies.
	rc := newReceiver(t, func(path string, n int) int {
		if path == "/ordered" && n == 2 {
			return 422
		}
		return 200
	})
	tn := e.newTenant("ordering")
	path := "/tenants/" + tn + "/subscriptions"

	// Settings: defaults, validation, PATCH.
	plain := must[orderingView](e, 201, "POST", path, adminToken, map[string]any{"url": "https://example.com/plain"})
	if plain.Ordered || plain.OnDead != "skip" {
		t.Errorf("a new subscription is ordered=%v on_dead=%q; want false and skip", plain.Ordered, plain.OnDead)
	}
	wantError(t, "on_dead other than skip or block", e.call("POST", path, adminToken,
		map[string]any{"url": "https://example.com/x", "on_dead": "retry"}), "INVALID_REQUEST")
	wantError(t, "ordered as a string", e.call("POST", path, adminToken,
		map[string]any{"url": "https://example.com/x", "ordered": "yes"}), "INVALID_REQUEST")
	got := must[orderingView](e, 200, "PATCH", path+"/"+plain.ID, adminToken, map[string]any{"ordered": true, "on_dead": "block"})
	if !got.Ordered || got.OnDead != "block" {
		t.Errorf("after PATCH ordered=%v on_dead=%q", got.Ordered, got.OnDead)
	}

	// ordering_key on publish: 1 to 128 printable characters.
	for _, k := range []any{"", strings.Repeat("k", 129), "tab\there", 7} {
		wantError(t, "ordering_key "+jsonText(k), e.call("POST", "/tenants/"+tn+"/events", adminToken,
			map[string]any{"event_type": "order.updated", "payload": map[string]any{}, "ordering_key": k}), "INVALID_REQUEST")
	}
	must[published](e, 202, "POST", "/tenants/"+tn+"/events", adminToken,
		map[string]any{"event_type": "order.updated", "payload": map[string]any{}, "ordering_key": strings.Repeat("é", 128)})
	// The plain subscription got that event and would try a host that is not there: it goes.
	if r := e.call("DELETE", path+"/"+plain.ID, adminToken, nil); r.status != 204 {
		t.Fatalf("delete: %s", r)
	}

	sub := must[orderingView](e, 201, "POST", path, adminToken, map[string]any{"url": rc.URL + "/ordered",
		"ordered": true, "on_dead": "block"})
	var ids []string
	for n := 1; n <= 4; n++ {
		p := must[published](e, 202, "POST", "/tenants/"+tn+"/events", adminToken,
			map[string]any{"event_type": "order.updated", "payload": map[string]any{"n": n}, "ordering_key": "order-42"})
		ids = append(ids, p.Deliveries[0].ID)
	}
	e.waitState(tn, ids[0], "delivered")
	e.waitState(tn, ids[1], "failed")
	third := must[struct {
		State         string     `json:"state"`
		OrderingKey   *string    `json:"ordering_key"`
		WaitingFor    *string    `json:"waiting_for"`
		NextAttemptAt *time.Time `json:"next_attempt_at"`
	}](e, 200, "GET", "/tenants/"+tn+"/deliveries/"+ids[2], adminToken, nil)
	if third.State != "pending" || third.OrderingKey == nil || *third.OrderingKey != "order-42" ||
		third.WaitingFor == nil || *third.WaitingFor != ids[1] || third.NextAttemptAt != nil {
		t.Errorf("the third delivery: %+v; want pending, ordering_key order-42, waiting_for the dead one, no next attempt", third)
	}
	wantError(t, "retry now of a waiting delivery", e.call("POST", "/tenants/"+tn+"/deliveries/"+ids[2]+"/retry-now", adminToken, nil), "INVALID_STATE")

	blocked := must[struct {
		Items []struct {
			OrderingKey    string    `json:"ordering_key"`
			HeadDeliveryID string    `json:"head_delivery_id"`
			DeadAt         time.Time `json:"dead_at"`
			Waiting        int       `json:"waiting"`
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}](e, 200, "GET", path+"/"+sub.ID+"/blocked-keys", adminToken, nil)
	if len(blocked.Items) != 1 || blocked.Items[0].OrderingKey != "order-42" || blocked.Items[0].HeadDeliveryID != ids[1] ||
		blocked.Items[0].Waiting != 2 || blocked.Items[0].DeadAt.IsZero() {
		t.Fatalf("blocked keys: %+v", blocked)
	}
	wantError(t, "blocked-keys with a bad limit", e.call("GET", path+"/"+sub.ID+"/blocked-keys?limit=0", adminToken, nil), "INVALID_REQUEST")
	wantError(t, "blocked-keys with a bad cursor", e.call("GET", path+"/"+sub.ID+"/blocked-keys?cursor=%25%25", adminToken, nil), "INVALID_REQUEST")
	wantError(t, "blocked-keys with an unknown parameter", e.call("GET", path+"/"+sub.ID+"/blocked-keys?state=dead", adminToken, nil), "INVALID_REQUEST")
	reader := e.newToken(tn, "subscriptions:read")
	wantError(t, "blocked-keys without deliveries:read", e.call("GET", path+"/"+sub.ID+"/blocked-keys", reader, nil), "FORBIDDEN")

	// Skip: discard the dead head; the rest go, in order.
	if r := e.call("DELETE", "/tenants/"+tn+"/deliveries/"+ids[1], adminToken, nil); r.status != 204 {
		t.Fatalf("discard: %s", r)
	}
	e.waitState(tn, ids[3], "delivered")
	var order []int
	for _, r := range rc.requests("/ordered") {
		var b struct {
			Data struct {
				N int `json:"n"`
			} `json:"data"`
		}
		_ = json.Unmarshal(r.body, &b)
		order = append(order, b.Data.N)
	}
	if want := []int{1, 2, 3, 4}; !equalInts(order, want) {
		t.Errorf("the receiver got events %v, want %v (2 refused once, then 3 and 4 after the skip)", order, want)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
