package incidents

import "context"

// SetAfterClaim runs f in each step's transaction between its claim of n steps and what it tells (tests: a
// crash there; the size of a batch).
func (s *Service) SetAfterClaim(f func(ctx context.Context, kind string, n int) error) {
	s.afterClaim = f
}
