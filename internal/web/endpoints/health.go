package endpoints

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/web/core"
	deliverypages "github.com/hookline/hookline/internal/web/deliveries"
	"github.com/hookline/hookline/web/templates"
)

// This file is the health panel: attempt success rate, deliveries by outcome (each count a link to the
// list), and the chart over a range (?range=1h in minutes, 24h in hours, 7d in days).

// SubscriptionsWithHealth is a tenant's subscriptions with their 24 h health, for the home page and the
// operator's tenant page: health for all of them in a few queries, not a few per subscription.
func (h *Handler) SubscriptionsWithHealth(ctx context.Context, tenantID uuid.UUID) ([]templates.Subscription, error) {
	subs, err := h.Subs.List(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	rg := subscriptions.Range24h
	since := h.Now().Add(-rg.Span)
	health, err := h.Subs.HealthSince(ctx, tenantID, subs, since)
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(subs))
	for i, s := range subs {
		ids[i] = s.ID
	}
	series, err := h.Subs.SeriesOf(ctx, tenantID, ids, rg)
	if err != nil {
		return nil, err
	}
	states, err := h.Dels.StateCounts(ctx, tenantID, ids, deliverypages.TabCountUpTo)
	if err != nil {
		return nil, err
	}
	runs, err := h.Subs.FailingRuns(ctx, tenantID, subs)
	if err != nil {
		return nil, err
	}
	out := make([]templates.Subscription, 0, len(subs))
	for _, s := range subs {
		v := h.SubscriptionView(s)
		if s.FailingSince != nil {
			v.FailingSince = h.failingText(s, runs[s.ID])
		}
		v.Health = h.healthView(health[s.ID], series[s.ID], states[s.ID], rg, v.Href)
		pollingHealth(&v)
		out = append(out, v)
	}
	return out, nil
}

// subscriptionWithHealth is one subscription with its health over the page's ?range (24 h when absent or
// unknown), with the other ranges offered; states are its deliveries by state now, read by the caller
// with the page's list.
func (h *Handler) subscriptionWithHealth(r *http.Request, tenantID uuid.UUID, s subscriptions.Subscription, states deliveries.StateCounts) (templates.Subscription, error) {
	ctx := r.Context()
	rg, ok := subscriptions.RangeNamed(r.URL.Query().Get("range"))
	if !ok {
		rg = subscriptions.Range24h
	}
	since := h.Now().Add(-rg.Span)
	// HealthSince with the subscription in hand: Health would read it again.
	health, err := h.Subs.HealthSince(ctx, tenantID, []subscriptions.Subscription{s}, since)
	if err != nil {
		return templates.Subscription{}, err
	}
	series, err := h.Subs.SeriesOf(ctx, tenantID, []uuid.UUID{s.ID}, rg)
	if err != nil {
		return templates.Subscription{}, err
	}
	runs, err := h.Subs.FailingRuns(ctx, tenantID, []subscriptions.Subscription{s})
	if err != nil {
		return templates.Subscription{}, err
	}
	v := h.SubscriptionView(s)
	if s.FailingSince != nil {
		v.FailingSince = h.failingText(s, runs[s.ID])
	}
	v.Health = h.healthView(health[s.ID], series[s.ID], states, rg, v.Href)
	pollingHealth(&v)
	for _, o := range subscriptions.Ranges {
		v.Health.Ranges = append(v.Health.Ranges, templates.RangeOption{
			Value: o.Name, Label: rangeLabels[o.Name], Href: v.Href + "?range=" + o.Name, Current: o.Name == rg.Name,
		})
	}
	return v, nil
}

// rangeLabels name the range choices as buttons show them.
var rangeLabels = map[string]string{"1h": "1 hour", "24h": "24 hours", "7d": "7 days"}

// percent writes a share as "97.5 %" ("100 %", not "100.0 %").
func percent(share float64) string {
	return strings.Replace(strconv.FormatFloat(share*100, 'f', 1, 64)+" %", ".0 %", " %", 1)
}

