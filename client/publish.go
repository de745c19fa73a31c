package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// PublishOptions are a publish's optional parts.
type PublishOptions struct {
	// IdempotencyKey makes a repeated publish (same tenant, event type and payload) answer the first
	// publish's answer and create nothing; the same key with another request is INVALID_REQUEST.
	IdempotencyKey string
	// OrderingKey, when set, makes the event's deliveries to ordered subscriptions go after the earlier
	// events of the same key, one at a time (1 to 128 printable characters).
	OrderingKey string
}

// publishRequest is the publish body. The payload is kept as the caller's JSON, byte for byte: a
// round trip through the generated EventInput's map[string]any would reorder its keys and turn its
// large integers into floats.
type publishRequest struct {
	EventType   string          `json:"event_type"`
	Payload     json.RawMessage `json:"payload"`
	OrderingKey string          `json:"ordering_key,omitempty"`
}

// Publish publishes an event of eventType to tenantID's subscriptions. payload is a JSON object: a value
// encoding/json makes one of (a map, a struct), or a json.RawMessage sent as it is.
func (c *Client) Publish(ctx context.Context, tenantID, eventType string, payload any, opts PublishOptions) (*Published, error) {
	raw, ok := payload.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(payload); err != nil {
			return nil, fmt.Errorf("client: the payload is not JSON: %w", err)
		}
	}
	in := publishRequest{EventType: eventType, Payload: raw, OrderingKey: opts.OrderingKey}
	// Not json.Marshal, which writes <, >, & and U+2028/U+2029 in strings as \u escapes: the same JSON
	// to a parser, but not the bytes the caller gave, and receivers' signatures are over the bytes.
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return nil, fmt.Errorf("client: the payload is not JSON: %w", err)
	}
	var params PublishEventParams
	if opts.IdempotencyKey != "" {
		params.IdempotencyKey = &opts.IdempotencyKey
	}
	res, err := c.PublishEventWithBodyWithResponse(ctx, tenantID, &params, "application/json", &body)
	if err != nil {
		return nil, err
	}
	return answer(res, res.JSON202, nil)
}
