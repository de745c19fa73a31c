// Package incidents tells people when an endpoint is down, once per step, never per event.
//
// A subscription whose attempts have only failed for HOOKLINE_INCIDENT_AFTER has an incident. Its steps are
// opened, a day later, before its first waiting delivery expires, and after deliveries expired (a summary of
// what was lost); a 2xx ends it. Check finds them, run by the maintenance leader every few seconds; each
// step is claimed by one SQL statement (a timestamp set where it was NULL), so several processes tell it
// once. Telling is queued, not done inline, in the claim's transaction: customer emails go to the
// notifications outbox (sent and retried by the notifier), operator notifications are published as events
// of an internal tenant, so the delivery engine signs, retries and dead-letters them like any other.
//
// The same check tells, once per certificate, of endpoints whose client certificate expires within
// subscriptions.CertificateExpiryNotice (certificates.go).
package incidents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/bounded"
	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Steps of an incident, as notification kinds.
const (
	KindOpened   = "incident_opened"
	KindDay      = "incident_day"
	KindExpiring = "incident_expiring"
	KindExpired  = "incident_expired"
	KindEnded    = "incident_ended"
)

// Operator notification event types (the contract's).
const (
	EventFailing   = "subscription.failing"
	EventRecovered = "subscription.recovered"
	EventDisabled  = "subscription.disabled"
	EventExhausted = "deliveries.exhausted"
	// EventCertificateExpiring: a client certificate expires within subscriptions.CertificateExpiryNotice.
	EventCertificateExpiring = "subscription.certificate_expiring"
)

// Timing of the steps.
const (
	// DayAfter is when an open incident is told again.
	DayAfter = 24 * time.Hour
	// ExpiryWarning: the "first delivery expires soon" step comes when that is less than this away.
	ExpiryWarning = 12 * time.Hour
	// ExpiredSettle lets a burst of expiries settle before the one summary of what was lost.
	ExpiredSettle = 5 * time.Minute
	// ExhaustedEvery is how often deliveries.exhausted may be sent per subscription (with a count).
	ExhaustedEvery = time.Minute
	// LostEvents is how many expired event ids a summary lists.
	LostEvents = 10
)

// Options configure the Service.
type Options struct {
	// After is HOOKLINE_INCIDENT_AFTER: only failures this long make an incident.
	After time.Duration
	// PublicURL is the base of links in messages (HOOKLINE_PUBLIC_URL).
	PublicURL string
	Now       func() time.Time
	Log       *slog.Logger
	// Operator, when set, receives operator notifications (HOOKLINE_OPERATOR_WEBHOOK_URL).
	Operator *Operator
	// Batch is the most steps of one kind claimed and told in one transaction (default StepBatch).
	Batch int
}

// Statement is how each of a check's transactions runs (bounded.Do): within 30 s a try, three counted
// failures. A failed transaction has claimed nothing, so trying it again is safe.
var Statement = bounded.Policy{PerTry: 30 * time.Second, Tries: 3}

// StepBatch is how many steps of one kind one transaction claims and tells at most; a check goes on,
// batch after batch, until none is left. One shared receiver's outage makes thousands of incidents at
// once: in one transaction they held thousands of row locks and queued every email and operator
// notification for as long as that took, and a failure anywhere undid all of it.
const StepBatch = 100

// Service finds incidents and their steps, and reads them for the dashboard.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	o    Options
	// afterClaim, set by tests, runs in a batch's transaction between its claim of n steps (or operator
	// notices: kind is then the event type) and what it tells: an error there is a crash between the two.
	afterClaim func(ctx context.Context, kind string, n int) error
}

// New returns the Service.
func New(pool *pgxpool.Pool, o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.After <= 0 {
		o.After = time.Hour
	}
	if o.Batch <= 0 {
		o.Batch = StepBatch
	}
	return &Service{pool: pool, q: db.New(pool), o: o}
}

