package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/incidents"
	"golang.org/x/net/html"
)

// The incident list says what each step actually sent, read from the email outbox: emailed (how many,
// when) once sent, queued or retrying (with the last error) while pending, and "not emailed: no mail
// server configured" when set aside for lack of HOOKLINE_SMTP_URL; never "told" on the claim alone.
func TestIncidentStepsSayWhatWasSent(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("incident sent")
	subID := e.failingSubscription(tn, "sent", 1)
	c := e.client()
	c.login(tn.Email)
	since := time.Now().UTC().Add(-2 * time.Hour)
	e.failingSince(subID, &since) // opens the incident: one email queued (the tenant has one user)

	opened := func() *html.Node {
		t.Helper()
		rows := byTestID(one(t, c.get("/subscriptions/"+subID.String()).Doc, "incidents"), "incident-row")
		if len(rows) != 1 {
			t.Fatalf("%d incident rows, want 1", len(rows))
		}
		st := byTestID(rows[0], "incident-step")
		if len(st) != 1 || text(one(t, st[0], "step")) != "opened" {
			t.Fatalf("steps: %q", text(rows[0]))
		}
		return st[0]
	}
	set := func(sql string, args ...any) {
		t.Helper()
		e.exec(`UPDATE notifications SET `+sql+` WHERE tenant_id = $1 AND kind = '`+incidents.KindOpened+`'`, append([]any{tn.ID}, args...)...)
	}
	email := func(n *html.Node) (string, bool) {
		el := one(t, n, "step-email")
		return text(el), strings.Contains(attr(el, "class"), "rate-bad")
	}

	// Pending, then retrying: not yet sent, and said so. (Due tomorrow, so no notifier takes it meanwhile.)
	set(`sent_at = NULL, next_attempt_at = now() + interval '1 day', last_error = ''`)
	if got, bad := email(opened()); got != "email queued" || !bad {
		t.Errorf("queued email shows %q (bad %v)", got, bad)
	}
	set(`next_attempt_at = now() + interval '1 day', last_error = 'dial tcp: connection refused'`)
	if got, _ := email(opened()); got != "email retrying (last error: dial tcp: connection refused)" {
		t.Errorf("retrying email shows %q", got)
	}

	// Set aside without a mail server.
	set(`next_attempt_at = 'infinity', last_error = $2`, incidents.NoMailServer)
	if got, bad := email(opened()); got != "not emailed: no mail server configured" || !bad {
		t.Errorf("email set aside for lack of SMTP shows %q (bad %v)", got, bad)
	}

	// Sent.
	sentAt := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	set(`sent_at = $2, last_error = ''`, sentAt)
	got, bad := email(opened())
	at := sentAt.Format("15:04 UTC") // the time alone on the day it was sent, else with its date
	if time.Now().UTC().Format(time.DateOnly) != sentAt.Format(time.DateOnly) {
		at = sentAt.Format("2006-01-02 15:04 UTC")
	}
	if got != "emailed 1 person at "+at || bad {
		t.Errorf("sent email shows %q (bad %v), want emailed 1 person at %s", got, bad, at)
	}
	if n := len(byTestID(opened(), "step-operator")); n != 0 {
		t.Errorf("an operator notification shown without HOOKLINE_OPERATOR_WEBHOOK_URL")
	}
}
