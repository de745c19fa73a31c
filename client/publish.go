package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// PublishOptions are a publish's optional parts.
type PublishOptions struct {
	// IdempotencyKey makes a repeated publish (same tenant, event type and payload) answer the first
	// publish's answer and create nothing; the same key with another request is INVALID_REQUEST.
	IdempotencyKey string
	// OrderingKey orders the deliveries of the events that share it (1 to 128 printable characters). The
	// API does not take it yet: Publish refuses a non-empty one rather than drop it unsaid.
	OrderingKey string
}

// publishRequest is the publish body. The payload is kept as the caller's JSON, byte for byte: a
// round trip through the generated EventInput's map[string]any would reorder its keys and turn its
// large integers into floats.
type publishRequest struct {
	EventType string          `json:"event_type"`
	Payload   json.RawMessage `json:"payload"`
	// Not sent yet: the API refuses unknown fields. Once api/openapi.yaml's EventInput has ordering_key,
	// the tag becomes `json:"ordering_key,omitempty"` and the check in Publish goes.
	OrderingKey string `json:"-"`
}

// errOrderingKey is Publish's answer to an ordering key while the API does not take one.
var errOrderingKey = errors.New("client: this version of the Hookline API takes no ordering key")

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
	if in.OrderingKey != "" {
		return nil, errOrderingKey
	}
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