// Incident is one incident, with what the dashboard and messages say about it.
type Incident struct {
	ID              uuid.UUID  `json:"id"`
	TenantID        uuid.UUID  `json:"tenant_id"`
	SubscriptionID  uuid.UUID  `json:"subscription_id"`
	SubscriptionURL string     `json:"url"`
	Description     string     `json:"description,omitempty"`
	FailingSince    time.Time  `json:"failing_since"`
	OpenedAt        time.Time  `json:"opened_at"`
	EndedAt         *time.Time `json:"ended_at"`
	DayToldAt       *time.Time `json:"day_notified_at"`
	ExpiringToldAt  *time.Time `json:"expiring_notified_at"`
	ExpiredToldAt   *time.Time `json:"expired_notified_at"`
	ExpiredCount    int        `json:"expired_count"`
	// Waiting and FirstExpiry: the subscription's deliveries still waiting, and when the first expires.
	Waiting     int        `json:"waiting"`
	FirstExpiry *time.Time `json:"first_expiry"`
	// Notices is what each step (by kind) sent; filled by OfSubscription.
	Notices map[string]StepNotice `json:"-"`
}

func fromRow(r db.Incident) Incident {
	return Incident{ID: r.ID, TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, FailingSince: r.FailingSince,
		OpenedAt: r.OpenedAt, EndedAt: r.EndedAt, DayToldAt: r.DayNotifiedAt, ExpiringToldAt: r.ExpiringNotifiedAt,
		ExpiredToldAt: r.ExpiredNotifiedAt, ExpiredCount: int(r.ExpiredCount)}
}

// Check applies every rule once: opens and ends incidents, claims due steps and client certificates
// expiring, and queues what they tell.
// Each kind of step is claimed and told in one transaction (an outbox): its emails and its operator
// notification are queued exactly when the claim commits, so a crash or an error in between leaves the
// step unclaimed for the next check rather than claimed and never told. Safe to run from several
// processes at once (each step is claimed in SQL), though the maintenance leader is the one that runs it.
func (s *Service) Check(ctx context.Context) error {
	now := s.o.Now()
	if err := s.step(ctx, KindOpened, func(ctx context.Context, q *db.Queries, batch int32) ([]toldStep, error) {
		rows, err := q.OpenIncidents(ctx, db.OpenIncidentsParams{Now: now, Cutoff: now.Add(-s.o.After), MaxRows: batch})
		out := make([]toldStep, 0, len(rows))
		for _, r := range rows {
			out = append(out, toldStep{in: fromRow(r), kind: KindOpened, event: EventFailing})
		}
		return out, err
	}); err != nil {
		return fmt.Errorf("open incidents: %w", err)
	}
	if err := s.step(ctx, KindEnded, func(ctx context.Context, q *db.Queries, batch int32) ([]toldStep, error) {
		rows, err := q.EndIncidents(ctx, db.EndIncidentsParams{Now: now, MaxRows: batch})
		out := make([]toldStep, 0, len(rows))
		for _, r := range rows {
			out = append(out, toldStep{in: fromRow(r), kind: KindEnded, event: EventRecovered})
		}
		return out, err
	}); err != nil {
		return fmt.Errorf("end incidents: %w", err)
	}
	if err := s.step(ctx, KindDay, func(ctx context.Context, q *db.Queries, batch int32) ([]toldStep, error) {
		rows, err := q.ClaimIncidentDaySteps(ctx, db.ClaimIncidentDayStepsParams{Now: now, DayAgo: now.Add(-DayAfter), MaxRows: batch})
		out := make([]toldStep, 0, len(rows))
		for _, r := range rows {
			out = append(out, toldStep{in: fromRow(r), kind: KindDay})
		}
		return out, err
	}); err != nil {
		return fmt.Errorf("incident day steps: %w", err)
	}
	if err := s.step(ctx, KindExpiring, func(ctx context.Context, q *db.Queries, batch int32) ([]toldStep, error) {
		rows, err := q.ClaimIncidentExpiringSteps(ctx, db.ClaimIncidentExpiringStepsParams{Now: now, WarnBefore: now.Add(ExpiryWarning), MaxRows: batch})
		out := make([]toldStep, 0, len(rows))
		for _, r := range rows {
			in := fromRow(db.Incident{ID: r.ID, TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, FailingSince: r.FailingSince,
				OpenedAt: r.OpenedAt, EndedAt: r.EndedAt, DayNotifiedAt: r.DayNotifiedAt, ExpiringNotifiedAt: r.ExpiringNotifiedAt,
				ExpiredNotifiedAt: r.ExpiredNotifiedAt, ExpiredCount: r.ExpiredCount})
			out = append(out, toldStep{in: in, kind: KindExpiring})
		}
		return out, err
	}); err != nil {
		return fmt.Errorf("incident expiring steps: %w", err)
	}
	if err := s.step(ctx, KindExpired, func(ctx context.Context, q *db.Queries, batch int32) ([]toldStep, error) {
		rows, err := q.ClaimIncidentExpiredSteps(ctx, db.ClaimIncidentExpiredStepsParams{Now: now, SettledBefore: now.Add(-ExpiredSettle), MaxRows: batch})
		if err != nil {
			return nil, err
		}
		out := make([]toldStep, 0, len(rows))
		for _, r := range rows {
			in := fromRow(r)
			lost, err := q.ExpiredEventsOfIncident(ctx, db.ExpiredEventsOfIncidentParams{SubscriptionID: in.SubscriptionID,
				Since: in.FailingSince, MaxRows: LostEvents})
			if err != nil {
				return nil, fmt.Errorf("expired events: %w", err)
			}
			events := make([]map[string]string, 0, len(lost))
			for _, e := range lost {
				events = append(events, map[string]string{"event_id": e.EventID.String(), "event_type": e.EventType})
			}
			out = append(out, toldStep{in: in, kind: KindExpired, extra: map[string]any{"expired": in.ExpiredCount, "last_events": events}})
		}
		return out, nil
	}); err != nil {
		return fmt.Errorf("incident expired steps: %w", err)
	}
	if err := s.certificateNotices(ctx, now); err != nil {
		return fmt.Errorf("client certificates expiring: %w", err)
	}
	if s.o.Operator != nil {
		if err := s.operatorChecks(ctx, now); err != nil {
			return err
		}
	}
	return nil
}

