package replays

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// Bounds of the dead-letter overview (the chart by hour and the grouped table of /admin/dead): it reads
// only the newest rows of its range, so a huge dead-letter queue cannot make the page slow.
const (
	// DeadOverviewDefaultRange is the range the overview covers when the filter gives no creation time.
	DeadOverviewDefaultRange = 48 * time.Hour
	// DeadOverviewMaxRange is the longest range it covers (the newest part of a longer one).
	DeadOverviewMaxRange = 7 * 24 * time.Hour
	// DeadChartMaxRows is how many of the newest dead letters the chart counts (an index-only scan).
	DeadChartMaxRows = 50000
	// DeadGroupsMaxRows is how many of the newest dead letters the grouped table reads, and MaxDeadGroups
	// how many groups it shows, largest first.
	DeadGroupsMaxRows = 10000
	MaxDeadGroups     = 100
)

// DeadHour is how many dead letters were created in one hour (UTC).
type DeadHour struct {
	Hour       time.Time `json:"hour"`
	Deliveries int64     `json:"deliveries"`
}

// DeadGroup is the dead letters of one tenant's subscription with one last status (nil: no response).
// SubscriptionDeleted says the subscription was deleted: no replay schedules its dead letters.
type DeadGroup struct {
	TenantID            uuid.UUID `json:"tenant_id"`
	TenantName          string    `json:"tenant_name"`
	SubscriptionID      uuid.UUID `json:"subscription_id"`
	SubscriptionURL     string    `json:"subscription_url"`
	SubscriptionDeleted bool      `json:"subscription_deleted"`
	LastStatus          *int      `json:"last_status"`
	Deliveries          int64     `json:"deliveries"`
	FirstCreated        time.Time `json:"first_created"`
	LastCreated         time.Time `json:"last_created"`
}

// DeadOverview is where the dead letters of a range are: by hour of creation and by tenant, subscription
// and last status.
type DeadOverview struct {
	// From and To are the range covered: the filter's creation times, else the last 48 hours; at most
	// DeadOverviewMaxRange (Clipped says a longer range was cut to its newest part).
	From, To time.Time
	Clipped  bool
	Hours    []DeadHour
	// HoursCapped says the chart counted only the newest DeadChartMaxRows.
	HoursCapped bool
	Groups      []DeadGroup
	// GroupsCapped says the groups hold only the newest DeadGroupsMaxRows; MoreGroups that there were
	// more than MaxDeadGroups groups.
	GroupsCapped bool
	MoreGroups   bool
}

// DeadOverview counts the dead letters matching f by hour and groups them by tenant, subscription and last
// status, over f's creation range (the last 48 hours when it has none).
func (s *Replays) DeadOverview(ctx context.Context, f DeadFilter) (DeadOverview, error) {
	if err := f.Validate(); err != nil {
		return DeadOverview{}, err
	}
	var o DeadOverview
	o.To = s.now()
	if f.CreatedTo != nil {
		o.To = *f.CreatedTo
	}
	o.From = o.To.Add(-DeadOverviewDefaultRange)
	if f.CreatedFrom != nil {
		o.From = *f.CreatedFrom
	}
	if o.To.Sub(o.From) > DeadOverviewMaxRange {
		o.From, o.Clipped = o.To.Add(-DeadOverviewMaxRange), true
	}
	if !o.From.Before(o.To) {
		return o, nil
	}
	p := f.params(nil)
	hours, err := s.q.DeadLettersByHour(ctx, db.DeadLettersByHourParams{
		TenantID: p.TenantID, SubscriptionID: p.SubscriptionID, EventType: p.EventType, States: p.States,
		DeadReason: p.DeadReason, CreatedFrom: o.From, CreatedTo: o.To, MaxRows: DeadChartMaxRows,
	})
	if err != nil {
		return DeadOverview{}, fmt.Errorf("dead letters by hour: %w", err)
	}
	var counted int64
	for _, h := range hours {
		o.Hours = append(o.Hours, DeadHour{Hour: h.Hour.UTC(), Deliveries: h.Deliveries})
		counted += h.Deliveries
	}
	o.HoursCapped = counted >= DeadChartMaxRows
	groups, err := s.q.DeadLetterGroups(ctx, db.DeadLetterGroupsParams{
		TenantID: p.TenantID, SubscriptionID: p.SubscriptionID, EventType: p.EventType, States: p.States,
		DeadReason: p.DeadReason, CreatedFrom: o.From, CreatedTo: o.To, MaxRows: DeadGroupsMaxRows, MaxGroups: MaxDeadGroups + 1,
	})
	if err != nil {
		return DeadOverview{}, fmt.Errorf("dead letter groups: %w", err)
	}
	o.MoreGroups = len(groups) > MaxDeadGroups
	// Grouping read at most DeadGroupsMaxRows; whether it stopped there follows from the chart's count,
	// which reads the same rows further.
	o.GroupsCapped = counted > DeadGroupsMaxRows
	for _, g := range groups[:min(len(groups), MaxDeadGroups)] {
		dg := DeadGroup{TenantID: g.TenantID, TenantName: g.TenantName, SubscriptionID: g.SubscriptionID,
			SubscriptionURL: g.SubscriptionURL, SubscriptionDeleted: g.SubscriptionDeleted, Deliveries: g.Deliveries, FirstCreated: g.FirstCreated.UTC(), LastCreated: g.LastCreated.UTC()}
		if g.LastStatus != nil {
			st := int(*g.LastStatus)
			dg.LastStatus = &st
		}
		o.Groups = append(o.Groups, dg)
	}
	return o, nil
}
