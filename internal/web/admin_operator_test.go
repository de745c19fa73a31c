package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/testdb"
)

// /admin's "Operator notifications" card: off without HOOKLINE_OPERATOR_WEBHOOK_URL; with it, the internal
// subscription's endpoint and state, and once a notification has failed for good, since when it fails,
// its last error and its dead notification.
func TestAdminOperatorCard(t *testing.T) {
	t.Parallel()
	// A database of its own: the card counts every dead operator notification, and on the package's
	// shared database this test's server, when it led maintenance, also told the operator about other
	// tests' disabled subscriptions and expired deliveries, dead against the failing endpoint before the
	// card was first read.
	ownDB, drop, err := testdb.Create(context.Background(), "web_operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop) // after the servers stop (cleanups run last first)
	off := setup(t, withBackground, func(cfg *config.Config) {
		withAdmin(cfg)
		cfg.DatabaseURL = ownDB
	})
	c := off.client()
	c.login(adminEmail)
	p := c.get("/admin")
	card := one(t, p.Doc, "operator-card")
	if len(byTestID(card, "operator-off")) != 1 || !strings.Contains(text(card), "HOOKLINE_OPERATOR_WEBHOOK_URL") {
		t.Fatalf("without an operator URL the card does not say it is off: %q", text(card))
	}

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	e := setup(t, withBackground, func(cfg *config.Config) {
		withAdmin(cfg)
		cfg.DatabaseURL = ownDB
		cfg.OperatorWebhookURL = failing.URL + "/operator"
		cfg.OperatorWebhookSecret = delivery.NewSecret()
	})
	c = e.client()
	c.login(adminEmail)
	card = one(t, c.get("/admin").Doc, "operator-card")
	if got := text(one(t, card, "operator-url")); got != failing.URL+"/operator" {
		t.Errorf("operator endpoint %q", got)
	}
	if got := text(one(t, card, "state")); got != "active" {
		t.Errorf("operator state %q, want active", got)
	}
	if got := text(one(t, card, "operator-dead")); got != "0" {
		t.Errorf("dead notifications %q, want 0", got)
	}
	if got := text(one(t, card, "operator-last-error")); got != "none" {
		t.Errorf("last error %q, want none", got)
	}

	checkOperatorCardCountsDead(t, e, c)
}

// checkOperatorCardCountsDead makes an operator notification die against the failing endpoint and checks
// the card counts it, with the endpoint's error, while the subscription stays active.
func checkOperatorCardCountsDead(t *testing.T, e *env, c *client) {
	t.Helper()
	// A notification that fails every attempt (three here) and is dead-lettered.
	ctx := context.Background()
	var opTenant uuid.UUID
	if err := e.srv.Pool.QueryRow(ctx, "SELECT id FROM tenants WHERE internal AND name = $1", incidents.OperatorTenant).Scan(&opTenant); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"subscription_id": uuid.New()})
	pub, err := e.srv.Publisher.Publish(ctx, publish.PublishInput{TenantID: opTenant, EventType: incidents.EventFailing, Payload: b})
	if err != nil || len(pub.Deliveries) != 1 {
		t.Fatalf("publish to the operator: %+v, %v", pub, err)
	}
	var state string
	eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		if err := e.srv.Pool.QueryRow(ctx, "SELECT state FROM webhook_deliveries WHERE id = $1", pub.Deliveries[0].ID).Scan(&state); err != nil {
			t.Fatal(err)
		}
		return state == "failed" || state == "expired"
	}, func() string { return "the operator notification is still " + state })
	card := one(t, c.get("/admin").Doc, "operator-card")
	if got := text(one(t, card, "operator-dead")); got != "1" {
		t.Errorf("dead notifications %q, want 1", got)
	}
	if got := text(one(t, card, "operator-last-error")); !strings.Contains(got, "HTTP 503") {
		t.Errorf("last error %q, want HTTP 503", got)
	}
	if got := text(one(t, card, "operator-failing")); got == "not failing" {
		t.Errorf("failing since %q after only failures", got)
	}
	// A moment is said by its age ("Started failing 5 s ago"): "since 5 s ago" read oddly.
	if odd := regexp.MustCompile(`since (just now|\d+ \S+ ago)`).FindString(text(card)); odd != "" {
		t.Errorf("the card says %q", odd)
	}
	if got := text(one(t, card, "state")); got != "active" {
		t.Errorf("operator state %q after a dead notification, want active", got)
	}
}