// toldStep is a claimed step and what telling it takes: the operator event type (none for some steps)
// and extra message data.
type toldStep struct {
	in          Incident
	kind, event string
	extra       map[string]any
}

// step claims steps of one kind and queues what they tell, Batch at a time: each batch in one transaction,
// all of which commits, or none of it and its steps are claimed again by the next check. It goes on while
// a batch comes back full.
func (s *Service) step(ctx context.Context, kind string, claim func(ctx context.Context, q *db.Queries, batch int32) ([]toldStep, error)) error {
	for {
		n, err := s.stepBatch(ctx, kind, claim)
		if err != nil || n < s.o.Batch {
			return err
		}
	}
}

// stepBatch is one batch of step: it returns how many steps it claimed and told.
func (s *Service) stepBatch(ctx context.Context, kind string, claim func(ctx context.Context, q *db.Queries, batch int32) ([]toldStep, error)) (int, error) {
	var told []toldStep
	err := bounded.Do(ctx, Statement, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			q := s.q.WithTx(tx)
			steps, err := claim(ctx, q, int32(s.o.Batch))
			if err != nil {
				return err
			}
			if s.afterClaim != nil && len(steps) > 0 {
				if err := s.afterClaim(ctx, kind, len(steps)); err != nil {
					return err
				}
			}
			for _, st := range steps {
				if err := s.tell(ctx, tx, q, st); err != nil {
					return err
				}
			}
			told = steps
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	for _, st := range told {
		s.o.Log.Warn("incident step", "kind", st.kind, "incident_id", st.in.ID, "subscription_id", st.in.SubscriptionID,
			"tenant_id", st.in.TenantID)
	}
	return len(told), nil
}

// operatorChecks sends the operator notifications that are not incident steps: disabled subscriptions,
// and deliveries that expired (at most one per subscription per ExhaustedEvery, with a count). Each claim
// and its notifications commit together.
func (s *Service) operatorChecks(ctx context.Context, now time.Time) error {
	for claimed := s.o.Batch; claimed == s.o.Batch; { // Batch at a time, while a batch comes back full
		err := bounded.Do(ctx, Statement, func(ctx context.Context) error {
			return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				disabled, err := s.q.WithTx(tx).ClaimDisabledNotices(ctx, db.ClaimDisabledNoticesParams{Now: now, MaxRows: int32(s.o.Batch)})
				if err != nil {
					return err
				}
				if s.afterClaim != nil && len(disabled) > 0 {
					if err := s.afterClaim(ctx, EventDisabled, len(disabled)); err != nil {
						return err
					}
				}
				for _, d := range disabled {
					if _, err := s.o.Operator.NotifyTx(ctx, tx, EventDisabled, map[string]any{"tenant_id": d.TenantID,
						"subscription_id": d.ID, "url": d.URL, "reason": d.DisabledReason}); err != nil {
						return err
					}
				}
				claimed = len(disabled)
				return nil
			})
		})
		if err != nil {
			return fmt.Errorf("disabled subscriptions: %w", err)
		}
	}
	// One watermark for all subscriptions, moved at most every ExhaustedEvery: each report covers the
	// expiries since the last one, so no subscription gets more than one a minute. A report goes Batch
	// subscriptions per transaction, the window and the last subscription told kept with the watermark.
	until := now.Truncate(ExhaustedEvery)
	for told := s.o.Batch; told == s.o.Batch; {
		var err error
		if told, err = s.reportExhausted(ctx, until); err != nil {
			return fmt.Errorf("exhausted deliveries: %w", err)
		}
	}
	return nil
}

