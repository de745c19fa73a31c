package phases

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hookline/hookline/cmd/bench/internal/testbed"
)

type idObj struct {
	ID string `json:"id"`
}

type published struct {
	ID         string `json:"id"`
	CreatedAt  string `json:"created_at"`
	Deliveries []struct {
		ID             string `json:"id"`
		SubscriptionID string `json:"subscription_id"`
	} `json:"deliveries"`
}

// tenantSetup is a tenant with subscriptions pointing at the receiver.
type tenantSetup struct {
	tenant string
	token  string   // a tenant token with events:write, for publishing
	subs   []string // subscription ids
	labels []string // each subscription's receiver label
	// eventType is what publishLoad publishes ("bench.ingest" when empty).
	eventType string
}

// setupTenant creates a tenant and n subscriptions (labels s0…), each to the receiver with that delay.
func (b *Bench) setupTenant(ctx context.Context, c *testbed.Client, n int, delay time.Duration) (*tenantSetup, error) {
	var t idObj
	if _, err := c.Call(ctx, "POST", "/tenants", map[string]any{"name": "bench"}, nil, &t); err != nil {
		return nil, err
	}
	ts := &tenantSetup{tenant: t.ID}
	var tok struct {
		Token string `json:"token"`
	}
	if _, err := c.Call(ctx, "POST", "/tenants/"+t.ID+"/tokens", map[string]any{"name": "publisher", "scopes": []string{"events:write"}}, nil, &tok); err != nil {
		return nil, err
	}
	ts.token = tok.Token
	for i := range n {
		label := fmt.Sprintf("s%d", i)
		var s idObj
		if _, err := c.Call(ctx, "POST", "/tenants/"+t.ID+"/subscriptions",
			map[string]any{"url": b.rc.URL(delay, label)}, nil, &s); err != nil {
			return nil, err
		}
		ts.subs = append(ts.subs, s.ID)
		ts.labels = append(ts.labels, label)
	}
	return ts, nil
}

func (ts *tenantSetup) label(sub string) string {
	for i, s := range ts.subs {
		if s == sub {
			return ts.labels[i]
		}
	}
	return "?"
}

// setState pauses or resumes every subscription of ts.
func (ts *tenantSetup) setState(ctx context.Context, c *testbed.Client, action string) error {
	for _, s := range ts.subs {
		if _, err := c.Call(ctx, "POST", "/tenants/"+ts.tenant+"/subscriptions/"+s+"/"+action, nil, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// payload returns a JSON object of about size bytes.
func payload(size int, seq int) []byte {
	head := fmt.Sprintf(`{"order":{"id":"ord_%08d","total":1250,"currency":"EUR"},"pad":"`, seq)
	pad := max(size-len(head)-2, 0)
	return []byte(head + strings.Repeat("x", pad) + `"}`)
}

// eventBody is the stored body of an event as the publisher writes it ({"type","timestamp","data"}).
func eventBody(eventType string, size int) []byte {
	return []byte(fmt.Sprintf(`{"type":%q,"timestamp":%q,"data":%s}`, eventType,
		time.Now().UTC().Format(time.RFC3339), payload(size, 0)))
}
