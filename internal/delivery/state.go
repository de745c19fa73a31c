// Package delivery owns Hookline's delivery state machine and the workers that move deliveries through it:
// claiming due rows, sending signed requests, classifying outcomes, scheduling retries and rescuing rows
// whose worker died.
//
// A delivery's life:
//
//	             claim                 2xx
//	pending ───────────────▶ in_flight ─────────▶ delivered ──┐
//	   ▲  ▲                   │  │  │                          │
//	   │  │ lease ran out /   │  │  │ 408/425/429/5xx/network  │
//	   │  └─ shutdown release─┘  │  └──────────▶ pending (retrying, backoff)
//	   │                         │ other status, 3xx            │
//	   │                         ├──────────▶ failed ──────────┤  manual retry / resend / replay
//	   │                         │ out of attempts or past      │
//	   │                         └ give_up_at ─▶ expired ───────┤
//	   └──────────────────────────────────────────────────────────┘
//
// failed and expired form the dead-letter queue. Every transition is one SQL statement guarded by the
// current state (see db/query/deliveries.sql); the functions here decide, they never write.
package delivery

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// State is a delivery's state, as stored in webhook_deliveries.state.
type State string

const (
	// Pending deliveries wait in the queue for next_attempt_at. The words every count and page uses:
	//   - pending: in state pending, whether tried before or not (the API's state=pending, the Pending tab);
	//     not in flight, which is its own state;
	//   - retrying: pending and tried before (total_attempts > 0), so every retrying delivery is pending too;
	//   - waiting: pending while its subscription is paused or disabled: held until it is resumed.
	Pending State = "pending"
	// InFlight deliveries are claimed by a worker until their lease runs out.
	InFlight State = "in_flight"
	// Delivered deliveries got a 2xx answer. Final unless resent.
	Delivered State = "delivered"
	// Failed deliveries got a permanent error (a status that retrying cannot fix, redirects included) or
	// lost their subscription. Dead-lettered.
	Failed State = "failed"
	// Expired deliveries ran out of attempts or passed give_up_at while still failing. Dead-lettered.
	Expired State = "expired"
)

// States lists every state in life order.
var States = []State{Pending, InFlight, Delivered, Failed, Expired}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	for _, x := range States {
		if x == s {
			return true
		}
	}
	return false
}

// Dead reports whether s is in the dead-letter queue.
func (s State) Dead() bool { return s == Failed || s == Expired }

// transitions lists the allowed moves. The SQL statements that move rows are guarded by the same sets.
var transitions = map[State][]State{
	Pending:   {InFlight, Failed, Pending},           // claimed; dead-lettered when its subscription is deleted; retry now
	InFlight:  {Delivered, Pending, Failed, Expired}, // an attempt's outcome, or released/rescued
	Delivered: {Pending},                             // resend
	Failed:    {Pending},                             // manual retry or replay
	Expired:   {Pending},                             // manual retry or replay
}

// CanTransition reports whether a delivery may move from one state to another.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Retryable reports whether a manual retry or replay may put a delivery in state s back in the queue.
func Retryable(s State) bool { return CanTransition(s, Pending) && s != InFlight && s != Pending }

// Dead reasons, stored in webhook_deliveries.dead_reason.
const (
	ReasonPermanentStatus     = "permanent_status"
	ReasonMaxAttempts         = "max_attempts"
	ReasonDeadline            = "deadline"
	ReasonSubscriptionDeleted = "subscription_deleted"
)

