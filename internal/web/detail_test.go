package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/jackc/pgx/v5"
)

// retrying publishes an event to a /fixable subscription and waits until its delivery failed once and
// waits for a retry; its next attempt is then pushed an hour out, as a long backoff would (the package's
// shared policy retries within 300 ms).
func (e *env) retrying(tn tenant, path string) (subID, id uuid.UUID) {
	e.t.Helper()
	sub := e.newSubscription(tn, "/fixable/"+path, path+" fixable endpoint", "order.paid")
	id = e.publishTo(tn, sub.ID, "order.paid", map[string]any{"order": path})
	var state delivery.State
	eventually(e.t, 30*time.Second, 5*time.Millisecond, func() bool {
		var n int
		err := e.srv.Pool.QueryRow(context.Background(), `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'
			WHERE id = $1 AND state = 'pending' AND total_attempts > 0 RETURNING total_attempts`, id).Scan(&n)
		if err == nil {
			return true
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			e.t.Fatal(err)
		}
		d, _ := e.srv.Deliveries.Get(context.Background(), tn.ID, id)
		if state = d.State; state.Dead() {
			e.t.Fatalf("delivery %s is %s, never caught waiting for a retry", id, state)
		}
		return false
	}, func() string { return fmt.Sprintf("delivery %s is %s, never caught waiting for a retry", id, state) })
	return sub.ID, id
}

