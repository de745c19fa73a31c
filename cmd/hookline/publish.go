package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hookline/hookline/client"
)

func runPublish(ctx context.Context, in *invocation) error {
	if err := in.wantArgs("the event type"); err != nil {
		return err
	}
	payload, err := in.payload()
	if err != nil {
		return err
	}
	c, tenant, err := in.tenant(ctx)
	if err != nil {
		return err
	}
	p, err := c.Publish(ctx, tenant, in.args[0], payload, client.PublishOptions{
		IdempotencyKey: in.o.idempotencyKey,
		OrderingKey:    in.o.orderingKey,
	})
	if err != nil {
		return err
	}
	if in.g.json {
		// The SDK answers the decoded Published; it holds no payload, so nothing is lost in encoding it again.
		return printJSON(in.stdout, p)
	}
	fmt.Fprintf(in.stdout, "published %s %s: %s\n", p.EventType, p.ID, count(len(p.Deliveries), "delivery", "deliveries"))
	for _, d := range p.Deliveries {
		fmt.Fprintf(in.stdout, "  delivery %s  %s  subscription %s\n", d.ID, d.State, d.SubscriptionID)
	}
	return nil
}

// payload is --data: inline JSON, @file or @- (stdin), kept byte for byte (the SDK sends a
// json.RawMessage as it is). JSON that does not parse is bad usage.
func (in *invocation) payload() (json.RawMessage, error) {
	data := in.o.data
	if data == "" {
		return nil, usagef(in.cmd, "--data is missing: the payload, a JSON object ('{\"id\": 1}') or @file")
	}
	raw := []byte(data)
	if name, ok := strings.CutPrefix(data, "@"); ok {
		var err error
		if name == "-" {
			raw, err = io.ReadAll(in.stdin)
		} else {
			raw, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, fmt.Errorf("--data %s: %w", data, err)
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, usagef(in.cmd, "--data is not JSON: %v", err)
	}
	return json.RawMessage(raw), nil
}

// printJSON prints v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