// exhaustedWatermark names the deliveries.exhausted report's watermark.
const exhaustedWatermark = "deliveries.exhausted"

// reportExhausted tells the operator of up to Batch subscriptions whose deliveries expired in the report's
// window, in one transaction with the watermark's move, and says how many it told. A window starts when the
// last one is done and until is past it; it ends with the batch that comes back short.
func (s *Service) reportExhausted(ctx context.Context, until time.Time) (told int, err error) {
	err = bounded.Do(ctx, Statement, func(ctx context.Context) error {
		return s.reportExhaustedTx(ctx, until, &told)
	})
	return told, err
}

// reportExhaustedTx is one try of reportExhausted.
func (s *Service) reportExhaustedTx(ctx context.Context, until time.Time, told *int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		w, err := q.LockOperatorWatermark(ctx, db.LockOperatorWatermarkParams{Name: exhaustedWatermark, Until: until})
		if err != nil {
			return err
		}
		from, to, after := w.Until, w.ReportingUntil, uuid.Nil
		if to == nil {
			if !from.Before(until) {
				return nil
			}
			to = &until
		} else if w.ReportingAfter != nil {
			after = *w.ReportingAfter
		}
		rows, err := q.ExhaustedSince(ctx, db.ExhaustedSinceParams{Since: from, Until: *to, AfterSubscription: after, MaxRows: int32(s.o.Batch)})
		if err != nil {
			return err
		}
		if s.afterClaim != nil && len(rows) > 0 {
			if err := s.afterClaim(ctx, EventExhausted, len(rows)); err != nil {
				return err
			}
		}
		for _, r := range rows {
			if _, err := s.o.Operator.NotifyTx(ctx, tx, EventExhausted, map[string]any{"tenant_id": r.TenantID,
				"subscription_id": r.SubscriptionID, "url": r.URL, "expired": r.Expired, "from": from, "to": *to}); err != nil {
				return err
			}
		}
		next := db.SetOperatorWatermarkParams{Name: exhaustedWatermark, Until: *to} // the window is told
		if len(rows) == s.o.Batch {
			last := rows[len(rows)-1].SubscriptionID
			next = db.SetOperatorWatermarkParams{Name: exhaustedWatermark, Until: from, ReportingUntil: to, ReportingAfter: &last}
		}
		*told = len(rows)
		return q.SetOperatorWatermark(ctx, next)
	})
}

