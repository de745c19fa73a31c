// Package core is what every dashboard page shares: the services and settings the pages are given
// (Handler), the page frame and its rendering (layouts, the error and 404 pages), who is calling, reading a
// request (path ids, form times), the one-time flash message, and the view models built from domain values
// (times, states, a subscription, a delivery's rows, a replay's progress). The area packages (endpoints,
// deliveries, eventtypes, activitylog, admin) build their pages on it; package web routes to them.
package core

import (
	"log/slog"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
)

// Handler holds the services and settings of the dashboard's pages; each area's handler embeds it.
type Handler struct {
	Tenants   *tenants.Service
	Subs      *subscriptions.Service
	Dels      *deliveries.Service
	Replays   *replays.Replays
	Activity  *activity.Log
	Publisher *publish.Publisher
	// Catalogue, when set, is the event catalogue (nil: an empty one).
	Catalogue *catalogue.Service
	// Incidents, when set, puts the open incidents' banner on a tenant's pages.
	Incidents *incidents.Service
	// Portal, when set, lets customers in by single-use portal links.
	Portal *portal.Service
	// History, when set, is the delivery history's partitions and retention that /admin shows.
	History *history.Monitor
	// Polling, when set, answers a polling subscription's consumers for its page.
	Polling *polling.Service
	// Policy, Timeout and MaxManual are the delivery contract pages tell.
	Policy    delivery.RetryPolicy
	Timeout   time.Duration
	MaxManual int
	Now       func() time.Time
	Log       *slog.Logger
	Sessions  *scs.SessionManager
	// Brand is the platform's name, logo and accent colour; FrameAncestors the origins that may frame pages.
	Brand          brand.Brand
	FrameAncestors []string
}
