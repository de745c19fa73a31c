package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/web/templates"
)

// replayRefresh is how often a running replay's page reloads itself when script is off (a <noscript> meta
// refresh); with script, app.js follows it as often without reloading (a timed reload of the whole page
// is an accessibility failure: WCAG 2.2.1).
const replayRefresh = 2

// replayPageSize is how many replays, or deliveries of one replay, a page lists.
const replayPageSize = 50

func replayStateClass(state string) string {
	switch state {
	case delivery.ReplayFinished:
		return "badge-ok"
	case delivery.ReplayRunning:
		return "badge-info"
	}
	return "badge-bad"
}

// progressView is how far a replay is. A finished replay counts what it skipped as dealt with, so its bar
// is full; a dry run schedules nothing.
func progressView(r delivery.Replay) templates.Progress {
	p := templates.Progress{Value: r.Scheduled, Max: r.Matched}
	if r.State != delivery.ReplayRunning {
		p.Value += r.Skipped
	}
	if r.DryRun {
		p.Value = 0
	}
	if p.Max <= 0 {
		p.Max, p.Value = 1, 0
		if r.State != delivery.ReplayRunning && !r.DryRun {
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
		p.Text = fmt.Sprintf("%d of %d scheduled (%d %%)", r.Scheduled, r.Matched, r.Scheduled*100/r.Matched)
		if r.Skipped > 0 {
			p.Text += fmt.Sprintf(", %d skipped", r.Skipped)
		}
	}
	return p
}

// criteriaWords says a replay's criteria in words: "tenant Acme, event type order.paid, created 2026-… to …".
func criteriaWords(f delivery.DeadFilter, names map[uuid.UUID]string) string {
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
		parts = append(parts, "subscription "+shortID(*f.SubscriptionID))
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

func (h *Handler) replayRow(r delivery.Replay, names map[uuid.UUID]string) templates.ReplayRow {
	return templates.ReplayRow{
		ID: r.ID.String(), ShortID: shortID(r.ID), Href: "/admin/replays/" + r.ID.String(), Kind: r.Kind, Actor: r.Actor,
		Criteria: criteriaWords(r.Criteria, names), Matched: r.Matched, Scheduled: r.Scheduled, Skipped: r.Skipped,
		State: r.State, StateClass: replayStateClass(r.State), DryRun: r.DryRun, Started: h.timeView(r.StartedAt),
		Finished: h.timePtr(r.FinishedAt), Progress: progressView(r), Error: r.Error,
	}
}

// replayLog is the audit log of replays, newest first; ?tenant= narrows it to one tenant's recovers.
func (h *Handler) replayLog(w http.ResponseWriter, r *http.Request) {
	if !h.adminOnly(w, r) {
		return
	}
	ctx := r.Context()
	names, _, err := h.tenantNames(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := delivery.ReplayListFilter{Limit: replayPageSize, Cursor: q.Get("cursor")}
	p := templates.ReplaysPage{Layout: h.adminLayout(r, templates.NavReplays, "Replays", templates.Crumb{Label: "Replays"})}
	base := "/admin/replays"
	if t := q.Get("tenant"); t != "" {
		id, err := uuid.Parse(t)
		if err != nil {
			h.fail(w, r, fault.Invalid("tenant %q is not a tenant id", t))
			return
		}
		f.TenantID = &id
		p.Scope = "Recovers by " + names[id]
		base += "?tenant=" + id.String()
	}
	page, err := h.replays.List(ctx, f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, rep := range page.Items {
		p.Rows = append(p.Rows, h.replayRow(rep, names))
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	if page.NextCursor != "" {
		p.NextHref = base + sep + "cursor=" + page.NextCursor
	}
	if f.Cursor != "" {
		p.FirstHref = base
	}
	h.render(w, r, http.StatusOK, templates.Replays(p))
}

// replayPage is one replay: a progress bar that refreshes while it runs, its criteria and counts, and the
// deliveries it scheduled.
func (h *Handler) replayPage(w http.ResponseWriter, r *http.Request) {
	if !h.adminOnly(w, r) {
		return
	}
	id, err := pathID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	rep, err := h.replays.Get(ctx, id, nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	names, _, err := h.tenantNames(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	dels, err := h.replays.Deliveries(ctx, id, replayPageSize, cursor)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := templates.ReplayPage{
		Layout: h.adminLayout(r, templates.NavReplays, "Replay "+shortID(id),
			templates.Crumb{Label: "Replays", Href: "/admin/replays"}, templates.Crumb{Label: "Replay " + shortID(id)}),
		Replay: h.replayRow(rep, names), Running: rep.State == delivery.ReplayRunning, Spread: spreadWords(rep.SpreadSeconds),
	}
	if p.Running {
		p.RefreshWithoutScript = replayRefresh
	}
	for _, d := range dels.Items {
		p.Deliveries = append(p.Deliveries, h.deliveryRow(d))
	}
	p.Version = fmt.Sprintf("%s-%d-%d-%d", rep.State, p.Replay.Progress.Value, p.Replay.Matched, len(p.Deliveries))
	base := "/admin/replays/" + id.String()
	if dels.NextCursor != "" {
		p.NextHref = base + "?cursor=" + dels.NextCursor
	}
	if cursor != "" {
		p.FirstHref = base
	}
	h.render(w, r, http.StatusOK, templates.ReplayView(p))
}

// spreadWords says over how long a replay spreads its deliveries' first attempts.
func spreadWords(seconds int) string {
	if seconds <= 0 {
		return "all at once"
	}
	return "spread over " + words(time.Duration(seconds)*time.Second)
}
