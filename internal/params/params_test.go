package params

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/replays"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wantInvalid checks that err is INVALID_REQUEST saying msg.
func wantInvalid(t *testing.T, err error, msg string) {
	t.Helper()
	fe := fault.As(err)
	if fe == nil || fe.Code != fault.InvalidRequest || fe.Message != msg {
		t.Errorf("error %v, want INVALID_REQUEST %q", err, msg)
	}
}

func TestIDDialects(t *testing.T) {
	t.Parallel()
	_, err := API.ID("subscription_id", "x")
	wantInvalid(t, err, "subscription_id is not a valid id")
	_, err = Form.ID("event", "x")
	wantInvalid(t, err, `event "x" is not an event id`)
	_, err = Form.ID("tenant", "x")
	wantInvalid(t, err, `tenant "x" is not a tenant id`)
	if id, err := Form.ID("tenant", ""); id != nil || err != nil {
		t.Errorf("empty id: %v, %v", id, err)
	}
	empty := ""
	_, err = BodyID("tenant_id", &empty)
	wantInvalid(t, err, "tenant_id is not a valid id")
	if _, err := PathID("nope", "delivery"); !fault.Is(err, fault.NotFound) || fault.As(err).Message != "delivery not found" {
		t.Errorf("path id: %v", err)
	}
}

func TestTimeDialects(t *testing.T) {
	t.Parallel()
	_, err := API.Time("since", "2026-01-02T15:04")
	wantInvalid(t, err, "since must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	for _, v := range []string{"2026-01-02T15:04", "2026-01-02T15:04:00", "2026-01-02T15:04:00Z", "2026-01-02"} {
		if got, err := Form.Time("From", v); err != nil || got.Year() != 2026 || got.Location() != time.UTC {
			t.Errorf("form time %q: %v, %v", v, got, err)
		}
	}
	_, err = Form.Time("From", "yesterday")
	wantInvalid(t, err, "From must be a date and time such as 2026-01-02T15:04 (UTC)")
	_, err = BodyTime("since", nil)
	wantInvalid(t, err, "since is required (an RFC 3339 time such as 2026-01-02T15:04:05Z)")
}

func TestLimitAndBool(t *testing.T) {
	t.Parallel()
	_, err := API.Limit("101", 0)
	wantInvalid(t, err, "limit must be a whole number from 1 to 100")
	_, err = Form.Limit("0", 50)
	wantInvalid(t, err, "limit must be a positive whole number")
	if n, err := Form.Limit("", 50); n != 50 || err != nil {
		t.Errorf("default limit: %d, %v", n, err)
	}
	_, _, err = Bool(url.Values{"dry_run": {""}}, "dry_run")
	wantInvalid(t, err, "dry_run must be true or false")
	if b, set, err := Bool(url.Values{}, "dry_run"); b || set || err != nil {
		t.Errorf("absent bool: %v %v %v", b, set, err)
	}
}

func TestEventTypeDialects(t *testing.T) {
	t.Parallel()
	if exact, prefix, err := Form.EventType("event_type", "invoice.*"); exact != "" || prefix != "invoice." || err != nil {
		t.Errorf("form prefix: %q %q %v", exact, prefix, err)
	}
	if exact, prefix, err := API.EventType("event_type", "invoice."); exact != "invoice." || prefix != "" || err != nil {
		t.Errorf("api dot: %q %q %v", exact, prefix, err)
	}
	_, _, err := API.EventType("event_type", "invoice.*")
	wantInvalid(t, err, "event_type is not a valid event type")
	_, _, err = Form.EventType("event_type", "-x*")
	wantInvalid(t, err, `event type prefix "-x*" is not the start of a valid event type`)
	_, _, err = Form.EventType("event_type", "-x")
	wantInvalid(t, err, `event type "-x" is not a valid event type`)
}

func TestDeliveriesAPI(t *testing.T) {
	t.Parallel()
	q := url.Values{"state": {"failed,dead"}, "event_type": {"a.b"}, "status": {"5xx"}, "limit": {"7"}, "cursor": {"c"}, "include_totals": {"true"}}
	f, _, err := Deliveries(q, ListOptions{Dialect: API})
	if err != nil || strings.Join(f.States, "|") != "failed|dead" || f.EventType != "a.b" || f.Status != "5xx" ||
		f.Limit != 7 || f.Cursor != "c" || !f.WithTotal || f.CountUpTo != deliveries.TotalUpTo {
		t.Errorf("api filter %+v, %v", f, err)
	}
	_, _, err = Deliveries(url.Values{"nope": {"1"}}, ListOptions{Dialect: API})
	wantInvalid(t, err, `unknown query parameter "nope"`)
	// The API checks ids first: of two wrong values, the id is named.
	_, _, err = Deliveries(url.Values{"event_id": {"x"}, "since": {"x"}}, ListOptions{Dialect: API})
	wantInvalid(t, err, "event_id is not a valid id")
	_, _, err = Deliveries(url.Values{"include_totals": {"maybe"}}, ListOptions{Dialect: API})
	wantInvalid(t, err, "include_totals must be true or false")
}

