package client_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookline/hookline/client"
)

// Poll and Commit against a real server. A polling subscription and a webhook subscription get the same
// events: each pulled delivery's Body() is, byte for byte, the body the webhook subscription's receiver got
// (payloads with keys out of order, HTML characters and an integer too large for a float64, which the
// generated PolledDelivery's map would lose), and signed as the server signs it the pulled delivery
// verifies as the pushed one does. A commit delivers what was pulled; a cursor the server never gave is
// an *APIError.
func TestPollAndCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, true)
	tenant := e.newTenant(ctx, "sdk-poll")
	pushed := make(chan []byte, 8)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		pushed <- b
	}))
	defer rc.Close()
	if _, err := e.admin.CreateSubscriptionWithResponse(ctx, tenant, nil, client.CreateSubscriptionJSONRequestBody{URL: new(rc.URL + "/hook")}); err != nil {
		t.Fatalf("create the webhook subscription: %v", err)
	}
	polling := client.SubscriptionTypePolling
	created, err := e.admin.CreateSubscriptionWithResponse(ctx, tenant, nil, client.CreateSubscriptionJSONRequestBody{Type: &polling})
	if err != nil {
		t.Fatalf("create the polling subscription: %v", err)
	}
	sub, secret := created.JSON201.ID, created.JSON201.Secret
	c := e.client(e.newToken(ctx, tenant, client.ScopeDeliveriesRead, client.ScopeDeliveriesWrite).Token)

	payloads := []string{
		`{"z": 1, "a": {"y": null, "b": [1, 2]}}`,
		`{"html": "<b>&amp;</b>", "big": 12345678901234567890, "u": "é \u2028 \u003c"}`,
	}
	var events []*client.Published
	for _, p := range payloads {
		published, err := e.admin.Publish(ctx, tenant, "order.polled", json.RawMessage(p), client.PublishOptions{})
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		events = append(events, published)
	}
	bodies := map[string]bool{}
	for range payloads {
		select {
		case b := <-pushed:
			bodies[string(b)] = true
		case <-time.After(30 * time.Second):
			t.Fatal("the webhook subscription's receiver got nothing within 30 s")
		}
	}

	// A poll answers only what no running transaction can still add to (the database's oldest running
	// transaction, anyone's, holds that back): a committed delivery may be answered by a later poll only.
	// Polled again and again without a commit, the consumer gets both from its cursor.
	var page *client.Pulled
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		page, err = c.Poll(ctx, tenant, sub, "sdk-test", 0)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if len(page.Data) == len(payloads) || time.Now().After(deadline) {
			break
		}
		if !page.Done {
			t.Fatalf("poll: %d deliveries and not done, with the default limit", len(page.Data))
		}
		<-tick.C
	}
	if len(page.Data) != len(payloads) || !page.Done || page.Cursor == "" {
		t.Fatalf("poll: %d deliveries, done %v, cursor %q; want %d, done, a cursor", len(page.Data), page.Done, page.Cursor, len(payloads))
	}
	for i, d := range page.Data {
		if d.EventID != events[i].ID || d.EventType != "order.polled" || !d.Timestamp.Equal(events[i].CreatedAt) {
			t.Errorf("pulled %+v, want event %s of %s", d, events[i].ID, events[i].CreatedAt)
		}
		body, err := d.Body()
		if err != nil {
			t.Fatal(err)
		}
		if !bodies[string(body)] {
			t.Errorf("the pulled delivery's Body() %s is none of the pushed bodies %v", body, bodies)
		}
		h, err := client.Sign(secret, d.EventID, time.Now(), body)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Verify(secret, h, body); err != nil {
			t.Errorf("the pulled delivery signed: %v", err)
		}
	}

	// Not committed: pulled again, limit honoured.
	again, err := c.Poll(ctx, tenant, sub, "sdk-test", 1)
	if err != nil || len(again.Data) != 1 || again.Data[0].DeliveryID != page.Data[0].DeliveryID || again.Done {
		t.Fatalf("poll again, limit 1: %+v, %v; want the first delivery again, not done", again, err)
	}
	if err := c.Commit(ctx, tenant, sub, "sdk-test", page.Cursor); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, d := range page.Data {
		res, err := e.admin.GetDeliveryWithResponse(ctx, tenant, d.DeliveryID, nil)
		if err != nil || res.JSON200.State != client.DeliveryStateDelivered {
			t.Errorf("delivery %s after the commit: %v %v, want delivered", d.DeliveryID, err, res.JSON200.State)
		}
	}
	after, err := c.Poll(ctx, tenant, sub, "sdk-test", 0)
	if err != nil || len(after.Data) != 0 || !after.Done || after.Cursor != page.Cursor {
		t.Errorf("poll after the commit: %+v, %v; want nothing, done, the committed cursor", after, err)
	}

	var ae *client.APIError
	if err := c.Commit(ctx, tenant, sub, "sdk-test", "not-a-cursor"); !errors.As(err, &ae) || ae.Code != client.CodeInvalidRequest {
		t.Errorf("commit of a cursor never given: %v, want an INVALID_REQUEST APIError", err)
	}
	if _, err := c.Poll(ctx, tenant, sub, "not a name", 0); !errors.As(err, &ae) || ae.Code != client.CodeInvalidRequest {
		t.Errorf("poll with a bad consumer name: %v, want an INVALID_REQUEST APIError", err)
	}
}
