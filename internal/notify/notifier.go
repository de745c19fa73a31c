// Package notify sends the customer alert emails that incidents queue in the notifications outbox.
//
// The Notifier runs as a maintenance task of its own (on the elected leader, every few seconds), so a slow
// or unreachable mail server delays only emails, never deliveries or the incident checks. Each run claims
// a small batch of due rows (FOR UPDATE SKIP LOCKED, with a lease), sends each one over SMTP with a
// timeout, and marks it sent or schedules a retry with backoff. Several notifiers at once (an overlap of
// leaders, or tests) take disjoint rows, so each message is sent once; a sender that dies between the
// server's "250 OK" and marking the row can send it again after the lease, so messages carry a
// Message-ID made from the row's id that mail clients dedupe on.
package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hookline/hookline/internal/db"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/maintenance"
	"github.com/hookline/hookline/internal/smtpurl"
	"github.com/jackc/pgx/v5/pgxpool"
	gomail "github.com/wneessen/go-mail"
)

// Defaults of Options.
const (
	DefaultInterval    = 5 * time.Second
	DefaultBatch       = 10
	DefaultSendTimeout = 30 * time.Second
	DefaultBaseDelay   = time.Minute
	DefaultMaxDelay    = time.Hour
	// DefaultMaxAttempts with the delays above retries for about 18 hours: past that an incident email
	// is stale, and the next step (or the dashboard's banner) tells the story.
	DefaultMaxAttempts = 24
	// DefaultKeep is how long finished rows (sent or given up) stay in the table for inspection.
	DefaultKeep = 30 * 24 * time.Hour
	// NoSMTP is the last_error of messages set aside because HOOKLINE_SMTP_URL is empty.
	NoSMTP = incidents.NoMailServer
	// maxError bounds a stored last_error.
	maxError = 1024
)

// Options configure a Notifier. Zero values take the defaults.
type Options struct {
	// SMTP is the parsed HOOKLINE_SMTP_URL; nil when it is empty (due messages are then set aside).
	SMTP *smtpurl.SMTP
	// TLSConfig, when set, is the base of the TLS configuration (tests trust their own CA with it); the
	// server name is always the SMTP host. Default: the system's roots, TLS 1.2 or newer.
	TLSConfig *tls.Config
	Now       func() time.Time
	Log       *slog.Logger
	Interval  time.Duration
	// Batch is how many messages one claim takes; a run claims until the queue is empty or maxBatches.
	Batch int
	// SendTimeout bounds one message: connect, TLS, auth and the whole SMTP conversation.
	SendTimeout time.Duration
	// BaseDelay is the first retry delay, doubling up to MaxDelay; MaxAttempts sends, then give up.
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	MaxAttempts int
	// Keep: finished rows older than this are deleted (about hourly).
	Keep time.Duration
	// Brand is the product's name in emails (HOOKLINE_BRAND_NAME); empty means Hookline.
	Brand string
}

// Notifier sends queued notifications.
type Notifier struct {
	q *db.Queries
	o Options
	// lastPrune is the unix nanoseconds of the last prune; atomic because Run may run concurrently.
	lastPrune atomic.Int64
}

// maxBatches bounds one run, so a huge backlog does not keep one run going for long.
const maxBatches = 10

