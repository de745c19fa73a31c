package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Pulled is a page of a polling subscription's deliveries, as Poll answers it: the generated PollPage with
// each payload kept as the JSON the server sent (the generated PolledDelivery decodes it into a map, which
// loses its keys' order and its large integers' digits, and with them the bytes a signature covers).
type Pulled struct {
	Data []PulledDelivery `json:"data"`
	// Cursor is the position after the page's last delivery (the committed cursor when Data is empty):
	// Commit it once the deliveries are handled.
	Cursor string `json:"cursor"`
	// Done is true when nothing more is ready now: poll again later.
	Done bool `json:"done"`
}

// PulledDelivery is one delivery of a poll.
type PulledDelivery struct {
	DeliveryID string `json:"delivery_id"`
	// EventID is the event's id, a pushed request's webhook-id.
	EventID   string    `json:"event_id"`
	EventType string    `json:"event_type"`
	Timestamp time.Time `json:"timestamp"`
	// Payload is the event's payload as published.
	Payload json.RawMessage `json:"payload"`
}

// Body is the body Hookline would POST for the delivery, byte for byte (EventBody).
func (d PulledDelivery) Body() ([]byte, error) {
	return EventBody(d.EventType, d.Timestamp, d.Payload)
}

// Poll pulls up to limit deliveries (1 to 500; 0 for the server's default) of tenantID's polling
// subscription subscriptionID for consumer, from just after the consumer's committed cursor: a new
// consumer starts at the oldest delivery not yet delivered, and deliveries pulled but not committed are
// pulled again (at least once).
func (c *Client) Poll(ctx context.Context, tenantID, subscriptionID, consumer string, limit int) (*Pulled, error) {
	params := PollDeliveriesParams{Consumer: consumer}
	if limit != 0 {
		params.Limit = &limit
	}
	res, err := c.PollDeliveriesWithResponse(ctx, tenantID, subscriptionID, &params)
	if err != nil {
		return nil, err
	}
	if res.StatusCode() != http.StatusOK {
		return nil, fmt.Errorf("client: unexpected answer %d from the server", res.StatusCode())
	}
	var page Pulled
	if err := json.Unmarshal(res.Body, &page); err != nil {
		return nil, fmt.Errorf("client: the server's poll answer is not a page of deliveries: %w", err)
	}
	return &page, nil
}

// Commit commits consumer's cursor (a Pulled.Cursor of its poll): every delivery up to it becomes
// delivered, and the consumer's next poll starts after it. A cursor behind the committed one changes
// nothing.
func (c *Client) Commit(ctx context.Context, tenantID, subscriptionID, consumer, cursor string) error {
	res, err := c.CommitCursorWithResponse(ctx, tenantID, subscriptionID, consumer, nil, CommitInput{Cursor: cursor})
	if err != nil {
		return err
	}
	if res.StatusCode() != http.StatusNoContent {
		return fmt.Errorf("client: unexpected answer %d from the server", res.StatusCode())
	}
	return nil
}
