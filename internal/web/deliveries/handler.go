// Package deliveries is the dashboard's delivery pages: the filtered, paged list of a tenant's deliveries
// (the Deliveries page, and the list on a subscription's page), one delivery's page with Resend and Retry
// now, an event's page, and the header's search by id.
package deliveries

import (
	"github.com/hookline/hookline/internal/web/core"
)

// Handler serves the delivery pages.
type Handler struct {
	*core.Handler
}

// New builds the delivery pages on the dashboard's core.
func New(c *core.Handler) *Handler { return &Handler{Handler: c} }
