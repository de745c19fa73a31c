package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/maintenance"
	"github.com/hookline/hookline/internal/notify"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/smtpurl"
)

// buildMaintenance makes the maintenance leader and registers its tasks: the lease rescue, the prunes,
// the incident checks, the customer alert emails, the auto-disable rule and the retention sweep.
func (s *Server) buildMaintenance() error {
	cfg, mlog := s.Config, s.log.With("component", "maintenance")
	s.maintainer = maintenance.New(maintenance.Options{ConnConfig: s.EnginePool.Config().ConnConfig, Logger: mlog})
	s.maintainer.Register(maintenance.Task{Name: "rescue", Interval: delivery.RescueInterval, Run: s.rescue})
	s.maintainer.Register(maintenance.Prune("prune_sessions", maintenance.SessionPruneInterval, s.Tenants.PruneSessions, mlog))
	s.maintainer.Register(maintenance.Prune("prune_login_throttle", maintenance.SessionPruneInterval, s.LoginThrottle.Prune, mlog))
	s.maintainer.Register(maintenance.Prune("prune_portal_links", maintenance.SessionPruneInterval, s.Portal.Prune, mlog))
	s.maintainer.Register(maintenance.Task{Name: "history_partitions", Interval: history.TaskInterval, Run: func(ctx context.Context) error {
		_, err := s.History.Make(ctx)
		return err
	}})
	s.maintainer.Register(maintenance.Task{Name: "history_upkeep", Interval: history.UpkeepInterval, Run: func(ctx context.Context) error {
		return history.Upkeep(ctx, s.Pool)
	}})
	s.maintainer.Register(maintenance.Task{Name: "incidents", Interval: maintenance.AutoDisableInterval, Run: s.Incidents.Check})
	// Polling subscriptions: deliveries nobody committed in time expire, and a subscription nobody pulls is
	// failing for the incident rules (internal/polling).
	s.maintainer.Register(maintenance.Task{Name: "polling_upkeep", Interval: polling.UpkeepInterval, Run: func(ctx context.Context) error {
		n, err := maintenance.Do(ctx, s.Polling.Upkeep)
		if n > 0 {
			mlog.Info("polling deliveries expired: not committed within their retry window", "count", n)
		}
		return err
	}})
	// Customer alert emails: their own task, so a slow mail server never holds up the incident checks.
	smtp, err := smtpurl.Configured(cfg.SMTPURL)
	if err != nil {
		return fmt.Errorf("HOOKLINE_SMTP_URL: %w", err)
	}
	s.maintainer.Register(notify.New(s.Pool, notify.Options{SMTP: smtp, Brand: s.Brand.Name, Now: s.now, Log: s.log.With("component", "notify")}).Task())
	if cfg.AutoDisableAfter > 0 {
		s.maintainer.Register(maintenance.AutoDisable(s.disableFailing, cfg.AutoDisableAfter, mlog))
	}
	if cfg.RetentionActivity > 0 {
		s.maintainer.Register(maintenance.Prune("prune_activity", maintenance.SessionPruneInterval, func(ctx context.Context) (int64, error) {
			return s.Activity.Prune(ctx, s.now().Add(-cfg.RetentionActivity), 1000)
		}, mlog))
	}
	// max: a Config built by hand (tests) may leave the interval zero.
	// An hour: a sweep catching up on a backlog is paced (HOOKLINE_RETENTION_RATE) and may take long; one
	// cut off resumes at the next turn, its batches being committed one by one.
	s.maintainer.Register(maintenance.Task{Name: "retention", Interval: max(cfg.RetentionInterval, time.Second), Timeout: time.Hour,
		Run: func(ctx context.Context) error {
			_, err := s.retention.Sweep(ctx)
			return err
		}})
	return nil
}

// rescue puts expired leases back in the queue and dead-letters the deliveries of deleted subscriptions.
func (s *Server) rescue(ctx context.Context) error {
	if _, err := maintenance.Do(ctx, s.worker.RescueExpired); err != nil {
		return err
	}
	_, err := maintenance.Do(ctx, s.worker.DeadLetterDeleted)
	return err
}

// disableFailing disables the subscriptions whose attempts have only failed for longer than after.
func (s *Server) disableFailing(ctx context.Context, after time.Duration) (int, error) {
	disabled, err := s.Subscriptions.DisableFailing(ctx, after)
	for _, d := range disabled {
		s.log.Warn("subscription disabled after only failures", "subscription_id", d.ID, "tenant_id", d.TenantID,
			"failing_since", d.FailingSince)
	}
	return len(disabled), err
}