// tell queues a claimed step in its transaction: an email to every dashboard user of the tenant, and (for
// the steps that have one) an operator notification, recorded against the step.
func (s *Service) tell(ctx context.Context, tx pgx.Tx, q *db.Queries, st toldStep) error {
	in := st.in
	now := s.o.Now()
	sub, err := q.GetSubscriptionAny(ctx, in.SubscriptionID)
	if err != nil {
		return fmt.Errorf("incident %s: read subscription: %w", in.ID, err)
	}
	waiting, err := q.IncidentWaiting(ctx, in.SubscriptionID)
	if err != nil {
		return fmt.Errorf("incident %s: waiting deliveries: %w", in.ID, err)
	}
	data := map[string]any{
		"incident_id": in.ID, "tenant_id": in.TenantID, "subscription_id": in.SubscriptionID, "url": sub.URL,
		"description": sub.Description, "failing_since": in.FailingSince, "opened_at": in.OpenedAt, "ended_at": in.EndedAt,
		"waiting": waiting.Waiting, "first_expiry": firstExpiry(waiting.FirstExpiry),
		"link": s.o.PublicURL + "/subscriptions/" + in.SubscriptionID.String(),
	}
	for k, v := range st.extra {
		data[k] = v
	}
	body, _ := json.Marshal(data)
	tenantID := in.TenantID
	emails, err := q.TenantUserEmails(ctx, &tenantID)
	if err != nil {
		return fmt.Errorf("incident %s: recipients: %w", in.ID, err)
	}
	for _, to := range emails {
		id := in.ID
		if err := q.EnqueueNotification(ctx, db.EnqueueNotificationParams{TenantID: in.TenantID, IncidentID: &id, Kind: st.kind,
			Recipient: to, Data: body, Now: now}); err != nil {
			return fmt.Errorf("incident %s: queue email: %w", in.ID, err)
		}
	}
	if st.event != "" && s.o.Operator != nil {
		ev, err := s.o.Operator.NotifyTx(ctx, tx, st.event, map[string]any{"tenant_id": in.TenantID, "subscription_id": in.SubscriptionID,
			"url": sub.URL, "incident_id": in.ID, "failing_since": in.FailingSince})
		if err != nil {
			return fmt.Errorf("incident %s: operator notification: %w", in.ID, err)
		}
		if err := q.RecordIncidentOperatorEvent(ctx, db.RecordIncidentOperatorEventParams{IncidentID: in.ID, Kind: st.kind, EventID: ev}); err != nil {
			return fmt.Errorf("incident %s: record operator notification: %w", in.ID, err)
		}
	}
	return nil
}

// OpenOf returns a tenant's open incidents, with what waits, for the dashboard's banner.
func (s *Service) OpenOf(ctx context.Context, tenantID uuid.UUID) ([]Incident, error) {
	rows, err := s.q.OpenIncidentsOfTenant(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("open incidents: %w", err)
	}
	out := make([]Incident, 0, len(rows))
	for _, r := range rows {
		in := fromRow(r.Incident)
		in.SubscriptionURL, in.Description = r.URL, r.Description
		w, err := s.q.IncidentWaiting(ctx, in.SubscriptionID)
		if err != nil {
			return nil, fmt.Errorf("incident waiting: %w", err)
		}
		in.Waiting, in.FirstExpiry = int(w.Waiting), firstExpiry(w.FirstExpiry)
		out = append(out, in)
	}
	return out, nil
}

// firstExpiry reads IncidentWaiting's first_expiry: the epoch means nothing waits.
func firstExpiry(t time.Time) *time.Time {
	if t.Unix() == 0 {
		return nil
	}
	return &t
}

