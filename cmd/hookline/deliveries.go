package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/client"
)

// maxPage is the API's largest page of deliveries.
const maxPage = 100

// rawPage is a page of a list as the API wrote it: each item's JSON kept byte for byte, for --json (the
// generated types would turn a large number in a payload into a float).
type rawPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

func runDeliveriesList(ctx context.Context, in *invocation) error {
	if err := in.wantArgs(); err != nil {
		return err
	}
	params, err := in.deliveryFilters()
	if err != nil {
		return err
	}
	if in.o.limit < 1 {
		return usagef(in.cmd, "--limit must be 1 or more")
	}
	c, tenant, err := in.tenant(ctx)
	if err != nil {
		return err
	}
	var items []client.Delivery
	var raws []json.RawMessage
	cursor := in.o.cursor
	for remaining := in.o.limit; remaining > 0; {
		size := min(remaining, maxPage)
		p := params
		p.Limit, p.Cursor = &size, nil
		if cursor != "" {
			p.Cursor = &cursor
		}
		page, raw, err := listDeliveries(ctx, c, tenant, &p)
		if err != nil {
			return err
		}
		items, raws = append(items, page.Items...), append(raws, raw.Items...)
		remaining -= len(page.Items)
		cursor = page.NextCursor
		if cursor == "" || len(page.Items) == 0 {
			break
		}
	}
	if in.g.json {
		return printJSON(in.stdout, rawPage{Items: nonNil(raws), NextCursor: cursor})
	}
	if len(items) == 0 {
		fmt.Fprintln(in.stdout, "no deliveries")
		return nil
	}
	tw := tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tEVENT TYPE\tSTATE\tATTEMPTS\tLAST")
	for _, d := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", d.ID, stamp(d.CreatedAt), d.EventType,
			stateLabel(d.State, d.TotalAttempts, (*string)(d.DeadReason)), d.TotalAttempts, lastOutcome(d.LastStatus, d.LastError))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if cursor != "" {
		// On stderr, so that the table on stdout is only deliveries.
		fmt.Fprintf(in.stderr, "more: add --cursor %s\n", cursor)
	}
	return nil
}

// deliveryFilters are the list's filters from the flags; an id that is not one is bad usage.
func (in *invocation) deliveryFilters() (client.ListDeliveriesParams, error) {
	var p client.ListDeliveriesParams
	if in.o.state != "" {
		var states []client.StateFilter
		for s := range strings.SplitSeq(in.o.state, ",") {
			states = append(states, client.StateFilter(strings.TrimSpace(s)))
		}
		p.State = &states
	}
	for _, f := range []struct {
		flag, value string
		into        **uuid.UUID
	}{{"--subscription", in.o.subscription, &p.SubscriptionID}, {"--event", in.o.event, &p.EventID}} {
		if f.value == "" {
			continue
		}
		id, err := uuid.Parse(f.value)
		if err != nil {
			return p, usagef(in.cmd, "%s %q is not an id", f.flag, f.value)
		}
		*f.into = &id
	}
	if in.o.eventType != "" {
		p.EventType = &in.o.eventType
	}
	return p, nil
}

// listDeliveries is one page: decoded, and as the API wrote it.
func listDeliveries(ctx context.Context, c *client.Client, tenant string, p *client.ListDeliveriesParams) (*client.DeliveryPage, rawPage, error) {
	res, err := c.ListDeliveriesWithResponse(ctx, tenant, p)
	if err != nil {
		return nil, rawPage{}, err
	}
	if res.JSON200 == nil {
		return nil, rawPage{}, fmt.Errorf("unexpected answer %d from the server", res.StatusCode())
	}
	var raw rawPage
	if err := json.Unmarshal(res.Body, &raw); err != nil || len(raw.Items) != len(res.JSON200.Items) {
		return nil, rawPage{}, fmt.Errorf("the server's page of deliveries does not decode: %v", err)
	}
	return res.JSON200, raw, nil
}