// healthView is the health card. Two kinds of numbers, each with one meaning: over the range, the attempts
// (how many, the share that succeeded, latency, the chart) and "delivered", the attempts that succeeded
// (each delivered a delivery), from the same per-minute totals, so that after a replay of old deliveries
// the card says 30 delivered beside 30 attempts at 100 %; and now, the subscription's deliveries that
// are dead, pending (of them retrying) or in flight, counted as its list's state tabs count them (states),
// each a link to that tab.
func (h *Handler) healthView(hl subscriptions.Health, series []subscriptions.HourBucket, states deliveries.StateCounts,
	rg subscriptions.Range, subHref string) templates.Health {
	v := templates.Health{
		HasAttempts: hl.Attempts > 0, Attempts: hl.Attempts, Successes: hl.Successes, Failures: hl.Attempts - hl.Successes,
		P50: "—", P95: "—", ConsecutiveFailures: hl.ConsecutiveFailures,
		LastSuccess: h.TimePtr(hl.LastSuccessAt), LastFailure: h.TimePtr(hl.LastFailureAt),
		Chart: chartView(series, rg), RangeLabel: rg.Label,
	}
	if hl.SuccessRate != nil {
		rate := *hl.SuccessRate * 100
		v.SuccessRate = percent(*hl.SuccessRate)
		switch {
		case rate >= 99:
			v.RateClass = "rate-good"
		case rate >= 90:
			v.RateClass = "rate-warn"
		default:
			v.RateClass = "rate-bad"
		}
	}
	if hl.Attempts > 0 {
		v.P50 = core.Span(time.Duration(hl.LatencyMsP50 * float64(time.Millisecond)))
		v.P95 = core.Span(time.Duration(hl.LatencyMsP95 * float64(time.Millisecond)))
	}
	link := func(state string) string { return subHref + "?state=" + state }
	now := func(label string, c deliveries.Capped, state, class, testID string, part bool) templates.Outcome {
		return templates.Outcome{Label: label, Count: core.CountText(c.N, c.AtLeast), N: c.N, Href: link(state), Class: class,
			TestID: testID, Part: part}
	}
	// The words of delivery.Pending, as the tabs count them: retrying is part of pending.
	v.Outcomes = []templates.Outcome{
		{Label: "delivered", Count: core.CountText(int64(hl.Successes), false), N: int64(hl.Successes), Class: "badge-ok",
			TestID: "delivered-count", When: "in the " + rg.Label},
		now("dead", states.Dead, "dead", "badge-bad", "dead-count", false),
		now("pending", states.Pending, "pending", "badge-info", "pending-count", false),
		now("retrying", states.Retrying, "retrying", "badge-warn", "retrying-count", true),
	}
	if states.InFlight.N > 0 {
		v.Outcomes = append(v.Outcomes, now("in flight", states.InFlight, "in_flight", "badge-info", "in-flight-count", false))
	}
	v.OutcomesNote = "Delivered: the attempts of the " + rg.Label + " that succeeded. Dead, pending and in flight: this endpoint's deliveries in that state now, as its list counts them."
	return v
}

// chartView lays out one stacked bar per step of the range (successful attempts at the bottom, failed ones
// above), its time axis and the same numbers as table rows.
func chartView(series []subscriptions.HourBucket, rg subscriptions.Range) templates.Chart {
	c := templates.Chart{Width: 240, Height: 60, Columns: len(series)}
	ok, failed := 0, 0
	for _, b := range series {
		c.Max = max(c.Max, b.Successes+b.Failures)
		ok += b.Successes
		failed += b.Failures
	}
	unit, tick, row := "hour", "15:04", "Jan 2 15:04"
	switch rg.Step {
	case time.Minute:
		unit, tick, row = "minute", "15:04", "15:04"
	case 24 * time.Hour:
		unit, tick, row = "day", "Mon 2", "Mon Jan 2"
	}
	c.Step = "per " + unit
	c.Label = fmt.Sprintf("Successful and failed attempts per %s over the %s (UTC): %d successful, %d failed", unit, rg.Label, ok, failed)
	if len(series) == 0 {
		return c
	}
	c.From = series[0].Hour.UTC().Format(row)
	c.To = series[len(series)-1].Hour.UTC().Format(row) + " UTC"
	slot := float64(c.Width) / float64(len(series))
	scale := 0.0
	if c.Max > 0 {
		scale = float64(c.Height-2) / float64(c.Max)
	}
	for i, b := range series {
		at := b.Hour.UTC()
		bar := templates.Bar{X: float64(i)*slot + slot*0.15, W: slot * 0.7,
			Title: fmt.Sprintf("%s UTC: %d successful, %d failed attempts", at.Format(row), b.Successes, b.Failures)}
		bar.OkH = float64(b.Successes) * scale
		bar.OkY = float64(c.Height) - bar.OkH
		bar.FailH = float64(b.Failures) * scale
		bar.FailY = bar.OkY - bar.FailH
		c.Bars = append(c.Bars, bar)
		label := ""
		switch rg.Step {
		case time.Minute:
			if at.Minute()%15 == 0 {
				label = at.Format(tick)
			}
		case time.Hour:
			if at.Hour()%6 == 0 {
				label = at.Format(tick)
			}
		default:
			label = at.Format(tick)
		}
		if rg.Step < 24*time.Hour && i >= len(series)-len(series)/10 {
			label = "" // it would not fit before the chart's right edge
		}
		c.Ticks = append(c.Ticks, templates.Tick{Label: label})
		c.Rows = append(c.Rows, templates.ChartRow{When: at.Format(row), Successes: b.Successes, Failures: b.Failures})
	}
	return c
}
