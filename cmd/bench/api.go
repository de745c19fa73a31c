package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// client talks to one server through the JSON API with the admin token, over keep-alive connections.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string) *client {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	return &client{base: base + "/api/v1", hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// call sends body (JSON-encoded unless nil or []byte) and decodes a 2xx answer into out. It returns the
// status; an answer outside 2xx is an error carrying the body.
func (c *client) call(ctx context.Context, method, path string, body any, hdr map[string]string, out any) (int, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(v)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

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
func (b *bench) setupTenant(ctx context.Context, c *client, n int, delay time.Duration) (*tenantSetup, error) {
	var t idObj
	if _, err := c.call(ctx, "POST", "/tenants", map[string]any{"name": "bench"}, nil, &t); err != nil {
		return nil, err
	}
	ts := &tenantSetup{tenant: t.ID}
	var tok struct {
		Token string `json:"token"`
	}
	if _, err := c.call(ctx, "POST", "/tenants/"+t.ID+"/tokens", map[string]any{"name": "publisher", "scopes": []string{"events:write"}}, nil, &tok); err != nil {
		return nil, err
	}
	ts.token = tok.Token
	for i := range n {
		label := fmt.Sprintf("s%d", i)
		var s idObj
		if _, err := c.call(ctx, "POST", "/tenants/"+t.ID+"/subscriptions",
			map[string]any{"url": b.rc.url(delay, label)}, nil, &s); err != nil {
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
func (ts *tenantSetup) setState(ctx context.Context, c *client, action string) error {
	for _, s := range ts.subs {
		if _, err := c.call(ctx, "POST", "/tenants/"+ts.tenant+"/subscriptions/"+s+"/"+action, nil, nil, nil); err != nil {
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
