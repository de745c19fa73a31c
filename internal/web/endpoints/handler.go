// Package endpoints is the dashboard's subscription pages: the home page's list with each subscription's
// health, a subscription's page (health, incidents, recover, its deliveries), the endpoint form (add, edit,
// delete), signing secrets, pause and resume, a test event, and a customer's recover of dead deliveries.
package endpoints

import (
	"github.com/hookline/hookline/internal/web/core"
	"github.com/hookline/hookline/internal/web/deliveries"
)

// Handler serves the subscription pages.
type Handler struct {
	*core.Handler
	// deliveries lists a subscription's deliveries on its page.
	deliveries *deliveries.Handler
}

// New builds the subscription pages on the dashboard's core.
func New(c *core.Handler, d *deliveries.Handler) *Handler { return &Handler{Handler: c, deliveries: d} }
