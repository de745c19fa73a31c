package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/client"
)

func runReplay(ctx context.Context, in *invocation) error {
	if err := in.wantArgs(); err != nil {
		return err
	}
	body := client.StartReplayJSONRequestBody{}
	for _, f := range []struct {
		flag, value string
		into        *time.Time
	}{{"--from", in.o.from, &body.CreatedFrom}, {"--to", in.o.to, &body.CreatedTo}} {
		if f.value == "" {
			return usagef(in.cmd, "%s is missing: a replay covers a bounded time range", f.flag)
		}
		t, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return usagef(in.cmd, "%s %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", f.flag, f.value)
		}
		*f.into = t
	}
	for _, f := range []struct {
		flag, value string
		into        **uuid.UUID
	}{{"--subscription", in.o.subscription, &body.SubscriptionID}, {"--tenant", in.g.tenant, &body.TenantID}} {
		if f.value == "" {
			continue
		}
		id, err := uuid.Parse(f.value)
		if err != nil {
			return usagef(in.cmd, "%s %q is not an id", f.flag, f.value)
		}
		*f.into = &id
	}
	if in.o.dryRun {
		// The API's own preview: the same call, recorded as a dry run, changing nothing.
		body.DryRun = &in.o.dryRun
	}
	c, err := in.client()
	if err != nil {
		return err
	}
	res, err := c.StartReplayWithResponse(ctx, nil, body)
	if err != nil {
		return err
	}
	r := res.JSON201
	if r == nil {
		return fmt.Errorf("unexpected answer %d from the server", res.StatusCode())
	}
	if in.g.json {
		return printRaw(in.stdout, res.Body)
	}
	matched := count(r.Matched, "dead delivery", "dead deliveries")
	if r.DryRun {
		fmt.Fprintf(in.stdout, "dry run %s: %s would be replayed; nothing was changed\n", r.ID, matched)
		if r.Sample != nil && len(*r.Sample) > 0 {
			fmt.Fprintf(in.stdout, "the newest %d:\n", len(*r.Sample))
			for _, id := range *r.Sample {
				fmt.Fprintln(in.stdout, " ", id)
			}
		}
		return nil
	}
	fmt.Fprintf(in.stdout, "replay %s %s: %s matched, %d scheduled so far, first attempts spread over %d s\n",
		r.ID, r.State, matched, r.Scheduled, r.SpreadSeconds)
	return nil
}