// StatusLine names an HTTP status as people read it: "404 Not Found", or the bare code when Go knows no
// text for it ("599").
func StatusLine(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// DeadReasonText says in words why a delivery is dead: a permanent status is named by the status itself
// ("404 Not Found"), so that nobody reads "permanent status" and has to look the code up.
func DeadReasonText(reason string, lastStatus *int) string {
	switch reason {
	case ReasonPermanentStatus:
		if lastStatus != nil {
			return StatusLine(*lastStatus)
		}
		return "permanent error"
	case ReasonMaxAttempts:
		return "out of attempts"
	case ReasonDeadline:
		return "past its deadline"
	case ReasonSubscriptionDeleted:
		return "subscription deleted"
	}
	return strings.ReplaceAll(reason, "_", " ")
}

// Outcome is what one attempt's result means for the delivery.
type Outcome string

const (
	// OutcomeDelivered: a 2xx answer.
	OutcomeDelivered Outcome = "delivered"
	// OutcomeRetry: a transient failure worth another try (408, 425, 429, 5xx, timeout, network, TLS).
	OutcomeRetry Outcome = "retry"
	// OutcomeFailed: a permanent failure (any other status, 3xx included).
	OutcomeFailed Outcome = "failed"
)

// Classify maps an attempt's HTTP status to its outcome. status 0 means no response arrived (timeout,
// connection refused or reset, TLS or DNS error), which is transient.
func Classify(status int) Outcome {
	switch {
	case status == 0:
		return OutcomeRetry
	case status >= 200 && status < 300:
		return OutcomeDelivered
	case status == 408, status == 425, status == 429, status >= 500:
		return OutcomeRetry
	default:
		return OutcomeFailed
	}
}

// RetryPolicy is the retry schedule: HOOKLINE_RETRY_* in the configuration.
type RetryPolicy struct {
	// Base is the first retry delay; each later one doubles.
	Base time.Duration
	// MaxDelay caps one delay, Retry-After included.
	MaxDelay time.Duration
	// MaxAttempts is how many attempts one schedule gets before the delivery expires.
	MaxAttempts int
	// Window is how long after creation (or a retry/replay) a delivery may keep retrying: give_up_at.
	Window time.Duration
	// Schedule, when set, replaces the exponential backoff: retry n waits Schedule[n-1] (a subscription's
	// own delays: WithSchedule).
	Schedule []time.Duration
}

// DefaultRetryPolicy is the contract's default schedule: 24 attempts over about 71 hours, inside 72 hours.
var DefaultRetryPolicy = RetryPolicy{Base: 5 * time.Second, MaxDelay: 6 * time.Hour, MaxAttempts: 24, Window: 72 * time.Hour}

// Backoff is the delay before retry n (n = 1 after the first attempt): Base·2^(n-1), with ±10 % jitter so
// that retries from one outage spread out, capped at MaxDelay. jitter is a number in [0, 1). The jitter is
// kept small on purpose: with the defaults the nominal schedule spans about 71.4 h, so the attempt count and
// the 72 h window run out together, as the contract promises.
func (p RetryPolicy) Backoff(n int, jitter float64) time.Duration {
	if n < 1 {
		n = 1
	}
	if len(p.Schedule) > 0 {
		// The customer's own delays, jittered alike but never capped: they asked for them.
		return time.Duration(float64(p.Schedule[min(n, len(p.Schedule))-1]) * (0.9 + 0.2*jitter))
	}
	d := float64(p.Base) * math.Pow(2, float64(n-1))
	if p.MaxDelay > 0 && d > float64(p.MaxDelay) {
		d = float64(p.MaxDelay)
	}
	d *= 0.9 + 0.2*jitter
	if p.MaxDelay > 0 && d > float64(p.MaxDelay) {
		d = float64(p.MaxDelay)
	}
	return time.Duration(d)
}

// Result is what a worker learned from one attempt.
type Result struct {
	// Status is the HTTP status, 0 when no response came.
	Status int
	// RetryAfter is the receiver's Retry-After, 0 when absent or unparsable.
	RetryAfter time.Duration
	// TokenRefused says the endpoint answered 401 to an OAuth 2 access token: the token was dropped and the
	// next attempt asks for a new one, so the attempt is retried rather than failed (the contract).
	TokenRefused bool
}

// Decision is the delivery's next state after an attempt.
type Decision struct {
	Outcome       Outcome
	State         State
	NextAttemptAt time.Time
	// DeadReason is set when State is Failed or Expired.
	DeadReason string
}

// Decide applies the contract to one finished attempt. attempt is the attempt's number within the current
// schedule (1 for the first), giveUpAt the delivery's deadline, now the attempt's end. Retry-After is
// honoured when it asks for more than the backoff, up to MaxDelay.
func (p RetryPolicy) Decide(r Result, attempt int, giveUpAt, now time.Time, jitter float64) Decision {
	o := Classify(r.Status)
	if r.TokenRefused && o == OutcomeFailed {
		o = OutcomeRetry
	}
	switch o {
	case OutcomeDelivered:
		return Decision{Outcome: o, State: Delivered, NextAttemptAt: now}
	case OutcomeFailed:
		return Decision{Outcome: o, State: Failed, NextAttemptAt: now, DeadReason: ReasonPermanentStatus}
	}
	if attempt >= p.MaxAttempts {
		return Decision{Outcome: OutcomeRetry, State: Expired, NextAttemptAt: now, DeadReason: ReasonMaxAttempts}
	}
	delay := p.Backoff(attempt, jitter)
	if r.RetryAfter > delay {
		delay = r.RetryAfter
		if p.MaxDelay > 0 && delay > p.MaxDelay {
			delay = p.MaxDelay
		}
	}
	next := now.Add(delay)
	if !next.Before(giveUpAt) {
		return Decision{Outcome: OutcomeRetry, State: Expired, NextAttemptAt: now, DeadReason: ReasonDeadline}
	}
	return Decision{Outcome: OutcomeRetry, State: Pending, NextAttemptAt: next}
}

// Circuit states of a subscription (subscriptions.circuit_state).
const (
	// CircuitClosed: deliveries flow.
	CircuitClosed = "closed"
	// CircuitOpen: too many transient failures in a row; due deliveries wait (their give_up_at still runs)
	// until the probe time.
	CircuitOpen = "open"
	// CircuitHalfOpen: one probe delivery is in flight; its outcome closes the circuit or opens it again for
	// twice as long.
	CircuitHalfOpen = "half_open"
)

// Breaker is the circuit breaker's policy (HOOKLINE_BREAKER_* in the configuration). The transitions are
// carried out in SQL, where the outcomes are recorded (CompleteAttempts) and where rows are claimed.
type Breaker struct {
	// Threshold is how many transient failures in a row open the circuit (default 10). Any answer from
	// the endpoint, 2xx or a permanent error, ends the run.
	Threshold int
	// ProbeInterval is how long an open circuit waits before its probe (default 30 s); it doubles after
	// each failed probe, up to ProbeMax (default 6 h).
	ProbeInterval time.Duration
	ProbeMax      time.Duration
}

func (b *Breaker) defaults() {
	if b.Threshold <= 0 {
		b.Threshold = 10
	}
	if b.ProbeInterval <= 0 {
		b.ProbeInterval = 30 * time.Second
	}
	if b.ProbeMax <= 0 {
		b.ProbeMax = 6 * time.Hour
	}
	// The contract caps every wait, the first one included, at HOOKLINE_RETRY_MAX_DELAY.
	b.ProbeInterval = min(b.ProbeInterval, b.ProbeMax)
}

// GiveUpAt is the deadline of a schedule that starts at start (creation, manual retry or replay).
func (p RetryPolicy) GiveUpAt(start time.Time) time.Time { return start.Add(p.Window) }

// Jitter is the default jitter source.
func Jitter() float64 { return rand.Float64() }
