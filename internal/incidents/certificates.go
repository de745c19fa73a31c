package incidents

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/bounded"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/jackc/pgx/v5"
)

// KindCertificateExpiring is the notification kind of the email telling a tenant's users that an
// endpoint's client certificate expires within subscriptions.CertificateExpiryNotice.
const KindCertificateExpiring = "certificate_expiring"

// certificateNotices tells of client certificates that expire within the notice window (or have expired
// without being told): each tenant user one email, the operator one subscription.certificate_expiring
// when operator notifications are on. Each certificate is claimed once in SQL, Batch at a time, and the
// claim commits with what it tells, as an incident step does.
func (s *Service) certificateNotices(ctx context.Context, now time.Time) error {
	for claimed := s.o.Batch; claimed == s.o.Batch; { // while a batch comes back full
		var told []db.ClaimCertificateExpiryNoticesRow
		err := bounded.Do(ctx, Statement, func(ctx context.Context) error {
			return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				q := s.q.WithTx(tx)
				rows, err := q.ClaimCertificateExpiryNotices(ctx, db.ClaimCertificateExpiryNoticesParams{Now: now,
					NoticeBefore: now.Add(subscriptions.CertificateExpiryNotice), MaxRows: int32(s.o.Batch)})
				if err != nil {
					return err
				}
				if s.afterClaim != nil && len(rows) > 0 {
					if err := s.afterClaim(ctx, KindCertificateExpiring, len(rows)); err != nil {
						return err
					}
				}
				for _, r := range rows {
					if err := s.tellCertificate(ctx, tx, q, r, now); err != nil {
						return err
					}
				}
				told = rows
				return nil
			})
		})
		if err != nil {
			return err
		}
		claimed = len(told)
		for _, r := range told {
			s.o.Log.Info("client certificate expiry told", "subscription_id", r.ID, "tenant_id", r.TenantID,
				"not_after", r.NotAfter)
		}
	}
	return nil
}

// tellCertificate queues, in the claim's transaction, one email per dashboard user of the tenant and the
// operator's notification. The data holds what the message says (the certificate's subject and expiry,
// public parts of it), never the certificate's key or any other credential of the endpoint.
func (s *Service) tellCertificate(ctx context.Context, tx pgx.Tx, q *db.Queries, r db.ClaimCertificateExpiryNoticesRow, now time.Time) error {
	body, err := json.Marshal(map[string]any{
		"tenant_id": r.TenantID, "subscription_id": r.ID, "url": r.URL, "description": r.Description,
		"subject": r.Subject, "not_after": r.NotAfter, "expired": !r.NotAfter.After(now),
		"link": s.o.PublicURL + "/subscriptions/" + r.ID.String(),
	})
	if err != nil {
		return err
	}
	tenantID := r.TenantID
	emails, err := q.TenantUserEmails(ctx, &tenantID)
	if err != nil {
		return fmt.Errorf("subscription %s: recipients: %w", r.ID, err)
	}
	for _, to := range emails {
		if err := q.EnqueueNotification(ctx, db.EnqueueNotificationParams{TenantID: r.TenantID, Kind: KindCertificateExpiring,
			Recipient: to, Data: body, Now: now}); err != nil {
			return fmt.Errorf("subscription %s: queue email: %w", r.ID, err)
		}
	}
	if s.o.Operator != nil {
		if _, err := s.o.Operator.NotifyTx(ctx, tx, EventCertificateExpiring, map[string]any{"tenant_id": r.TenantID,
			"subscription_id": r.ID, "url": r.URL, "subject": r.Subject, "not_after": r.NotAfter}); err != nil {
			return fmt.Errorf("subscription %s: operator notification: %w", r.ID, err)
		}
	}
	return nil
}
