package incidents

import "context"

// SetAfterClaim runs f in each step's transaction between its claim and what it tells (tests: a crash there).
func (s *Service) SetAfterClaim(f func(ctx context.Context, kind string) error) { s.afterClaim = f }
