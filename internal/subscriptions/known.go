package subscriptions

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// Known reports whether id is one of the tenant's subscriptions, deleted ones included: their deliveries
// stay listed, so a list may still be filtered by them.
func (s *Service) Known(ctx context.Context, tenantID, id uuid.UUID) (bool, error) {
	ok, err := s.q.SubscriptionOfTenant(ctx, db.SubscriptionOfTenantParams{ID: id, TenantID: tenantID})
	if err != nil {
		return false, fmt.Errorf("subscription of tenant: %w", err)
	}
	return ok, nil
}
