package server

import (
	"context"

	"github.com/hookline/hookline/internal/tracing"
)

// StartMaintainer starts the server's maintenance leader on its own: Serve's start of it then fails.
func StartMaintainer(ctx context.Context, s *Server) error { return s.maintainer.Start(ctx) }

// TracingOf is the server's tracing.
func TracingOf(s *Server) *tracing.Tracing { return s.tracing.Tracing }

// StopMaintainer stops what StartMaintainer started.
func StopMaintainer(ctx context.Context, s *Server) error { return s.maintainer.Stop(ctx) }

// Serving names the services Serve started, in order.
func Serving(s *Server) []string {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	var names []string
	for _, n := range s.serving {
		names = append(names, n.Name)
	}
	return names
}
