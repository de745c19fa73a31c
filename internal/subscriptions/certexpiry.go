package subscriptions

import "time"

// CertificateExpiryNotice is how long before a client certificate's not_after the tenant's users are
// emailed, the dashboard shows its banner and the operator gets subscription.certificate_expiring: two
// weeks leave time to get a renewed certificate through a customer's own PKI.
const CertificateExpiryNotice = 14 * 24 * time.Hour

// CertificateExpiresSoon says whether a client certificate valid until notAfter is within the notice
// window at now, or already expired. The caller checks the endpoint has a certificate at all.
func CertificateExpiresSoon(notAfter, now time.Time) bool {
	return !notAfter.After(now.Add(CertificateExpiryNotice))
}