// New returns a Notifier on pool.
func New(pool *pgxpool.Pool, o Options) *Notifier {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Brand == "" {
		o.Brand = "Hookline"
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	return &Notifier{q: db.New(pool), o: o}
}

// Task is the Notifier as a maintenance task.
func (n *Notifier) Task() maintenance.Task {
	// A run sends at most maxBatches batches, each message within SendTimeout: that bounds it.
	return maintenance.Task{Name: "notify", Interval: n.o.Interval, Run: n.Run,
		Timeout: time.Duration(maxBatches*n.o.Batch)*n.o.SendTimeout + time.Minute}
}

// Run sends what is due, then prunes old finished rows now and then. The maintenance leader calls it
// every Interval; it is safe to run from several goroutines or processes at once.
func (n *Notifier) Run(ctx context.Context) error {
	if n.o.SMTP == nil {
		// Kept queued, they would pile up, and be sent stale the day SMTP is configured.
		skipped, err := maintenance.Do(ctx, func(ctx context.Context) (int64, error) {
			return n.q.SkipDueNotifications(ctx, db.SkipDueNotificationsParams{Now: n.o.Now(), LastError: NoSMTP})
		})
		if err != nil {
			return fmt.Errorf("notifications: set aside: %w", err)
		}
		if skipped > 0 {
			n.o.Log.Warn("customer alert emails not sent: HOOKLINE_SMTP_URL is empty", "notifications", skipped)
		}
	} else {
		for range maxBatches {
			claimed, err := n.sendBatch(ctx)
			if err != nil {
				return err
			}
			if claimed < n.o.Batch {
				break
			}
		}
	}
	return n.prune(ctx)
}

// sendBatch claims one batch and sends it; it returns how many rows it claimed.
func (n *Notifier) sendBatch(ctx context.Context) (int, error) {
	now := n.o.Now()
	// The lease covers the whole batch sent one after another, each within SendTimeout.
	lease := time.Duration(n.o.Batch)*n.o.SendTimeout + time.Minute
	rows, err := maintenance.Do(ctx, func(ctx context.Context) ([]db.Notification, error) {
		return n.q.ClaimNotifications(ctx, db.ClaimNotificationsParams{Now: now, LeaseUntil: now.Add(lease), MaxRows: int32(n.o.Batch)})
	})
	if err != nil {
		return 0, fmt.Errorf("notifications: claim: %w", err)
	}
	for i, r := range rows {
		if ctx.Err() != nil {
			// Stopping (leadership lost, shutdown): hand the rest back now rather than after the lease.
			n.release(rows[i:])
			return len(rows), nil
		}
		n.sendOne(ctx, r)
	}
	return len(rows), nil
}

// sendOne sends one claimed row and records the outcome.
func (n *Notifier) sendOne(ctx context.Context, r db.Notification) {
	log := n.o.Log.With("notification_id", r.ID, "kind", r.Kind, "tenant_id", r.TenantID, "attempt", r.Attempts)
	err := n.send(ctx, r)
	// Record the outcome even when ctx ended meanwhile: the send happened (or failed) either way.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err == nil {
		if err := n.q.MarkNotificationSent(rctx, db.MarkNotificationSentParams{ID: r.ID, Now: n.o.Now()}); err != nil {
			log.Error("notification sent but not marked; it may be sent again after its lease", "err", err)
			return
		}
		log.Info("notification sent")
		return
	}
	msg := truncate(err.Error(), maxError)
	var perm permanentError
	if errors.As(err, &perm) || int(r.Attempts) >= n.o.MaxAttempts {
		why := msg
		if !errors.As(err, &perm) {
			why = truncate(fmt.Sprintf("gave up after %d attempts: %s", r.Attempts, msg), maxError)
		}
		if _, err := n.q.GiveUpNotification(rctx, db.GiveUpNotificationParams{ID: r.ID, Attempts: r.Attempts, LastError: why}); err != nil {
			log.Error("notification: record giving up", "err", err)
		}
		log.Error("notification not sent, giving up", "err", why)
		return
	}
	next := n.o.Now().Add(n.backoff(int(r.Attempts)))
	if _, err := n.q.RetryNotification(rctx, db.RetryNotificationParams{ID: r.ID, Attempts: r.Attempts, LastError: msg,
		NextAttemptAt: next}); err != nil {
		log.Error("notification: schedule retry", "err", err)
	}
	log.Warn("notification not sent; will retry", "err", msg, "next_attempt_at", next)
}

