package deliveries

// Test hooks for the external test package (deliveries_test).

// AfterRead makes the service run f between a manual retry's read of the delivery and its statement.
func (s *Service) AfterRead(f func()) { s.afterRead = f }
