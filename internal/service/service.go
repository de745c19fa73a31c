// Package service is the one shape of Hookline's background services (the delivery worker, the replay
// runner, the maintenance leader, the catalogue poller, the notifier): Start launches the service's
// goroutines and returns, Stop asks them to end and waits for them until ctx ends. River's services
// share the same shape (startstop.Service). A Group starts services in order and stops them in reverse,
// so that what a service depends on outlives it.
package service

import (
	"context"
	"errors"
	"fmt"
)

// Service is a background service.
type Service interface {
	// Start launches the service; ctx bounds the start, not the service's life.
	Start(ctx context.Context) error
	// Stop ends the service and waits for its goroutines until ctx ends.
	Stop(ctx context.Context) error
}

// Named is a service with the name its errors carry.
type Named struct {
	Name string
	Service
}

// Group is services started in order and stopped in reverse.
type Group struct {
	services []Named
	started  int
}

// Add appends a service; services are added before Start.
func (g *Group) Add(name string, s Service) { g.services = append(g.services, Named{name, s}) }

// Start starts each service in order. When one fails, those already started are stopped (within ctx)
// and the error names the one that failed.
func (g *Group) Start(ctx context.Context) error {
	for _, s := range g.services[g.started:] {
		if err := s.Start(ctx); err != nil {
			return errors.Join(fmt.Errorf("start %s: %w", s.Name, err), g.Stop(ctx))
		}
		g.started++
	}
	return nil
}

// Stop stops the started services in reverse order, each within ctx, and joins their errors.
func (g *Group) Stop(ctx context.Context) error {
	var errs []error
	for ; g.started > 0; g.started-- {
		s := g.services[g.started-1]
		if err := s.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}
