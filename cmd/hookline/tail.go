package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/hookline/hookline/client"
)

// The deliveries list is newest first, keyset-paginated by (created_at, id), and has no "changed since"
// filter: a delivery keeps its place in the list as its state changes. So tail reads, at every tick,
// the deliveries created since it started (the list's `since`), newest first, page after page, and
// compares each with what it saw before. That is a walk over everything created since the start, so it
// follows the newest tailFollowed only: once there are more, the oldest are let go and `since` moves up
// to the oldest one kept.
const (
	tailFollowed = 1000
	// tailOverlap is how far before the newest existing delivery tail starts reading: a delivery whose
	// publish began before it but committed after still shows, as tail's first read is silent.
	tailOverlap = time.Minute
)

// tailer follows one tenant's deliveries.
type tailer struct {
	in     *invocation
	c      *client.Client
	tenant string
	since  *time.Time
	// seen is each followed delivery's state and attempts when last printed (or read, for the first
	// read, which prints nothing: tail shows what happens from its start on).
	seen map[string]string
}

type tailEntry struct {
	d   client.Delivery
	raw json.RawMessage
}

func runTail(ctx context.Context, in *invocation) error {
	if err := in.wantArgs(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, tenant, err := in.tenant(ctx)
	if err != nil {
		return quiet(ctx, err)
	}
	t := &tailer{in: in, c: c, tenant: tenant}
	// Start from the newest delivery's time (the server's clock, not this machine's).
	one := 1
	page, _, err := listDeliveries(ctx, c, tenant, &client.ListDeliveriesParams{Limit: &one})
	if err != nil {
		return quiet(ctx, err)
	}
	if len(page.Items) > 0 {
		since := page.Items[0].CreatedAt.Add(-tailOverlap)
		t.since = &since
	}
	if err := t.poll(ctx, false); err != nil {
		return quiet(ctx, err)
	}
	fmt.Fprintf(in.stderr, "following the deliveries of tenant %s (Ctrl-C to stop)\n", tenant)
	tick := time.NewTicker(in.o.interval.d)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := t.poll(ctx, true)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			if failing {
				fmt.Fprintln(in.stderr, "tail: the server answers again")
				failing = false
			}
			continue
		}
		if !transient(err) {
			return err
		}
		// A restarting server, a network blip or a rate limit: say so once and keep reading.
		if !failing {
			fmt.Fprintf(in.stderr, "tail: %v; trying again\n", err)
			failing = true
		}
		var ae *client.APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(ae.RetryAfter):
			}
		}
	}
}

// quiet is err, or nothing when it came of an interrupt: Ctrl-C is how tail ends.
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// transient says whether tail should keep going after err: anything but the API refusing the request
// itself (an unknown tenant, a revoked token, a missing scope).
func transient(err error) bool {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return ae.Status == 429 || ae.Status >= 500
	}
	return true
}

// poll reads the followed deliveries and, when print is set, prints those new or changed, oldest first.
func (t *tailer) poll(ctx context.Context, print bool) error {
	var entries []tailEntry
	cursor := ""
	for len(entries) < tailFollowed {
		size := maxPage
		p := client.ListDeliveriesParams{Since: t.since, Limit: &size}
		if cursor != "" {
			p.Cursor = &cursor
		}
		page, raw, err := listDeliveries(ctx, t.c, t.tenant, &p)
		if err != nil {
			return err
		}
		for i, d := range page.Items {
			entries = append(entries, tailEntry{d: d, raw: raw.Items[i]})
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(entries) > tailFollowed {
		entries = entries[:tailFollowed]
	}
	seen := make(map[string]string, len(entries))
	slices.Reverse(entries) // oldest first, as a log reads
	for _, e := range entries {
		key := fmt.Sprintf("%s/%d", e.d.State, e.d.TotalAttempts)
		seen[e.d.ID] = key
		if before, ok := t.seen[e.d.ID]; print && (!ok || before != key) {
			if err := t.print(e); err != nil {
				return err
			}
		}
	}
	// Deliveries no longer listed (discarded, or let go past tailFollowed) are forgotten.
	t.seen = seen
	if cursor != "" && len(entries) > 0 {
		oldest := entries[0].d.CreatedAt
		t.since = &oldest
	}
	return nil
}

func (t *tailer) print(e tailEntry) error {
	if t.in.g.json {
		return printRaw(t.in.stdout, e.raw)
	}
	d := e.d
	_, err := fmt.Fprintf(t.in.stdout, "%s  %s  %s  %s  attempts %d  %s\n", stamp(d.UpdatedAt), d.ID, d.EventType,
		stateLabel(d.State, d.TotalAttempts, (*string)(d.DeadReason)), d.TotalAttempts, lastOutcome(d.LastStatus, d.LastError))
	return err
}
