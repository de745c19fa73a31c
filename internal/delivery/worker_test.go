package delivery_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	dto "github.com/prometheus/client_model/go"
)

// verifyStandardWebhook is a receiver's check written from the Standard Webhooks spec, independently of
// delivery.Sign: the key is the base64 after "whsec_"; the signed content "webhook-id.webhook-timestamp.body";
// webhook-signature holds space-separated "v1,<base64 HMAC-SHA256>" values, any one of which may match.
func verifyStandardWebhook(secret string, h http.Header, body []byte) error {
	raw, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return errors.New("secret lacks whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	if id == "" || ts == "" {
		return errors.New("webhook-id or webhook-timestamp missing")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		version, value, _ := strings.Cut(sig, ",")
		if version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(value); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no v1 signature in %q matches", h.Get("webhook-signature"))
}

func TestReceiverGetsSignedStandardWebhook(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	headers := map[string]string{"X-Customer-Token": "tok_123", "x-trace": "abc"}
	sub, secret := e.subscribe(rc.URL(), subscriptions.Input{Headers: &headers})
	// Key order, big numbers, escapes, HTML characters, non-ASCII and U+2028 must all arrive as published.
	payload := `{"z":1,"a":{"big":12345678901234567890,"f":1.50,"e":1e3},"s":"é <b>&amp;</b> \u00e9 \"q\"` + "\u2028" + `","n":null,"l":[]}`
	p := e.publish("order.created", payload)
	w := e.worker(delivery.WorkerOptions{}, nil)
	if n := e.runOnce(w); n != 1 {
		t.Fatalf("RunOnce attempted %d, want 1", n)
	}
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if err := verifyStandardWebhook(secret, r.Header, r.Body); err != nil {
		t.Fatalf("signature: %v", err)
	}
	for k, want := range map[string]string{
		"Content-Type":      "application/json",
		"Webhook-Id":        p.ID,
		"Webhook-Timestamp": strconv.FormatInt(e.clock.Now().Unix(), 10),
		"X-Customer-Token":  "tok_123",
		"X-Trace":           "abc",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if ua := r.Header.Get("User-Agent"); !strings.Contains(ua, "Hookline") {
		t.Errorf("user-agent %q does not name Hookline", ua)
	}
	if r.Path != "/hook" {
		t.Errorf("path %q", r.Path)
	}

	checkEventBody(t, r.Body, p, payload)
	if err := verifyStandardWebhook(secret, r.Header, append(r.Body, ' ')); err == nil {
		t.Error("the verifier accepts a changed body: it proves nothing")
	}

	// The stored request copy names the custom headers, never their values.
	d, err := e.svc.Get(e.ctx, e.tenant, uuid.MustParse(p.Deliveries[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range d.Request.Headers {
		if v == "tok_123" || v == "abc" {
			t.Errorf("stored request copy shows the value of the custom header %s", k)
		}
	}
	if d.Request.Headers["x-customer-token"] != delivery.Masked || d.Request.Headers["x-trace"] != delivery.Masked {
		t.Errorf("stored request copy %v, want the custom headers named, masked", d.Request.Headers)
	}

	// After a rotation both secrets sign, space-separated, and a receiver holding either verifies.
	newSecret, err := e.subs.RotateSecret(e.ctx, e.tenant, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.publish("order.created", `{"n":2}`)
	e.runOnce(w)
	r = rc.requests()[1]
	if sigs := strings.Fields(r.Header.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("after rotation: %d signatures, want 2: %q", len(sigs), sigs)
	}
	for _, s := range []string{secret, newSecret} {
		if err := verifyStandardWebhook(s, r.Header, r.Body); err != nil {
			t.Errorf("after rotation: %v", err)
		}
	}
	if err := verifyStandardWebhook(delivery.NewSecret(), r.Header, r.Body); err == nil {
		t.Error("an unrelated secret verifies")
	}
}

// checkEventBody checks a webhook's body: exactly type, timestamp and data, the data byte for byte as
// published.
func checkEventBody(t *testing.T, raw []byte, p publish.Published, payload string) {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil || len(body) != 3 {
		t.Fatalf("body %s: want exactly type, timestamp, data (%v)", raw, err)
	}
	if string(body["type"]) != `"order.created"` {
		t.Errorf("type = %s", body["type"])
	}
	var ts string
	_ = json.Unmarshal(body["timestamp"], &ts)
	if at, err := time.Parse(time.RFC3339, ts); err != nil || !at.Equal(p.CreatedAt) {
		t.Errorf("timestamp = %q, want the event's creation %s (%v)", ts, p.CreatedAt, err)
	}
	if !bytes.Equal(body["data"], []byte(payload)) {
		t.Errorf("data is not byte-identical to the payload:\n got %s\nwant %s", body["data"], payload)
	}
}

func TestSuccessIsDeliveredInOneAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(200))
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	e.runOnce(w)
	d := e.wantState(id, delivery.Delivered, 1)
	if d.TotalAttempts != 1 || deref(d.LastStatus) != int32(200) || d.LeaseID != nil {
		t.Errorf("delivered row: %+v", d)
	}
	a := e.attempts(id)
	if len(a) != 1 || a[0].Attempt != 1 || deref(a[0].Status) != int32(200) || a[0].Outcome != "delivered" {
		t.Fatalf("attempts: %+v", a)
	}
	e.clock.Advance(time.Hour)
	if n := e.runOnce(w); n != 0 || rc.hits() != 1 {
		t.Errorf("a delivered delivery was attempted again (%d, %d hits)", n, rc.hits())
	}
}

func TestTransientFailuresRetryWithBackoffUntilDelivered(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, statuses(500, 503, 200))
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	start := e.clock.Now()

	e.runOnce(w)
	d := e.wantState(id, delivery.Pending, 1)
	if want := start.Add(10 * time.Second); !d.NextAttemptAt.Equal(want) {
		t.Fatalf("first retry at +%s, want +10s", d.NextAttemptAt.Sub(start))
	}
	e.clock.Advance(9 * time.Second)
	if n := e.runOnce(w); n != 0 {
		t.Fatal("claimed before the backoff elapsed")
	}
	e.clock.Advance(time.Second)
	e.runOnce(w)
	d = e.wantState(id, delivery.Pending, 2)
	if want := start.Add(30 * time.Second); !d.NextAttemptAt.Equal(want) { // 10 s, then 20 s
		t.Fatalf("second retry at +%s, want +30s", d.NextAttemptAt.Sub(start))
	}
	e.clock.Set(d.NextAttemptAt)
	e.runOnce(w)
	d = e.wantState(id, delivery.Delivered, 3)

	a := e.attempts(id)
	if len(a) != 3 {
		t.Fatalf("%d attempt rows, want 3", len(a))
	}
	for i, want := range []struct {
		status  int32
		outcome string
	}{{500, "retry"}, {503, "retry"}, {200, "delivered"}} {
		if a[i].Attempt != int32(i+1) || deref(a[i].Status) != want.status || a[i].Outcome != want.outcome {
			t.Errorf("attempt %d: number %d status %v outcome %s, want %d %d %s", i, a[i].Attempt, deref(a[i].Status), a[i].Outcome, i+1, want.status, want.outcome)
		}
	}
	reqs := rc.requests()
	for _, r := range reqs {
		if r.Header.Get("webhook-id") != reqs[0].Header.Get("webhook-id") {
			t.Error("webhook-id changed between attempts")
		}
	}
	if reqs[0].Header.Get("webhook-timestamp") == reqs[2].Header.Get("webhook-timestamp") {
		t.Error("webhook-timestamp is not the attempt's own time")
	}
}

func TestPermanentStatusFailsAfterOneAttempt(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 404, 410, 422} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			e := setup(t)
			rc := newReceiver(t, statuses(status))
			e.subscribe(rc.URL(), subscriptions.Input{})
			id := e.publishOne(`{}`)
			w := e.worker(delivery.WorkerOptions{}, nil)
			e.runOnce(w)
			d := e.wantState(id, delivery.Failed, 1)
			if deref(d.DeadReason) != delivery.ReasonPermanentStatus || deref(d.LastStatus) != int32(status) {
				t.Errorf("reason %v status %v", deref(d.DeadReason), deref(d.LastStatus))
			}
			e.clock.Advance(24 * time.Hour)
			if e.runOnce(w) != 0 || rc.hits() != 1 {
				t.Error("a failed delivery was attempted again")
			}
		})
	}
}