// NoMailServer is the last_error of emails the notifier set aside because HOOKLINE_SMTP_URL is empty
// (defined here, where the pages read it; the notifier writes it).
const NoMailServer = "no SMTP configured (HOOKLINE_SMTP_URL is empty): not sent"

// StepNotice is what one step of an incident actually sent, read from the outbox and the operator's
// deliveries (not from the step's claim).
type StepNotice struct {
	// Emails: sent (LastSentAt the newest), still queued or retrying (LastError the newest failure), and
	// set aside, never to be sent (NoMailServer: for lack of HOOKLINE_SMTP_URL; otherwise given up).
	Sent, Pending, SetAside int
	LastSentAt              *time.Time
	LastError               string
	NoMailServer            bool
	// Operator is the state of the step's operator notification delivery: "" when the step has none,
	// "gone" when its event no longer exists (or matched no subscription), else a delivery state.
	Operator   string
	OperatorAt *time.Time
}

// OfSubscription returns a subscription's incidents, newest first, with what each step sent.
func (s *Service) OfSubscription(ctx context.Context, tenantID, subscriptionID uuid.UUID, limit int) ([]Incident, error) {
	rows, err := s.q.IncidentsOfSubscription(ctx, db.IncidentsOfSubscriptionParams{TenantID: tenantID,
		SubscriptionID: subscriptionID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("incidents: %w", err)
	}
	out := make([]Incident, 0, len(rows))
	ids := make([]uuid.UUID, 0, len(rows))
	for _, r := range rows {
		out = append(out, fromRow(r))
		ids = append(ids, r.ID)
	}
	notices, err := s.notices(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Notices = notices[out[i].ID]
	}
	return out, nil
}

// notices reads what each step of these incidents sent, by incident and kind.
func (s *Service) notices(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]map[string]StepNotice, error) {
	out := map[uuid.UUID]map[string]StepNotice{}
	get := func(id uuid.UUID, kind string) StepNotice {
		if out[id] == nil {
			out[id] = map[string]StepNotice{}
		}
		return out[id][kind]
	}
	emails, err := s.q.IncidentStepEmails(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("incident emails: %w", err)
	}
	for _, r := range emails {
		n := get(r.IncidentID, r.Kind)
		n.Sent, n.Pending, n.SetAside, n.LastError = int(r.Sent), int(r.Pending), int(r.SetAside), r.LastError
		if r.LastSentAt.Unix() != 0 {
			n.LastSentAt = &r.LastSentAt
		}
		n.NoMailServer = r.SetAside > 0 && r.LastError == NoMailServer
		out[r.IncidentID][r.Kind] = n
	}
	ops, err := s.q.IncidentStepOperatorDeliveries(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("incident operator notifications: %w", err)
	}
	for _, r := range ops {
		n := get(r.IncidentID, r.Kind)
		n.Operator = r.State
		if n.Operator == "" {
			n.Operator = "gone"
		}
		if r.LastAttemptAt.Unix() != 0 {
			n.OperatorAt = &r.LastAttemptAt
		}
		out[r.IncidentID][r.Kind] = n
	}
	return out, nil
}

// OperatorTenant names the internal tenant whose events are the operator's notifications.
const OperatorTenant = "Hookline operator notifications (internal)"

// Operator publishes operator notifications as events of the internal operator tenant, to one
// subscription that points at HOOKLINE_OPERATOR_WEBHOOK_URL and signs with HOOKLINE_OPERATOR_WEBHOOK_SECRET.
type Operator struct {
	pub      *publish.Publisher
	tenantID uuid.UUID
}

