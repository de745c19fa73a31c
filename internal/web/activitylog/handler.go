// Package activitylog is the dashboard's activity log pages: a tenant's own log (/activity), and the
// entries in words, which the operator console shows for any tenant.
package activitylog

import (
	"github.com/hookline/hookline/internal/web/core"
)

// Handler serves the activity log pages.
type Handler struct {
	*core.Handler
}

// New builds the activity log pages on the dashboard's core.
func New(c *core.Handler) *Handler { return &Handler{Handler: c} }
