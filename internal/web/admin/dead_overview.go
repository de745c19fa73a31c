package admin

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/hookline/hookline/internal/params"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/web/templates"
)

// deadChartView lays out the dead letters by hour of creation over the overview's range: one bar per hour,
// empty hours included, and the same numbers as the (visually hidden) table.
func deadChartView(o replays.DeadOverview, filtered bool) templates.DeadChart {
	c := templates.DeadChart{Height: 80}
	counts := map[time.Time]int64{}
	for _, h := range o.Hours {
		counts[h.Hour] = h.Deliveries
		c.Total += h.Deliveries
		c.Max = max(c.Max, h.Deliveries)
	}
	const row = "Jan 2 15:04"
	var hours []time.Time
	for at := o.From.UTC().Truncate(time.Hour); at.Before(o.To); at = at.Add(time.Hour) {
		hours = append(hours, at)
	}
	c.Width = max(len(hours), 1) * 10
	if !filtered {
		c.Note = "the last 48 hours"
	}
	if o.Clipped {
		c.Note = "the last 7 days of the range"
	}
	if len(hours) > 0 {
		c.From = hours[0].Format(row)
		c.To = hours[len(hours)-1].Format(row) + " UTC"
	}
	c.Label = fmt.Sprintf("Dead letters per hour of creation, %s to %s: %d in all", c.From, c.To, c.Total)
	if o.HoursCapped {
		c.Capped, c.CapText = true, strconv.Itoa(replays.DeadChartMaxRows)
		c.Label += fmt.Sprintf(" (the newest %d counted)", replays.DeadChartMaxRows)
	}
	scale := 0.0
	if c.Max > 0 {
		scale = float64(c.Height-2) / float64(c.Max)
	}
	for i, at := range hours {
		n := counts[at]
		b := templates.DeadBar{X: float64(i)*10 + 1.5, W: 7, H: float64(n) * scale, When: at.Format(row), Count: n,
			Title: fmt.Sprintf("%s UTC: %s", at.Format(row), templates.Plural(n, "dead letter", "dead letters"))}
		if n > 0 {
			b.H = max(b.H, 1) // one dead letter in a busy range still shows
		}
		b.Y = float64(c.Height) - b.H
		c.Bars = append(c.Bars, b)
	}
	return c
}

// deadGroupsView is the grouped table, each row leading to the bulk replay form filled with that group's
// tenant, subscription and a window covering its first to its last dead letter (the form takes minutes:
// from the first's minute to the minute after the last). A deleted subscription's group is marked so and
// leads nowhere: its page is gone, and a replay would match none of its deliveries.
func (h *Handler) deadGroupsView(o replays.DeadOverview) templates.DeadGroups {
	g := templates.DeadGroups{Capped: o.GroupsCapped, More: o.MoreGroups, CapText: strconv.Itoa(replays.DeadGroupsMaxRows)}
	for _, x := range o.Groups {
		status := "no response"
		if x.LastStatus != nil {
			status = strconv.Itoa(*x.LastStatus)
		}
		row := templates.DeadGroupRow{
			TenantName: x.TenantName, TenantHref: "/admin/tenants/" + x.TenantID.String(),
			SubURL: x.SubscriptionURL, SubDeleted: x.SubscriptionDeleted, Status: status,
			Count: x.Deliveries, First: h.TimeView(x.FirstCreated), Last: h.TimeView(x.LastCreated),
		}
		if !x.SubscriptionDeleted {
			q := url.Values{
				"tenant": {x.TenantID.String()}, "subscription": {x.SubscriptionID.String()},
				"from": {x.FirstCreated.UTC().Truncate(time.Minute).Format(params.FormTime)},
				"to":   {x.LastCreated.UTC().Truncate(time.Minute).Add(time.Minute).Format(params.FormTime)},
			}
			row.SubHref, row.ReplayHref = "/subscriptions/"+x.SubscriptionID.String(), "/admin/replay?"+q.Encode()
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}