// attemptsOf is how many attempts a delivery has had over its life.
func (e *env) attemptsOf(tn tenant, id uuid.UUID) int {
	e.t.Helper()
	d, err := e.srv.Deliveries.Get(context.Background(), tn.ID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return int(d.TotalAttempts)
}

func TestDeliveryPageLeadsWithTheAnswer(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	s := seed(e, "answer", 1)
	c := e.client()
	c.login(s.tn.Email)

	// Dead: the summary says so and shows the endpoint's answer; nothing about giving up later.
	p := c.get("/deliveries/" + s.dead[0].String())
	if got := text(one(t, p.Doc, "summary-headline")); got != "Dead: 400 Bad Request" {
		t.Errorf("dead headline %q", got)
	}
	// When it died, as an age: "5 s ago", not "since 5 s ago".
	if got := text(one(t, p.Doc, "summary-at")); !regexp.MustCompile(`^(just now|\d+ (s|min) ago)$`).MatchString(got) {
		t.Errorf("dead at %q, want its age", got)
	}
	if got := text(one(t, p.Doc, "summary-response")); got != `Last response 400 Bad Request: {"error":"unknown order"}` {
		t.Errorf("dead response %q", got)
	}
	if n := len(byTestID(p.Doc, "give-up")) + len(byTestID(p.Doc, "next-attempt")); n != 0 {
		t.Error("a finished delivery shows when it gives up or its next attempt")
	}
	if hasAttr(one(t, p.Doc, "delivery-live"), "data-live") {
		t.Error("a dead delivery's page follows it")
	}
	if strings.Contains(p.Body, `http-equiv="refresh"`) {
		t.Error("a dead delivery's page reloads itself")
	}
	if got := text(one(t, p.Doc, "request-heading")); got != "Request as sent" {
		t.Errorf("request heading %q", got)
	}
	if n := len(byTestID(p.Doc, "retry-now")); n != 0 {
		t.Error("Retry now offered for a dead delivery")
	}
	if hasAttr(one(t, p.Doc, "resend"), "disabled") {
		t.Error("Resend disabled for a dead delivery")
	}
	// Copy buttons carry what they copy, and stay hidden without script.
	for id, want := range map[string]string{"copy-delivery-id": s.dead[0].String(), "copy-event-id": text(one(t, p.Doc, "event-id"))} {
		b := one(t, p.Doc, id)
		if attr(b, "data-copy") != want || !hasAttr(b, "hidden") {
			t.Errorf("%s: data-copy %q, want %q (hidden %v)", id, attr(b, "data-copy"), want, hasAttr(b, "hidden"))
		}
	}
	if sig := attr(one(t, p.Doc, "copy-signature"), "data-copy"); !strings.HasPrefix(sig, "v1,") || len(sig) < 40 {
		t.Errorf("signature copied as %q", sig)
	}
	if !strings.Contains(attr(one(t, p.Doc, "copy-payload"), "data-copy"), `"order.paid"`) {
		t.Error("payload copy button lacks the payload")
	}

	// Delivered.
	p = c.get("/deliveries/" + s.delivered[0].String())
	if got := text(one(t, p.Doc, "summary-headline")); got != "Delivered on the first attempt" {
		t.Errorf("delivered headline %q", got)
	}

	// Not tried yet (paused): "to be sent", live, and why it waits.
	paused := e.newSubscription(s.tn, "/good/answer-paused", "paused")
	if _, err := e.srv.Subscriptions.Pause(setupCtx(), s.tn.ID, paused.ID); err != nil {
		t.Fatal(err)
	}
	id := e.publishTo(s.tn, paused.ID, "order.paid", map[string]any{"order": 9})
	p = c.get("/deliveries/" + id.String())
	if got := text(one(t, p.Doc, "request-heading")); got != "Request to be sent" {
		t.Errorf("pending request heading %q", got)
	}
	if got := text(one(t, p.Doc, "summary-headline")); got != "Not tried yet: waiting for the subscription to be resumed" {
		t.Errorf("paused headline %q", got)
	}
	if !hasAttr(one(t, p.Doc, "delivery-live"), "data-live") {
		t.Error("a pending delivery's page does not follow it")
	}
	if !strings.Contains(p.Body, `<noscript><meta http-equiv="refresh" content="5"></noscript>`) {
		t.Error("no reload without script on a pending delivery's page")
	}
	one(t, p.Doc, "give-up")
	if !hasAttr(one(t, p.Doc, "resend"), "disabled") || !strings.Contains(text(one(t, p.Doc, "action-reason")), "queued already") {
		t.Error("Resend of a queued delivery is not disabled with the reason")
	}
}

func TestRetryNow(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, func(c *config.Config) { c.MaxManualRetries = 1 })
	tn := e.newTenant("retry-now")
	_, id := e.retrying(tn, "retry-now")
	c := e.client()
	c.login(tn.Email)

	p := c.get("/deliveries/" + id.String())
	if got := text(one(t, p.Doc, "summary-headline")); got != "Retrying" {
		t.Errorf("headline %q", got)
	}
	if got := text(one(t, p.Doc, "summary-at")); got != "next attempt in 59 min" && got != "next attempt in 1 h" {
		t.Errorf("next attempt %q", got)
	}
	if got := text(one(t, p.Doc, "summary-response")); got != "Last response 503 Service Unavailable: try later" {
		t.Errorf("response %q", got)
	}
	if hasAttr(one(t, p.Doc, "retry-now"), "disabled") || len(byTestID(p.Doc, "resend")) != 0 {
		t.Error("a retrying delivery offers Retry now, not Resend")
	}

	// The endpoint is fixed: Retry now delivers it without waiting the hour, with one attempt more than it
	// had (a busy machine may have caught it after its second failure rather than its first).
	want := fmt.Sprintf("Delivered in %d attempts", e.attemptsOf(tn, id)+1)
	e.recv.fixed.Store(true)
	p = c.post("/deliveries/"+id.String()+"/retry-now", nil)
	if p.URL.Path != "/deliveries/"+id.String() || p.Status != http.StatusOK {
		t.Fatalf("retry now: %s", p)
	}
	if got := text(one(t, p.Doc, "flash")); !strings.HasPrefix(got, "Retrying now") {
		t.Errorf("flash %q", got)
	}
	d := e.waitState(tn, id, delivery.Delivered)
	if d.ManualRetries != 1 {
		t.Errorf("manual retries %d", d.ManualRetries)
	}
	p = c.get("/deliveries/" + id.String())
	if got := text(one(t, p.Doc, "summary-headline")); got != want {
		t.Errorf("delivered headline %q, want %q", got, want)
	}
	// Delivered now: Retry now is refused (the page offers Resend), and at the cap Resend says why.
	p = c.post("/deliveries/"+id.String()+"/retry-now", nil)
	if got := text(one(t, p.Doc, "flash")); got != "Not retried: the delivery is delivered: only a delivery waiting for a retry can be retried now." {
		t.Errorf("flash %q", got)
	}
	if !hasAttr(one(t, p.Doc, "resend"), "disabled") || !strings.HasPrefix(text(one(t, p.Doc, "action-reason")), "Retried by hand 1 of 1 times") {
		t.Error("Resend at the cap is not disabled with the reason")
	}

	// At the cap, Retry now of another retrying delivery is disabled and says why.
	e.recv.fixed.Store(false)
	_, other := e.retrying(tn, "retry-now-capped")
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE webhook_deliveries SET manual_retries = 1 WHERE id = $1`, other); err != nil {
		t.Fatal(err)
	}
	p = c.get("/deliveries/" + other.String())
	if !hasAttr(one(t, p.Doc, "retry-now"), "disabled") || !strings.Contains(text(one(t, p.Doc, "action-reason")), "the most allowed") {
		t.Error("Retry now at the cap is not disabled with the reason")
	}
}

func TestHealthRanges(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	s := seed(e, "ranges", 2)
	c := e.client()
	c.login(s.tn.Email)
	base := "/subscriptions/" + s.bad.String()
	for _, tc := range []struct {
		query, heading, current string
		bars                    int
	}{
		{"", "Health, last 24 hours", "24h", 24},
		{"?range=1h", "Health, last hour", "1h", 60},
		{"?range=7d", "Health, last 7 days", "7d", 7},
		{"?range=bogus", "Health, last 24 hours", "24h", 24},
	} {
		p := c.get(base + tc.query)
		card := one(t, p.Doc, "health-card")
		if got := text(findAll(card, tag("h2"))[0]); got != tc.heading {
			t.Errorf("%q: heading %q", tc.query, got)
		}
		if n := len(byTestID(card, "chart-bar")); n != tc.bars {
			t.Errorf("%q: %d bars, want %d", tc.query, n, tc.bars)
		}
		var current []string
		for _, a := range findAll(one(t, card, "health-ranges"), tag("a")) {
			if hasAttr(a, "aria-current") {
				current = append(current, attr(a, "data-range"))
			}
		}
		if len(current) != 1 || current[0] != tc.current {
			t.Errorf("%q: current range %v", tc.query, current)
		}
		// Every attempt of the seed is recent: each range counts both, two failed attempts and 2 dead.
		if got := text(one(t, card, "attempts")); got != "2" {
			t.Errorf("%q: attempts %q", tc.query, got)
		}
		// Dead is a count of now, whatever the range: its link is the list's Dead tab.
		if got := attr(one(t, card, "dead-count"), "href"); got != base+"?state=dead" {
			t.Errorf("%q: dead links to %q", tc.query, got)
		}
		fails := 0
		for _, r := range findAll(one(t, card, "chart-table"), tag("tr"))[1:] {
			cells := findAll(r, tag("td"))
			if n, _ := strconv.Atoi(text(cells[1])); n > 0 {
				fails += n
			}
		}
		if fails != 2 {
			t.Errorf("%q: the chart's table shows %d failed attempts, want 2", tc.query, fails)
		}
	}
}

// TestRetryNowSaysWhenTheCircuitHoldsIt: with the endpoint's circuit open, a retrying delivery's page says
// that due deliveries wait for the probe, Retry now included.
func TestRetryNowSaysWhenTheCircuitHoldsIt(t *testing.T) {
	t.Parallel()
	e := setup(t, withBackground, nil)
	tn := e.newTenant("retry-now-circuit")
	sub, id := e.retrying(tn, "retry-now-circuit")
	if _, err := e.srv.Pool.Exec(context.Background(), `UPDATE subscriptions SET circuit_state = 'open', circuit_opened_at = now(),
		circuit_probe_at = now() + interval '5 minutes', circuit_probe_ms = 300000 WHERE id = $1`, sub); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.login(tn.Email)
	p := c.get("/deliveries/" + id.String())
	if got := text(one(t, p.Doc, "summary-note")); !strings.HasPrefix(got, "The endpoint's circuit is open") || !strings.Contains(got, "next probe in 4 min") && !strings.Contains(got, "next probe in 5 min") {
		t.Errorf("note %q", got)
	}
}
