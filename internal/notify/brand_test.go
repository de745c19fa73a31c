package notify

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/incidents"
)

// Customer emails name the platform's brand (HOOKLINE_BRAND_NAME), not Hookline.
func TestEmailsUseTheBrandName(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(map[string]any{"url": "https://example.com/hook", "description": "Orders",
		"failing_since": time.Now().Add(-time.Hour), "opened_at": time.Now(), "waiting": 3, "link": "https://hooks.acme.example/subscriptions/x",
		"subject": "CN=orders.example.com", "not_after": time.Now().Add(13 * 24 * time.Hour)})
	for _, kind := range []string{incidents.KindOpened, incidents.KindDay, incidents.KindCertificateExpiring} {
		m, err := compose(context.Background(), kind, raw, "Acme Cloud")
		if err != nil {
			t.Fatal(err)
		}
		for part, text := range map[string]string{"subject": m.Subject, "text": m.Text, "html": m.HTML} {
			if strings.Contains(text, "Hookline") {
				t.Errorf("%s email's %s names Hookline: %q", kind, part, text)
			}
		}
		if !strings.Contains(m.Text, "Acme Cloud") || !strings.Contains(m.HTML, "Acme Cloud") {
			t.Errorf("%s email does not name the brand: %q", kind, m.Text)
		}
	}
}