// release gives claimed, unsent rows back for the next run.
func (n *Notifier) release(rows []db.Notification) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range rows {
		if _, err := n.q.RetryNotification(ctx, db.RetryNotificationParams{ID: r.ID, Attempts: r.Attempts,
			LastError: "not attempted: the notifier stopped", NextAttemptAt: n.o.Now()}); err != nil {
			n.o.Log.Warn("notification: release on stop; it is retried after its lease", "notification_id", r.ID, "err", err)
		}
	}
}

// backoff is the delay after the attempt-th failed send: BaseDelay doubling, capped at MaxDelay.
func (n *Notifier) backoff(attempt int) time.Duration {
	d := n.o.BaseDelay
	for i := 1; i < attempt && d < n.o.MaxDelay; i++ {
		d *= 2
	}
	return min(d, n.o.MaxDelay)
}

// send composes and sends one email on its own connection, all within SendTimeout.
func (n *Notifier) send(ctx context.Context, r db.Notification) error {
	ctx, cancel := context.WithTimeout(ctx, n.o.SendTimeout)
	defer cancel()
	m, err := compose(ctx, r.Kind, r.Data, n.o.Brand)
	if err != nil {
		return err
	}
	if _, err := mail.ParseAddress(r.Recipient); err != nil {
		return permanentError{fmt.Errorf("recipient %q is not an email address", r.Recipient)}
	}
	msg := gomail.NewMsg()
	if err := msg.From(n.o.SMTP.From); err != nil {
		return permanentError{fmt.Errorf("from: %w", err)}
	}
	if err := msg.To(r.Recipient); err != nil {
		return permanentError{fmt.Errorf("recipient: %w", err)}
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	// The row's id: a message sent twice (see the package comment) is the same message to mail clients.
	msg.SetMessageIDWithValue(r.ID.String() + "@" + domainOf(n.o.SMTP.From))
	// RFC 3834: an automatic message, so auto-responders do not answer it.
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	c, err := n.client()
	if err != nil {
		return permanentError{err}
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("smtp %s: timed out after %s: %w", n.o.SMTP.Host, n.o.SendTimeout, err)
		}
		return fmt.Errorf("smtp %s: %w", n.o.SMTP.Host, err)
	}
	return nil
}

// client makes a go-mail client for the configured server.
func (n *Notifier) client() (*gomail.Client, error) {
	s := n.o.SMTP
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if n.o.TLSConfig != nil {
		tc = n.o.TLSConfig.Clone()
	}
	tc.ServerName = s.Host
	opts := []gomail.Option{gomail.WithTimeout(n.o.SendTimeout), gomail.WithTLSConfig(tc)}
	switch {
	case s.ImplicitTLS:
		opts = append(opts, gomail.WithSSL())
	case s.RequireTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.Username != "" {
		// The strongest mechanism the server offers; go-mail refuses PLAIN/LOGIN on an unencrypted
		// connection (except to localhost), so a password is not sent in clear.
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(s.Username),
			gomail.WithPassword(s.Password))
	}
	// Last: WithSSL and the TLS policies may pick a default port.
	opts = append(opts, gomail.WithPort(s.Port))
	return gomail.NewClient(s.Host, opts...)
}

// prune deletes old finished rows, at most about hourly (the statement scans the table).
func (n *Notifier) prune(ctx context.Context) error {
	now := n.o.Now()
	last := n.lastPrune.Load()
	if now.Sub(time.Unix(0, last)) < time.Hour || !n.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return nil
	}
	if _, err := maintenance.Do(ctx, func(ctx context.Context) (int64, error) {
		return n.q.PruneNotifications(ctx, db.PruneNotificationsParams{Before: now.Add(-n.o.Keep), MaxRows: 10000})
	}); err != nil {
		n.lastPrune.Store(last) // try again next run
		return fmt.Errorf("notifications: prune: %w", err)
	}
	return nil
}

func domainOf(addr string) string {
	if a, err := mail.ParseAddress(addr); err == nil {
		addr = a.Address
	}
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return "hookline"
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
