// Package admin is the operator console under /admin: the tenants overview, a tenant's page with its users,
// API tokens and activity, the dead letters across tenants, bulk replay and the replays' audit log. For
// operators only (RequireAdmin); anyone else gets the 404 page, so a customer cannot even tell it exists.
package admin

import (
	"github.com/hookline/hookline/internal/web/activitylog"
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/internal/web/endpoints"
)

// Handler serves the operator console.
type Handler struct {
	*core.Handler
	// endpoints shows a tenant's subscriptions with their health; activityLog its activity.
	endpoints   *endpoints.Handler
	activityLog *activitylog.Handler
}

// New builds the operator console on the dashboard's core.
func New(c *core.Handler, e *endpoints.Handler, a *activitylog.Handler) *Handler {
	return &Handler{Handler: c, endpoints: e, activityLog: a}
}
