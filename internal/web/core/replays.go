package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/web/templates"
)

// replayRefresh is how often a running replay's page reloads itself when script is off (a <noscript> meta
// refresh); with script, app.js follows it as often without reloading (a timed reload of the whole page
// is an accessibility failure: WCAG 2.2.1).
const replayRefresh = 2

// ReplayPageSize is how many replays, or deliveries of one replay, a page lists.
const ReplayPageSize = 50

// replayStatus is the word a replay's badge shows, and its class: a finished replay whose deliveries are
// still on their way is "delivering", not "finished"; only a settled one is finished.
func replayStatus(r replays.Replay) (string, string) {
	switch {
	case r.State == replays.ReplayRunning:
		return "scheduling", "badge-info"
	case r.State == replays.ReplayFailed:
		return "failed", "badge-bad"
	case r.Pending > 0:
		return "delivering", "badge-info"
	}
	return "finished", "badge-ok"
}

// outcomeWords says what became of what a replay scheduled: "delivered 58, dead again 1, still pending 1",
// and how many a later replay took over when any did.
func outcomeWords(r replays.Replay) string {
	out := fmt.Sprintf("delivered %d, dead again %d, still pending %d", r.Delivered, r.Failed, r.Pending)
	if r.TakenOver > 0 {
		out += fmt.Sprintf(", %d taken over by a later replay or deleted", r.TakenOver)
	}
	return out
}

// progressView is how far a replay is: its bar counts what has reached its end (delivered, dead again,
// taken over by a later replay, or skipped because it was no longer dead) of what matched, so it is full
// only when nothing it scheduled is still on its way. A bar of what was scheduled would be full within a
// second while every delivery was still pending. A dry run schedules nothing.
func progressView(r replays.Replay) templates.Progress {
	p := templates.Progress{Value: r.Delivered + r.Failed + r.TakenOver + r.Skipped, Max: r.Matched}
	if r.DryRun {
		p.Value = 0
	}
	if p.Max <= 0 {
		p.Max, p.Value = 1, 0
		if r.State != replays.ReplayRunning && !r.DryRun {
			p.Value = 1
		}
	}
	p.Value = min(p.Value, p.Max)
	p.Percent = int(p.Value * 100 / p.Max)
	switch {
	case r.DryRun:
		p.Text = fmt.Sprintf("dry run: %d matched, nothing scheduled", r.Matched)
	case r.Matched == 0:
		p.Text = "nothing matched"
	default:
		p.Text = fmt.Sprintf("Scheduled %d of %d", r.Scheduled, r.Matched)
		if r.State == replays.ReplayRunning {
			p.Text += fmt.Sprintf(" (%d %%)", r.Scheduled*100/r.Matched)
		}
		if r.Skipped > 0 {
			p.Text += fmt.Sprintf(", %d skipped", r.Skipped)
		}
		p.Text += "; " + outcomeWords(r)
	}
	return p
}

// criteriaWords says a replay's criteria in words: "tenant Acme, event type order.paid, created 2026-… to …".
func criteriaWords(f replays.DeadFilter, names map[uuid.UUID]string) string {
	var parts []string
	if f.TenantID != nil {
		name := names[*f.TenantID]
		if name == "" {
			name = f.TenantID.String()
		}
		parts = append(parts, "tenant "+name)
	} else {
		parts = append(parts, "all tenants")
	}
	if f.SubscriptionID != nil {
		parts = append(parts, "subscription "+ShortID(*f.SubscriptionID))
	}
	if f.EventType != "" {
		parts = append(parts, "event type "+f.EventType)
	}
	if len(f.States) == 1 {
		parts = append(parts, string(f.States[0])+" only")
	}
	if f.DeadReason != "" {
		parts = append(parts, "reason "+strings.ReplaceAll(f.DeadReason, "_", " "))
	}
	const short = "2006-01-02 15:04"
	switch {
	case f.CreatedFrom != nil && f.CreatedTo != nil:
		parts = append(parts, "created "+f.CreatedFrom.UTC().Format(short)+" to "+f.CreatedTo.UTC().Format(short)+" UTC")
	case f.CreatedFrom != nil:
		parts = append(parts, "created since "+f.CreatedFrom.UTC().Format(short)+" UTC")
	}
	return strings.Join(parts, ", ")
}

func (h *Handler) ReplayRow(r replays.Replay, names map[uuid.UUID]string) templates.ReplayRow {
	row := templates.ReplayRow{
		ID: r.ID.String(), ShortID: ShortID(r.ID), Href: "/admin/replays/" + r.ID.String(), Kind: r.Kind, Actor: r.Actor,
		Criteria: criteriaWords(r.Criteria, names), Matched: r.Matched, Scheduled: r.Scheduled, Skipped: r.Skipped,
		State: r.State, DryRun: r.DryRun, Started: h.TimeView(r.StartedAt),
		Finished: h.TimePtr(r.FinishedAt), Progress: progressView(r), Error: r.Error,
		Delivered: r.Delivered, Failed: r.Failed, Pending: r.Pending, TakenOver: r.TakenOver, Settled: r.Settled(),
	}
	row.Status, row.StatusClass = replayStatus(r)
	return row
}

func RecoverHref(id uuid.UUID) string { return "/recovers/" + id.String() }

// FillReplayPage fills what the operator's replay page and the customer's recover page share: the
// counts, the deliveries, and following the replay until it is settled (scheduled and every scheduled
// delivery final), not only while it schedules.
func (h *Handler) FillReplayPage(p *templates.ReplayPage, rep replays.Replay, names map[uuid.UUID]string, dels deliveries.Page, base, cursor string) {
	p.Replay, p.Spread = h.ReplayRow(rep, names), SpreadWords(rep.SpreadSeconds)
	p.Running = !rep.Settled()
	if p.Running {
		p.RefreshWithoutScript = replayRefresh
	}
	for _, d := range dels.Items {
		p.Deliveries = append(p.Deliveries, h.DeliveryRow(d))
	}
	// The version changes with every count and every listed delivery's state, so a following page swaps
	// when a delivery of the replay moves, not only when scheduling does.
	var states strings.Builder
	for _, d := range p.Deliveries {
		fmt.Fprintf(&states, "%s%d.", d.State, d.Attempts)
	}
	p.Version = fmt.Sprintf("%s-%d-%d-%d-%d-%d-%d-%d-%s", rep.State, p.Replay.Progress.Value, rep.Matched, rep.Delivered,
		rep.Failed, rep.Pending, rep.TakenOver, len(p.Deliveries), states.String())
	if dels.NextCursor != "" {
		p.NextHref = base + "?cursor=" + dels.NextCursor
	}
	if cursor != "" {
		p.FirstHref = base
	}
}

// SpreadWords says over how long a replay spreads its deliveries' first attempts.
func SpreadWords(seconds int) string {
	if seconds <= 0 {
		return "all at once"
	}
	return "spread over " + Words(time.Duration(seconds)*time.Second)
}
