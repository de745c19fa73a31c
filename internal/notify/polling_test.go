package notify

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/incidents"
)

// A polling subscription's incident emails (it has no URL) say that nobody pulls it, name it by its
// description (or "Polling subscription"), and never show an endpoint or speak of failing attempts.
func TestPollingIncidentEmails(t *testing.T) {
	since := time.Date(2026, 3, 2, 9, 12, 0, 0, time.UTC)
	expiry := since.Add(72 * time.Hour)
	for _, description := range []string{"Warehouse sync", ""} {
		name := description
		if name == "" {
			name = "Polling subscription"
		}
		for _, kind := range []string{incidents.KindOpened, incidents.KindDay, incidents.KindExpiring, incidents.KindExpired, incidents.KindEnded} {
			raw, _ := json.Marshal(map[string]any{"url": "", "description": description, "failing_since": since, "opened_at": since,
				"ended_at": since.Add(time.Hour), "waiting": 3, "first_expiry": expiry, "expired": 2, "link": "https://hooks.example.com/subscriptions/x"})
			m, err := compose(context.Background(), kind, raw, "Hookline")
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			for _, part := range []string{m.Subject, m.Text} {
				if !strings.Contains(part, name) {
					t.Errorf("%s (%q): %q does not name %q", kind, description, part, name)
				}
				for _, wrong := range []string{"(endpoint)", "attempt", "Endpoint:", "webhook endpoint"} {
					if strings.Contains(part, wrong) {
						t.Errorf("%s (%q): says %q: %s", kind, description, wrong, part)
					}
				}
			}
			if kind == incidents.KindOpened && !strings.Contains(m.Text, "No consumer has committed a delivery") {
				t.Errorf("opened: %s", m.Text)
			}
		}
	}
}