func runDeliveriesGet(ctx context.Context, in *invocation) error {
	if err := in.wantArgs("the delivery id"); err != nil {
		return err
	}
	c, tenant, err := in.tenant(ctx)
	if err != nil {
		return err
	}
	res, err := c.GetDeliveryWithResponse(ctx, tenant, in.args[0], nil)
	if err != nil {
		return err
	}
	d := res.JSON200
	if d == nil {
		return fmt.Errorf("unexpected answer %d from the server", res.StatusCode())
	}
	if in.g.json {
		return printRaw(in.stdout, res.Body)
	}
	tw := tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)
	field := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{name}, args...)...)
	}
	field("delivery", "%s", d.ID)
	field("event", "%s (%s)", d.EventID, d.EventType)
	field("subscription", "%s", d.SubscriptionID)
	field("state", "%s", stateLabel(d.State, d.TotalAttempts, (*string)(d.DeadReason)))
	if d.Discarded {
		field("discarded", "yes")
	}
	field("created", "%s", stamp(d.CreatedAt))
	field("attempts", "%d (%d in this schedule), %d manual retries", d.TotalAttempts, d.AttemptCount, d.ManualRetries)
	if d.LastAttemptAt != nil {
		field("last attempt", "%s, %s", stamp(*d.LastAttemptAt), lastOutcome(d.LastStatus, d.LastError))
	}
	if d.NextAttemptAt != nil {
		field("next attempt", "%s", stamp(*d.NextAttemptAt))
	}
	switch {
	case d.DeadAt != nil:
		field("dead since", "%s", stamp(*d.DeadAt))
	case d.State == client.DeliveryStatePending || d.State == client.DeliveryStateInFlight:
		field("gives up at", "%s", stamp(d.GiveUpAt))
	}
	if d.ReplayID != nil {
		field("replay", "%s", *d.ReplayID)
	}
	field("request", "POST %s", d.Request.URL)
	var body struct {
		Request struct {
			Body struct {
				Data json.RawMessage `json:"data"`
			} `json:"body"`
		} `json:"request"`
	}
	if json.Unmarshal(res.Body, &body) == nil && len(body.Request.Body.Data) > 0 {
		var data bytes.Buffer
		if json.Compact(&data, body.Request.Body.Data) == nil {
			field("data", "%s", data.String())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Attempts) == 0 {
		return nil
	}
	fmt.Fprintln(in.stdout, "\nattempts:")
	tw = tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)
	for _, a := range d.Attempts {
		outcome := lastOutcome(a.Status, nonEmpty(a.Error))
		fmt.Fprintf(tw, "  #%d\t%s\t%s\t%s\t%d ms\n", a.Attempt, stamp(a.StartedAt), a.Outcome, outcome, a.DurationMs)
	}
	return tw.Flush()
}

func runDeliveriesRetry(ctx context.Context, in *invocation) error {
	if err := in.wantArgs("the delivery id"); err != nil {
		return err
	}
	c, tenant, err := in.tenant(ctx)
	if err != nil {
		return err
	}
	res, err := c.RetryDeliveryWithResponse(ctx, tenant, in.args[0], nil)
	if err != nil {
		return err
	}
	r := res.JSON202
	if r == nil {
		return fmt.Errorf("unexpected answer %d from the server", res.StatusCode())
	}
	if in.g.json {
		return printRaw(in.stdout, res.Body)
	}
	fmt.Fprintf(in.stdout, "queued %s again: %s, next attempt at %s, gives up at %s\n", r.ID, r.State, stamp(r.NextAttemptAt), stamp(r.GiveUpAt))
	return nil
}

// stateLabel is a delivery's state as the dashboard names it: a pending delivery tried before is
// retrying; a dead one says why.
func stateLabel(state client.DeliveryState, totalAttempts int, deadReason *string) string {
	s := string(state)
	if state == client.DeliveryStatePending && totalAttempts > 0 {
		s = "retrying"
	}
	if deadReason != nil {
		s += " (" + *deadReason + ")"
	}
	return s
}

// lastOutcome is an attempt's answer: its HTTP status, else its error, else "-" (not tried).
func lastOutcome(status *int, errText *string) string {
	switch {
	case status != nil:
		return fmt.Sprintf("HTTP %d", *status)
	case errText != nil && *errText != "":
		return oneLine(*errText, 80)
	}
	return "-"
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(items []json.RawMessage) []json.RawMessage {
	if items == nil {
		return []json.RawMessage{}
	}
	return items
}

// stamp is a time as the API gives it, to the second: RFC 3339 in UTC.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// printRaw prints an answer's JSON as the API wrote it, on one line.
func printRaw(w io.Writer, body []byte) error {
	var b bytes.Buffer
	if err := json.Compact(&b, body); err != nil {
		return fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}
