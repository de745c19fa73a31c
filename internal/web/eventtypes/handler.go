// Package eventtypes is the dashboard's Event types page: the event catalogue as the platform grouped it,
// each type's fields and example, and Send example to one of the tenant's subscriptions.
package eventtypes

import (
	"github.com/hookline/hookline/internal/web/core"
)

// Handler serves the Event types page.
type Handler struct {
	*core.Handler
}

// New builds the Event types page on the dashboard's core.
func New(c *core.Handler) *Handler { return &Handler{Handler: c} }
