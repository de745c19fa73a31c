package subscriptions

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
)

// ExpiringCertificate is an endpoint whose client certificate expires within CertificateExpiryNotice, or
// has expired: what the dashboard's banner names.
type ExpiringCertificate struct {
	SubscriptionID uuid.UUID
	URL            string
	Description    string
	NotAfter       time.Time
}

// CertificatesExpiring lists the tenant's endpoints whose client certificate expires by now plus
// CertificateExpiryNotice (expired ones too), soonest first.
func (s *Service) CertificatesExpiring(ctx context.Context, tenantID uuid.UUID) ([]ExpiringCertificate, error) {
	rows, err := s.q.TenantCertificatesExpiring(ctx, db.TenantCertificatesExpiringParams{
		TenantID: tenantID, ExpiresBy: s.now().Add(CertificateExpiryNotice),
	})
	if err != nil {
		return nil, fmt.Errorf("certificates expiring: %w", err)
	}
	out := make([]ExpiringCertificate, 0, len(rows))
	for _, r := range rows {
		out = append(out, ExpiringCertificate{SubscriptionID: r.ID, URL: r.URL, Description: r.Description, NotAfter: r.NotAfter})
	}
	return out, nil
}