func TestDeliveriesForm(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	o := ListOptions{Dialect: Form, Across: true, Now: now, PageSize: 25}
	q := url.Values{"state": {"dead"}, "event_type": {" invoice.* "}, "range": {"1h"}, "since": {"2026-01-02T10:00"}, "subscription_id": {" 0b4c9f0e-4a67-4f4c-9c43-1f1b7f3c8a01 "}, "unknown": {"kept"}}
	f, v, err := Deliveries(q, o)
	if err != nil || strings.Join(f.States, "|") != "dead" || f.EventTypePrefix != "invoice." || f.Limit != 25 ||
		!f.Since.Equal(now.Add(-time.Hour)) || f.SubscriptionID == nil || v.EventType != "invoice.*" || !v.Active() {
		t.Errorf("form filter %+v %+v, %v", f, v, err)
	}
	_, v, err = Deliveries(url.Values{}, o)
	if err != nil || v.State != "all" || v.Active() {
		t.Errorf("empty form: %+v, %v", v, err)
	}
	_, _, err = Deliveries(url.Values{"state": {"gone"}}, o)
	wantInvalid(t, err, `state "gone" is not one of all, pending, retrying, in_flight, delivered, dead, failed, expired`)
	_, _, err = Deliveries(url.Values{"range": {"2h"}}, o)
	wantInvalid(t, err, `time range "2h" is not one of 1h, 24h, 7d`)
	// The dashboard checks ids last, and a subscription's own page reads none.
	_, _, err = Deliveries(url.Values{"event_id": {"x"}, "until": {"x"}}, o)
	wantInvalid(t, err, "Until must be a date and time such as 2026-01-02T15:04 (UTC)")
	o.Across = false
	if f, _, err := Deliveries(url.Values{"event_id": {"x"}}, o); err != nil || f.EventID != nil {
		t.Errorf("subscription page read an event: %+v, %v", f, err)
	}
}

func TestDeadFilterDialects(t *testing.T) {
	t.Parallel()
	from, to := "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
	_, err := API.DeadFilter(DeadCriteria{CreatedTo: &to})
	wantInvalid(t, err, "created_from is required (an RFC 3339 time such as 2026-01-02T15:04:05Z)")
	f, err := API.DeadFilter(DeadCriteria{CreatedFrom: &from, CreatedTo: &to, States: []string{"pending"}})
	if err != nil || len(f.States) != 1 || f.CreatedTo == nil {
		t.Errorf("api criteria %+v, %v", f, err)
	}
	c := FormDeadCriteria(url.Values{"tenant": {" x "}})
	_, err = Form.DeadFilter(c)
	wantInvalid(t, err, `tenant "x" is not a tenant id`)
	_, err = Form.DeadFilter(FormDeadCriteria(url.Values{"state": {"pending"}}))
	wantInvalid(t, err, "state must be failed or expired")
	_, err = Form.DeadFilter(FormDeadCriteria(url.Values{"to": {"later"}}))
	wantInvalid(t, err, "Created before must be a date and time such as 2026-01-02T15:04 (UTC)")
	if f, err := Form.DeadFilter(FormDeadCriteria(url.Values{})); err != nil || f.CreatedFrom != nil {
		t.Errorf("empty form criteria %+v, %v", f, err)
	}
}

func TestSpreads(t *testing.T) {
	t.Parallel()
	if d, err := SpreadMinutes("0"); d != time.Second || err != nil {
		t.Errorf("spread 0: %v, %v", d, err)
	}
	_, err := SpreadMinutes("-1")
	wantInvalid(t, err, "spread must be a whole number of minutes from 0 to 1440")
	zero := 0
	_, err = SpreadSeconds(&zero)
	wantInvalid(t, err, "spread_seconds must be a whole number from 1 to 86400")
	if d, err := SpreadSeconds(nil); d != replays.DefaultSpread || err != nil {
		t.Errorf("default spread: %v, %v", d, err)
	}
}

func TestReplayList(t *testing.T) {
	t.Parallel()
	f, err := ReplayList(url.Values{"dry_run": {"false"}, "limit": {"3"}})
	if err != nil || f.DryRun == nil || *f.DryRun || f.Limit != 3 {
		t.Errorf("replay list %+v, %v", f, err)
	}
	_, err = ReplayList(url.Values{"tenant": {"x"}})
	wantInvalid(t, err, `unknown query parameter "tenant"`)
}