func TestRedirectsFailAndAreNotFollowed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := newReceiver(t, statuses(200))
	redirector := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		http.Redirect(w, r, target.URL(), code)
	})
	ids := map[int]uuid.UUID{}
	for _, code := range []int{301, 302, 303, 307, 308} {
		sub, _ := e.subscribe(fmt.Sprintf("%s/%d", redirector.srv.URL, code), subscriptions.Input{})
		ids[code] = sub.ID
	}
	p := e.publish("order.created", `{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	if n := e.runOnce(w); n != 5 {
		t.Fatalf("attempted %d, want 5", n)
	}
	for _, pd := range p.Deliveries {
		d := e.wantState(uuid.MustParse(pd.ID), delivery.Failed, 1)
		if code := deref(d.LastStatus).(int32); ids[int(code)] != d.SubscriptionID {
			t.Errorf("subscription %s recorded status %d", d.SubscriptionID, code)
		}
	}
	if target.hits() != 0 {
		t.Errorf("the redirect target was hit %d times", target.hits())
	}
}

func TestRetryAfterIsHonouredWithinTheCap(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/seconds":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/date":
			w.Header().Set("Retry-After", e.clock.Now().Add(300*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/huge":
			w.Header().Set("Retry-After", "86400") // a day, past MaxDelay (1 h)
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	subs := map[string]uuid.UUID{}
	for _, path := range []string{"seconds", "date", "huge"} {
		s, _ := e.subscribe(rc.srv.URL+"/"+path, subscriptions.Input{})
		subs[path] = s.ID
	}
	p := e.publish("order.created", `{}`)
	now := e.clock.Now()
	w := e.worker(delivery.WorkerOptions{}, nil)
	e.runOnce(w)
	next := map[uuid.UUID]time.Time{}
	for _, pd := range p.Deliveries {
		d := e.wantState(uuid.MustParse(pd.ID), delivery.Pending, 1)
		next[d.SubscriptionID] = d.NextAttemptAt
	}
	if got := next[subs["seconds"]].Sub(now); got != 120*time.Second {
		t.Errorf("Retry-After: 120 scheduled the retry at +%s", got)
	}
	if got := next[subs["date"]].Sub(now); got < 299*time.Second || got > 300*time.Second {
		t.Errorf("Retry-After as a date 300 s ahead scheduled the retry at +%s", got)
	}
	if got := next[subs["huge"]].Sub(now); got != e.policy.MaxDelay {
		t.Errorf("Retry-After of a day scheduled the retry at +%s, want the %s cap", got, e.policy.MaxDelay)
	}
	e.clock.Advance(119 * time.Second)
	if n := e.runOnce(w); n != 0 {
		t.Errorf("claimed %d before Retry-After elapsed", n)
	}
	e.clock.Advance(time.Second)
	if n := e.runOnce(w); n != 1 {
		t.Errorf("claimed %d when the first Retry-After elapsed, want 1", n)
	}
}

func TestTimeoutIsTransient(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, hang)
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, &delivery.SenderOptions{AllowPrivate: true, Timeout: 300 * time.Millisecond})
	t0 := time.Now()
	e.runOnce(w)
	if el := time.Since(t0); el > 5*time.Second {
		t.Errorf("the attempt took %s with a 300 ms timeout", el)
	}
	d := e.wantState(id, delivery.Pending, 1)
	if d.LastStatus != nil || !strings.Contains(deref(d.LastError).(string), "timeout") {
		t.Errorf("last status %v, error %v: want no status and a timeout", deref(d.LastStatus), deref(d.LastError))
	}
	a := e.attempts(id)
	if len(a) != 1 || a[0].Status != nil || a[0].Outcome != "retry" || !strings.Contains(a[0].Error, "timeout") || a[0].DurationMs < 250 {
		t.Errorf("attempt: %+v", a)
	}
	if rc.hits() != 1 {
		t.Errorf("receiver got %d requests", rc.hits())
	}
}

func TestDeadlinePassedExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setPolicy(delivery.RetryPolicy{Base: 10 * time.Second, MaxDelay: time.Hour, MaxAttempts: 100, Window: 2 * time.Minute})
	rc := newReceiver(t, statuses(500))
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	giveUp := e.delivery(id).GiveUpAt
	if want := e.clock.Now().Add(2 * time.Minute); !giveUp.Equal(want) {
		t.Fatalf("give_up_at = %s, want created + window = %s", giveUp, want)
	}
	w := e.worker(delivery.WorkerOptions{}, nil)
	// Attempts at +0, +10 s, +30 s, +70 s; the next would be at +150 s, past the 2 min window.
	for i := 0; i < 10; i++ {
		e.runOnce(w)
		d := e.delivery(id)
		if d.State != string(delivery.Pending) {
			break
		}
		e.clock.Set(d.NextAttemptAt)
	}
	d := e.wantState(id, delivery.Expired, 4)
	if deref(d.DeadReason) != delivery.ReasonDeadline {
		t.Errorf("dead reason %v, want deadline", deref(d.DeadReason))
	}
	for _, a := range e.attempts(id) {
		if !a.StartedAt.Before(giveUp) {
			t.Errorf("attempt %d started at %s, after give_up_at", a.Attempt, a.StartedAt)
		}
	}

	// A delivery whose give_up_at passed while it waited expires at its next failure.
	id2 := e.publishOne(`{}`)
	e.clock.Advance(3 * time.Minute)
	e.runOnce(w)
	if d := e.wantState(id2, delivery.Expired, 1); deref(d.DeadReason) != delivery.ReasonDeadline {
		t.Errorf("dead reason %v, want deadline", deref(d.DeadReason))
	}
}

func TestMaxAttemptsExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setPolicy(delivery.RetryPolicy{Base: time.Second, MaxDelay: time.Minute, MaxAttempts: 3, Window: 24 * time.Hour})
	rc := newReceiver(t, statuses(503))
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)
	for range 3 {
		if n := e.runOnce(w); n != 1 {
			t.Fatalf("attempted %d, want 1", n)
		}
		e.clock.Advance(time.Minute)
	}
	d := e.wantState(id, delivery.Expired, 3)
	if deref(d.DeadReason) != delivery.ReasonMaxAttempts {
		t.Errorf("dead reason %v, want max_attempts", deref(d.DeadReason))
	}
	e.clock.Advance(time.Hour)
	if e.runOnce(w) != 0 || rc.hits() != 3 {
		t.Errorf("an expired delivery was attempted again (%d hits)", rc.hits())
	}
}

func TestResponseSnippetIsCapped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bodies := map[string]string{
		"/ascii":  strings.Repeat("x", 5000),
		"/utf8":   "a" + strings.Repeat("é", 2000), // the 512th byte splits a rune
		"/binary": strings.Repeat("\xff", 600),
		"/short":  "fine",
	}
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(bodies[r.URL.Path]))
	})
	bySub := map[uuid.UUID]string{}
	for path := range bodies {
		s, _ := e.subscribe(rc.srv.URL+path, subscriptions.Input{})
		bySub[s.ID] = path
	}
	p := e.publish("order.created", `{}`)
	e.runOnce(e.worker(delivery.WorkerOptions{}, nil))
	for _, pd := range p.Deliveries {
		id := uuid.MustParse(pd.ID)
		d := e.delivery(id)
		path := bySub[d.SubscriptionID]
		a := e.attempts(id)
		if len(a) != 1 {
			t.Fatalf("%s: %d attempts", path, len(a))
		}
		for what, s := range map[string]string{"last_response": deref(d.LastResponse).(string), "attempt snippet": a[0].ResponseSnippet} {
			if len(s) > delivery.SnippetLimit || !utf8.ValidString(s) {
				t.Errorf("%s %s: %d bytes (valid UTF-8: %v), want at most %d", path, what, len(s), utf8.ValidString(s), delivery.SnippetLimit)
			}
		}
		switch path {
		case "/ascii":
			if a[0].ResponseSnippet != bodies[path][:512] {
				t.Errorf("ascii snippet is not the body's first 512 bytes (%d bytes)", len(a[0].ResponseSnippet))
			}
		case "/utf8":
			if !strings.HasPrefix(bodies[path], a[0].ResponseSnippet) || len(a[0].ResponseSnippet) < 509 {
				t.Errorf("utf8 snippet is not a prefix of the body cut at a rune boundary (%d bytes)", len(a[0].ResponseSnippet))
			}
		case "/short":
			if a[0].ResponseSnippet != "fine" {
				t.Errorf("short snippet %q", a[0].ResponseSnippet)
			}
		}
	}
}

func TestPausedSubscriptionHoldsDeliveriesUntilResumed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	paused, _ := e.subscribe(rc.srv.URL+"/paused", subscriptions.Input{})
	e.subscribe(rc.srv.URL+"/active", subscriptions.Input{})
	if _, err := e.subs.Pause(e.ctx, e.tenant, paused.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e.publish("order.created", fmt.Sprintf(`{"i":%d}`, i))
	}
	w := e.worker(delivery.WorkerOptions{}, nil)
	if n := e.runOnce(w); n != 3 {
		t.Fatalf("attempted %d, want the active subscription's 3", n)
	}
	e.clock.Advance(time.Hour)
	if n := e.runOnce(w); n != 0 {
		t.Fatalf("claimed %d deliveries of a paused subscription", n)
	}
	q := "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = $2"
	if n := e.count(q, paused.ID, "pending"); n != 3 {
		t.Fatalf("%d of the paused subscription's deliveries are pending, want 3", n)
	}
	if _, err := e.subs.Resume(e.ctx, e.tenant, paused.ID); err != nil {
		t.Fatal(err)
	}
	if n := e.runOnce(w); n != 3 {
		t.Fatalf("after resume attempted %d, want 3", n)
	}
	if n := e.count(q, paused.ID, "delivered"); n != 3 {
		t.Errorf("after resume %d delivered, want 3", n)
	}
	paths := map[string]int{}
	for _, r := range rc.requests() {
		paths[r.Path]++
	}
	if paths["/paused"] != 3 || paths["/active"] != 3 {
		t.Errorf("receiver got %v", paths)
	}
}

func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	e := setup(t)
	allowed, blocked := newReceiver(t, nil), newReceiver(t, nil)
	a, _ := e.subscribe(allowed.URL(), subscriptions.Input{})
	b, _ := e.subscribe(blocked.URL(), subscriptions.Input{})
	byName, _ := e.subscribe(strings.Replace(blocked.URL(), "127.0.0.1", "localhost", 1), subscriptions.Input{})
	p := e.publish("order.created", `{}`)

	guarded := e.worker(delivery.WorkerOptions{}, &delivery.SenderOptions{Timeout: 2 * time.Second})
	e.runOnce(guarded)
	for _, pd := range p.Deliveries {
		d := e.wantState(uuid.MustParse(pd.ID), delivery.Pending, 1)
		if msg := deref(d.LastError); msg == nil || !strings.Contains(msg.(string), "address not allowed") {
			t.Errorf("subscription %s: error %v, want the address refused", d.SubscriptionID, msg)
		} else if m := msg.(string); !strings.Contains(m, "HOOKLINE_ALLOW_PRIVATE_NETWORKS=true") || !strings.Contains(m, "for development only") || strings.Contains(m, "127.0.0.1") {
			t.Errorf("subscription %s: error %q, want how to allow it and no address", d.SubscriptionID, m)
		}
	}
	if allowed.hits()+blocked.hits() != 0 {
		t.Fatal("the guard let a request through to 127.0.0.1")
	}

	// AllowAddrs lets exactly that ip:port through.
	e.clock.Advance(time.Hour)
	exempt := e.worker(delivery.WorkerOptions{}, &delivery.SenderOptions{Timeout: 2 * time.Second, AllowAddrs: []string{allowed.Addr()}})
	e.runOnce(exempt)
	for _, pd := range p.Deliveries {
		d := e.delivery(uuid.MustParse(pd.ID))
		switch d.SubscriptionID {
		case a.ID:
			e.wantState(d.ID, delivery.Delivered, 2)
		case b.ID, byName.ID:
			e.wantState(d.ID, delivery.Pending, 2)
		}
	}
	if allowed.hits() != 1 || blocked.hits() != 0 {
		t.Errorf("allowed got %d, blocked got %d", allowed.hits(), blocked.hits())
	}
}

func TestWorkerKilledMidAttemptIsRescued(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, nil)
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{}, nil)

	// A worker claims with a 5 s lease, then dies: it never completes.
	leaseA := uuid.New()
	claimed, err := e.q.ClaimDeliveries(e.ctx, db.ClaimDeliveriesParams{
		Now: e.clock.Now(), Max: 10, Cap: 10, LeaseExpiresAt: e.clock.Now().Add(5 * time.Second), LeaseID: leaseA,
	})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d rows, %v", len(claimed), err)
	}
	e.wantState(id, delivery.InFlight, 0)
	if n := e.runOnce(w); n != 0 {
		t.Fatal("a row in flight under another lease was claimed again")
	}
	rescue := func() int {
		n, err := w.RescueExpired(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	e.clock.Advance(5 * time.Second)
	if rescue() != 0 {
		t.Fatal("rescued before the lease ran out")
	}
	e.clock.Advance(time.Millisecond)
	if rescue() != 1 {
		t.Fatal("not rescued after the lease ran out")
	}
	if d := e.wantState(id, delivery.Pending, 0); d.LeaseID != nil || d.LeaseExpiresAt != nil || !d.NextAttemptAt.Equal(e.clock.Now()) {
		t.Fatalf("rescued row keeps its lease or is not due now: %+v", d)
	}
	e.runOnce(w)
	e.wantState(id, delivery.Delivered, 1)

	// The dead worker's late result is ignored: the lease_id guard.
	if err := w.RecordStatus(e.ctx, claimed, leaseA, 500); err != nil {
		t.Fatal(err)
	}
	if d := e.wantState(id, delivery.Delivered, 1); d.TotalAttempts != 1 || len(e.attempts(id)) != 1 {
		t.Fatalf("a stale completion was recorded: %+v", d)
	}

	// Also while a second claim holds the row: the stale result neither completes nor records.
	id2 := e.publishOne(`{}`)
	leaseOld := uuid.New()
	old, err := e.q.ClaimDeliveries(e.ctx, db.ClaimDeliveriesParams{
		Now: e.clock.Now(), Max: 10, Cap: 10, LeaseExpiresAt: e.clock.Now().Add(time.Second), LeaseID: leaseOld,
	})
	if err != nil || len(old) != 1 {
		t.Fatalf("claim: %d rows, %v", len(old), err)
	}
	e.clock.Advance(2 * time.Second)
	rescue()
	current, leaseNew, err := w.Claim(e.ctx, 10)
	if err != nil || len(current) != 1 {
		t.Fatalf("reclaim: %d rows, %v", len(current), err)
	}
	if err := w.RecordStatus(e.ctx, old, leaseOld, 200); err != nil {
		t.Fatal(err)
	}
	if d := e.wantState(id2, delivery.InFlight, 0); *d.LeaseID != leaseNew || len(e.attempts(id2)) != 0 {
		t.Fatalf("the stale lease's result took the row: %+v", d)
	}
	if err := w.RecordStatus(e.ctx, current, leaseNew, 200); err != nil {
		t.Fatal(err)
	}
	e.wantState(id2, delivery.Delivered, 1)
}

func TestDefaultLeaseRescuesWithinContract(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.subscribe("http://127.0.0.1:1/x", subscriptions.Input{})
	id := e.publishOne(`{}`)
	const timeout = 15 * time.Second
	w := e.worker(delivery.WorkerOptions{AttemptTimeout: timeout}, &delivery.SenderOptions{Timeout: timeout, AllowPrivate: true})
	if _, _, err := w.Claim(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	lease := e.delivery(id).LeaseExpiresAt.Sub(e.clock.Now())
	// The rescuer runs every 10 s by default, so a dead worker's row is back within lease + 10 s.
	if lease <= timeout || lease+10*time.Second > 2*timeout+30*time.Second {
		t.Errorf("default lease %s: a row is either rescued mid-attempt or later than 2 × timeout + 30 s", lease)
	}
}

func TestStopLetsRunningAttemptFinish(t *testing.T) {
	t.Parallel()
	e := setup(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	})
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	w := e.worker(delivery.WorkerOptions{Now: time.Now, ShutdownGrace: 10 * time.Second, PollInterval: 20 * time.Millisecond},
		&delivery.SenderOptions{AllowPrivate: true, Timeout: 10 * time.Second})
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	waitFor(t, started, "the attempt to start")

	stopped := make(chan struct{})
	go func() { w.Stop(context.Background()); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while an attempt was running within its grace")
	case <-time.After(200 * time.Millisecond):
	}
	// Stopping has stopped claiming: a new event waits.
	later := e.publishOne(`{}`)
	close(release)
	waitFor(t, stopped, "Stop")
	e.wantState(id, delivery.Delivered, 1)
	e.wantState(later, delivery.Pending, 0)
	if rc.hits() != 1 {
		t.Errorf("receiver got %d requests", rc.hits())
	}
}

func TestStopReleasesHangingAttemptAfterGrace(t *testing.T) {
	t.Parallel()
	e := setup(t)
	started := make(chan struct{}, 1)
	var answer atomic.Bool
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if answer.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		started <- struct{}{}
		hang(n, w, r)
	})
	e.subscribe(rc.URL(), subscriptions.Input{})
	id := e.publishOne(`{}`)
	so := &delivery.SenderOptions{AllowPrivate: true, Timeout: 20 * time.Second}
	w := e.worker(delivery.WorkerOptions{Now: time.Now, ShutdownGrace: 200 * time.Millisecond}, so)
	if err := w.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	waitFor(t, started, "the attempt to start")
	t0 := time.Now()
	w.Stop(context.Background())
	if el := time.Since(t0); el < 200*time.Millisecond || el > 5*time.Second {
		t.Errorf("Stop took %s with a 200 ms grace", el)
	}
	d := e.wantState(id, delivery.Pending, 0)
	if d.TotalAttempts != 0 || d.LeaseID != nil || len(e.attempts(id)) != 0 || d.LastError != nil {
		t.Fatalf("a released row recorded an attempt or kept its lease: %+v", d)
	}
	// It is due again at once for the next worker.
	answer.Store(true)
	w2 := e.worker(delivery.WorkerOptions{Now: time.Now}, so)
	if n := e.runOnce(w2); n != 1 {
		t.Fatalf("the released row was not claimable (%d)", n)
	}
	e.wantState(id, delivery.Delivered, 1)
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestTwoWorkersDeliverEachEventExactlyOnce(t *testing.T) {
	t.Parallel()
	const events = 2000
	e := setup(t)
	var mu sync.Mutex
	seen := map[string]int{}
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("webhook-id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	e.subscribe(rc.URL(), subscriptions.Input{})

	var metrics []*delivery.Metrics
	for range 2 {
		m := delivery.NewMetrics(nil, nil)
		metrics = append(metrics, m)
		w := delivery.NewWorker(connect(t, 10), delivery.NewSender(delivery.SenderOptions{AllowPrivate: true, Timeout: 10 * time.Second}),
			e.policy, delivery.WorkerOptions{Concurrency: 16, PollInterval: 100 * time.Millisecond, Logger: quietLog, Metrics: m})
		if err := w.Start(e.ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(context.Background()) })
	}

	pub := publish.NewPublisher(e.pool, e.policy, time.Now)
	ids := make(chan string, events)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < events; i += 8 {
				p, err := pub.Publish(e.ctx, publish.PublishInput{TenantID: e.tenant, EventType: "order.created", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- p.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	eventually(t, 90*time.Second, "every delivery delivered", func() bool {
		return e.count("SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'") == events
	})

	mu.Lock()
	defer mu.Unlock()
	n := 0
	for id := range ids {
		n++
		if seen[id] != 1 {
			t.Errorf("event %s reached the receiver %d times", id, seen[id])
		}
	}
	if n != events || len(seen) != events {
		t.Errorf("published %d events, receiver saw %d distinct ids", n, len(seen))
	}
	if got := e.count("SELECT count(*) FROM webhook_attempts"); got != events {
		t.Errorf("%d attempt rows, want %d", got, events)
	}
	var split []int
	for _, m := range metrics {
		var out dto.Metric
		_ = m.Attempts.WithLabelValues("delivered").Write(&out)
		split = append(split, int(out.GetCounter().GetValue()))
	}
	if split[0]+split[1] != events || split[0] == 0 || split[1] == 0 {
		t.Errorf("deliveries per worker %v: want both workers to share %d", split, events)
	}
	t.Logf("deliveries per worker: %v", split)
}
