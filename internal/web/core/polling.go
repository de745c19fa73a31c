package core

import "github.com/google/uuid"

// PollPath is the API path a polling subscription's consumers pull its deliveries from (pages show it
// where a webhook subscription's URL would be).
func PollPath(tenantID, subID uuid.UUID) string {
	return "/api/v1/tenants/" + tenantID.String() + "/subscriptions/" + subID.String() + "/poll"
}