// EnsureOperator finds or makes the internal tenant and its subscription, and returns the Operator. A
// subscription disabled by an older version (which let a 410 or auto-disable stop it, holding every later
// notification silently) is enabled again, and log says so.
func EnsureOperator(ctx context.Context, pool *pgxpool.Pool, subs *subscriptions.Service, pub *publish.Publisher, url, secret string, log *slog.Logger) (*Operator, error) {
	if log == nil {
		log = slog.Default()
	}
	// Hookline sets the subscription up from its configuration, outside any request: the changes are
	// recorded as the system's.
	ctx = activity.System(ctx, "operator notifications setup")
	q := db.New(pool)
	t, err := q.InternalTenant(ctx, OperatorTenant)
	if errors.Is(err, pgx.ErrNoRows) {
		t, err = q.CreateInternalTenant(ctx, OperatorTenant)
	}
	if err != nil {
		return nil, fmt.Errorf("operator tenant: %w", err)
	}
	sub, err := subs.EnsureInternal(ctx, t.ID, "operator notifications", url, secret)
	if err != nil {
		return nil, fmt.Errorf("HOOKLINE_OPERATOR_WEBHOOK_URL/SECRET: %w", err)
	}
	if sub.State == subscriptions.Disabled {
		if _, err := subs.Resume(ctx, t.ID, sub.ID); err != nil {
			return nil, fmt.Errorf("enable the operator notifications' subscription again: %w", err)
		}
		log.Warn("the operator notifications' subscription was disabled (by an older version of Hookline): enabled again; "+
			"notifications held meanwhile are sent now", "subscription_id", sub.ID, "url", sub.URL, "was", sub.DisabledReason)
	}
	return &Operator{pub: pub, tenantID: t.ID}, nil
}

// OperatorStatus is the operator notifications' subscription as /admin shows it.
type OperatorStatus struct {
	URL, State, DisabledReason, Circuit string
	CircuitOpenedAt, FailingSince       *time.Time
	// LastError is the newest failed attempt's status or error, at LastErrorAt (nil: none has failed).
	LastError   string
	LastErrorAt *time.Time
	// Dead counts its dead deliveries, up to DeadUpTo.
	Dead int
}

// DeadUpTo caps OperatorStatus.Dead.
const DeadUpTo = 1000

// OperatorStatus returns the operator subscription's state, or nil when operator notifications are off
// (no HOOKLINE_OPERATOR_WEBHOOK_URL).
func (s *Service) OperatorStatus(ctx context.Context) (*OperatorStatus, error) {
	if s.o.Operator == nil {
		return nil, nil
	}
	r, err := s.q.OperatorSubscriptionStatus(ctx, db.OperatorSubscriptionStatusParams{TenantID: s.o.Operator.tenantID, UpTo: DeadUpTo})
	if err != nil {
		return nil, fmt.Errorf("operator subscription: %w", err)
	}
	st := &OperatorStatus{URL: r.URL, State: r.State, DisabledReason: r.DisabledReason, Circuit: r.CircuitState,
		CircuitOpenedAt: r.CircuitOpenedAt, FailingSince: r.FailingSince, LastError: r.LastError, Dead: int(r.Dead)}
	if r.LastErrorAt.Unix() != 0 {
		st.LastErrorAt = &r.LastErrorAt
	}
	return st, nil
}

// TenantID is the internal operator tenant's id.
func (o *Operator) TenantID() uuid.UUID { return o.tenantID }

// NotifyTx publishes one operator notification in the caller's transaction, and returns its event id.
func (o *Operator) NotifyTx(ctx context.Context, tx pgx.Tx, typ string, data map[string]any) (uuid.UUID, error) {
	payload, err := json.Marshal(data)
	if err != nil {
		return uuid.Nil, err
	}
	p, err := o.pub.PublishTx(ctx, tx, publish.PublishInput{TenantID: o.tenantID, EventType: typ, Payload: payload, Internal: true})
	if err != nil {
		return uuid.Nil, err
	}
	return uuid.Parse(p.ID)
}

// Notify publishes one operator notification: body {"type", "timestamp", "data"} like every event.
func (o *Operator) Notify(ctx context.Context, typ string, data map[string]any) error {
	payload, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = o.pub.Publish(ctx, publish.PublishInput{TenantID: o.tenantID, EventType: typ, Payload: payload, Internal: true})
	return err
}
