package tenants

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// NamedToken is what pages call an API token: its name, and whether it was revoked.
type NamedToken struct {
	Name    string
	Revoked bool
}

// TokenNames says what pages call some of a tenant's API tokens, revoked ones included (an activity log
// names the tokens its entries are about, also once revoked). Ids of no token of the tenant's are left out.
func (s *Service) TokenNames(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]NamedToken, error) {
	out := make(map[uuid.UUID]NamedToken, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.TokenNames(ctx, db.TokenNamesParams{TenantID: &tenantID, Ids: ids})
	if err != nil {
		return nil, fmt.Errorf("token names: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = NamedToken{Name: r.Name, Revoked: r.RevokedAt != nil}
	}
	return out, nil
}

// UserEmails are the emails of some of a tenant's dashboard users, by id (an activity log names the users
// its entries are about). Removed users, and ids of no user of the tenant's, are left out.
func (s *Service) UserEmails(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	out := make(map[uuid.UUID]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.UserEmails(ctx, db.UserEmailsParams{TenantID: &tenantID, Ids: ids})
	if err != nil {
		return nil, fmt.Errorf("user emails: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Email
	}
	return out, nil
}
