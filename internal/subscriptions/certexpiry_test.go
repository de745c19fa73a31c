package subscriptions

import (
	"testing"
	"time"
)

// The notice window closes on not_after itself: 14 days and more before, not yet; from exactly 14 days
// before, and once expired, yes.
func TestCertificateExpiresSoon(t *testing.T) {
	t.Parallel()
	notAfter := time.Date(2026, 3, 18, 10, 15, 0, 0, time.UTC)
	for _, c := range []struct {
		before time.Duration
		want   bool
	}{
		{20 * 24 * time.Hour, false},
		{CertificateExpiryNotice + time.Second, false},
		{CertificateExpiryNotice, true},
		{13 * 24 * time.Hour, true},
		{0, true},
		{-time.Hour, true}, // expired an hour ago
	} {
		if got := CertificateExpiresSoon(notAfter, notAfter.Add(-c.before)); got != c.want {
			t.Errorf("%s before not_after: CertificateExpiresSoon = %v, want %v", c.before, got, c.want)
		}
	}
}
