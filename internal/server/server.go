// Package server wires Hookline together: database pool, services, HTTP routes and delivery workers.
// cmd/server and the end-to-end tests both build a Server here.
//
// The files go by job: server.go builds the services (New, the composition root), pools.go opens the
// database pools and says how each plans its statements, atrest.go seals stored secrets at start,
// tasks.go registers the maintenance leader's tasks, routes.go and web.go serve HTTP (with the security
// headers), metrics.go is the metrics address's server, and lifecycle.go starts and stops it all as one
// service.Group.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/history"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/maintenance"
	"github.com/hookline/hookline/internal/migrate"
	"github.com/hookline/hookline/internal/polling"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/retention"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/service"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/tracing"
	"github.com/hookline/hookline/internal/web/session"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
)

// Options are what tests (and the demo) may change beyond the configuration.
type Options struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// AllowAddrs are exact ip:port addresses the sender may dial despite the SSRF guard.
	AllowAddrs []string
	// Registry receives the metrics (default a new registry).
	Registry *prometheus.Registry
	// TracerProvider, when set, receives the spans instead of what the OTEL_* variables configure; the
	// caller owns it (tests record spans in memory with one).
	TracerProvider trace.TracerProvider
	// WithoutBackground makes Serve start the HTTP side only (the API, the dashboard, the metrics address
	// and the token revocations' listener), not the background services: the delivery worker, the
	// maintenance leader, the replay runner and the event catalogue's poller. For tests that need none of
	// them, or drive them by hand, on a database other tests share: nothing claims or sweeps their rows.
	WithoutBackground bool
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return o
}

// Server is one Hookline process.
//
// Its exported fields are the services the API and the dashboard are built on, which the end-to-end
// tests of those packages (and servertest's users) drive directly, and what cmd/server hands the demo
// (EnginePool, Keys, Brand). The background services and the server's plumbing are its own.
type Server struct {
	Config config.Config
	// Pool serves the API and dashboard (plans per call); EnginePool the workers (cached plans).
	Pool          *pgxpool.Pool
	EnginePool    *pgxpool.Pool
	Tenants       *tenants.Service
	Subscriptions *subscriptions.Service
	Deliveries    *deliveries.Service
	// Polling serves polling subscriptions' consumers (poll and commit).
	Polling      *polling.Service
	Replays      *replays.Replays
	ReplayRunner *replays.ReplayRunner
	Publisher    *publish.Publisher
	Activity     *activity.Log
	// LoginThrottle counts the dashboard's failed sign-ins (its old rows are pruned by the maintenance leader);
	// Sessions is the dashboard's session store. Both are built once here and given to the dashboard.
	LoginThrottle *tenants.LoginThrottle
	Sessions      *session.Store
	// Incidents finds failing endpoints and queues what to tell customers and the operator.
	Incidents *incidents.Service
	// Portal makes the customer portal's single-use links and keeps its sessions.
	Portal *portal.Service
	// Catalogue is the event catalogue; its compiled schemas check every publish.
	Catalogue *catalogue.Service
	// History makes the delivery history's time partitions ahead and lists them.
	History *history.Partitions
	// Brand is the platform's name, logo and accent colour (HOOKLINE_BRAND_*).
	Brand brand.Brand
	// Keys open the signing secrets and custom header values stored sealed (HOOKLINE_SECRET_KEY); nil
	// without a key. Any other worker built on this server needs their Open.
	Keys   *secretbox.Box
	Policy delivery.RetryPolicy

	log *slog.Logger
	now func() time.Time
	// genericPool serves the publisher and the completions of small batches (generic plans).
	genericPool *pgxpool.Pool
	worker      *delivery.Worker
	// maintainer runs the periodic work (lease rescue, session pruning, retention) on one elected process.
	maintainer *maintenance.Maintainer
	retention  *retention.Sweeper
	// historyMonitor reads what operators see of the history: /admin's card and the webhook_history_* gauges.
	historyMonitor *history.Monitor
	counters       *delivery.Metrics
	// tracing is OpenTelemetry tracing, configured by the OTEL_* variables (off when none asks for it).
	tracing  *tracer
	registry *prometheus.Registry
	handler  http.Handler
	// metrics serves /metrics on HOOKLINE_METRICS_ADDR when set; nil otherwise.
	metrics           *httpServer
	serveErr          chan error
	withoutBackground bool

	lifeMu    sync.Mutex
	lifecycle service.Group
	// serving is what Serve started, in order.
	serving together
}

// New migrates the database, connects and builds every service. It starts nothing in the background;
// when it fails, what it opened is closed.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) (*Server, error) {
	o = o.withDefaults()
	box, err := secretbox.Parse(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("HOOKLINE_SECRET_KEY: %w", err)
	}
	if err := migrate.Up(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	s := &Server{Config: cfg, Keys: box, log: log, now: o.Now, registry: o.Registry,
		withoutBackground: o.WithoutBackground, serveErr: make(chan error, 2)}
	if err := s.open(ctx, o.TracerProvider); err != nil {
		return nil, err
	}
	if err := s.build(ctx, o); err != nil {
		// A server that never started exports nothing: the group stops the exporter and closes the pools.
		return nil, errors.Join(err, s.Stop(ctx))
	}
	return s, nil
}

// open starts the tracing exporter and connects the pools, the lifecycle's first services.
func (s *Server) open(ctx context.Context, tp trace.TracerProvider) error {
	s.tracing = &tracer{provider: tp}
	perCall := &pool{url: s.Config.DatabaseURL, conns: PoolConns, mode: PlanPerCall}
	cached := &pool{url: s.Config.DatabaseURL, conns: PoolConns, mode: PlanCached}
	// The publisher's statements and its NOTIFYs (publish.PublishConns at a time), one more for an
	// Idempotency-Key's first answer, and one for the worker's completer (WorkerOptions.GenericPool).
	generic := &pool{url: s.Config.DatabaseURL, conns: GenericConns, mode: PlanGeneric}
	s.lifecycle.Add("tracing", s.tracing)
	s.lifecycle.Add("pool", perCall)
	s.lifecycle.Add("engine pool", cached)
	s.lifecycle.Add("generic pool", generic)
	if err := s.lifecycle.Start(ctx); err != nil {
		return err
	}
	s.Pool, s.EnginePool, s.genericPool = perCall.Pool, cached.Pool, generic.Pool
	return nil
}

// build makes every service on the open pools, step by step.
func (s *Server) build(ctx context.Context, o Options) (err error) {
	cfg := s.Config
	s.Policy = delivery.RetryPolicy{Base: cfg.RetryBase, MaxDelay: cfg.RetryMaxDelay, MaxAttempts: cfg.RetryMaxAttempts, Window: cfg.RetryWindow}
	if s.Brand, err = brand.Load(cfg.BrandName, cfg.BrandLogo, cfg.BrandColor); err != nil {
		return err
	}
	if err := s.buildAccounts(ctx, o.AllowAddrs); err != nil {
		return err
	}
	if err := s.buildDelivery(o); err != nil {
		return err
	}
	if err := s.buildCatalogue(ctx); err != nil {
		return err
	}
	if err := s.buildIncidents(ctx); err != nil {
		return err
	}
	// Partitions up to three intervals ahead before anything is served: a database left without a leader
	// for days would otherwise refuse this process's first attempts and events.
	s.History = history.New(s.Pool, history.Options{Interval: cfg.PartitionInterval, Now: s.now, Logger: s.log.With("component", "history")})
	if _, err := s.History.Make(ctx); err != nil {
		return err
	}
	s.watchHistory()
	s.Activity = activity.NewLog(s.Pool)
	s.LoginThrottle = tenants.NewLoginThrottle(s.Pool, s.now, 0, 0, 0)
	s.Sessions = session.NewStore(s.Pool)
	s.retention = retention.New(s.Pool, retention.Options{
		Delivered: cfg.RetentionDelivered, Dead: cfg.RetentionDead, ArchiveDir: cfg.ArchiveDir, Now: s.now,
		Rate: cfg.RetentionRate, Interval: cfg.RetentionInterval, PartitionInterval: cfg.PartitionInterval,
		Logger: s.log.With("component", "retention"), Metrics: retention.NewMetrics(s.registry),
	})
	if err := s.buildMaintenance(); err != nil {
		return err
	}
	if cfg.AdminEmail != "" || cfg.AdminPassword != "" {
		if err := s.Tenants.EnsureAdminUser(ctx, cfg.AdminEmail, cfg.AdminPassword); err != nil {
			return fmt.Errorf("HOOKLINE_ADMIN_EMAIL/PASSWORD: %w", err)
		}
	}
	s.metrics = s.metricsServer()
	s.handler = s.routes()
	return nil
}

// buildAccounts makes the tenants, the portal and the subscriptions, and seals the secrets still stored
// in plaintext.
func (s *Server) buildAccounts(ctx context.Context, allowAddrs []string) error {
	cfg := s.Config
	s.Tenants = tenants.NewService(s.Pool, cfg.AdminToken)
	s.Tenants.Log = s.log.With("component", "tokens")
	s.Portal = portal.New(s.Pool, PublicURL(cfg))
	s.Portal.Now = s.now
	s.Subscriptions = subscriptions.NewService(s.Pool, s.now, cfg.AllowPrivateNetworks)
	s.Subscriptions.AllowAddrs(allowAddrs...)
	s.Subscriptions.LimitPerTenant(cfg.MaxSubscriptions)
	s.Subscriptions.UseKeys(s.Keys)
	return sealAtRest(ctx, s.Pool, s.Keys, s.log)
}

// buildDelivery makes the delivery engine: deliveries, replays, the publisher, its metrics and the worker.
func (s *Server) buildDelivery(o Options) error {
	cfg, log, tracer := s.Config, s.log, s.tracing.Tracer()
	s.Deliveries = deliveries.NewService(s.Pool, s.Policy, s.now, cfg.MaxManualRetries, cfg.ResendPerMinute)
	s.Polling = polling.NewService(s.Pool, s.now)
	s.Replays = replays.NewReplays(s.Pool, s.Policy, s.now)
	s.ReplayRunner = replays.NewReplayRunner(s.Replays, log.With("component", "replays"))
	s.Replays.Started = s.ReplayRunner.Wake
	s.Replays.Tracer = tracer
	s.Publisher = publish.NewPublisher(s.genericPool, s.Policy, s.now)
	s.Publisher.Tracer = tracer
	s.counters = delivery.NewMetrics(s.registry, delivery.QueueStatsReader(s.Pool, s.now, log.With("component", "metrics")))
	s.Publisher.Metrics = s.counters
	roots, err := config.SenderRoots(cfg.SenderCAFile)
	if err != nil {
		return err
	}
	sender := delivery.NewSender(delivery.SenderOptions{Timeout: cfg.AttemptTimeout, AllowPrivate: cfg.AllowPrivateNetworks,
		AllowAddrs: o.AllowAddrs, RootCAs: roots})
	s.worker = delivery.NewWorker(s.EnginePool, sender, s.Policy, delivery.WorkerOptions{
		Concurrency: cfg.Workers, AttemptTimeout: cfg.AttemptTimeout, Now: s.now,
		EndpointConcurrency: cfg.EndpointConcurrency,
		Breaker:             delivery.Breaker{Threshold: cfg.BreakerThreshold, ProbeInterval: cfg.BreakerProbeInterval, ProbeMax: cfg.RetryMaxDelay},
		Logger:              log.With("component", "worker"), Metrics: s.counters, Open: s.Keys.Open,
		Tracer: tracer, GenericPool: s.genericPool,
	})
	s.Publisher.Local = s.worker
	s.Subscriptions.OnDeadLettered = func(ctx context.Context, subID uuid.UUID, n int64) {
		s.counters.DeadLettered(delivery.Failed, n)
		httpx.Logger(ctx).Warn("subscription deleted: its queued deliveries were dead-lettered",
			"subscription_id", subID, "deliveries", n, "reason", delivery.ReasonSubscriptionDeleted)
	}
	return nil
}

// buildCatalogue loads the event catalogue, whose schemas check every publish (and, with
// HOOKLINE_EVENT_TYPES=registered, the event types subscriptions name).
func (s *Server) buildCatalogue(ctx context.Context) error {
	s.Catalogue = catalogue.New(s.Pool, catalogue.Options{RegisteredOnly: s.Config.EventTypes == config.EventTypesRegistered,
		Now: s.now, Log: s.log.With("component", "catalogue")})
	if err := s.Catalogue.Load(ctx); err != nil {
		return err
	}
	s.Publisher.CheckEvent = s.Catalogue.CheckEvent
	if s.Catalogue.RegisteredOnly() {
		s.Subscriptions.KnownEventType = s.Catalogue.Known
	}
	return nil
}

// buildIncidents makes the incident checks, with the operator's endpoint when one is configured.
func (s *Server) buildIncidents(ctx context.Context) (err error) {
	cfg, log := s.Config, s.log.With("component", "incidents")
	var operator *incidents.Operator
	if cfg.OperatorWebhookURL != "" {
		if operator, err = incidents.EnsureOperator(ctx, s.Pool, s.Subscriptions, s.Publisher, cfg.OperatorWebhookURL, cfg.OperatorWebhookSecret, log); err != nil {
			return err
		}
	}
	s.Incidents = incidents.New(s.Pool, incidents.Options{After: cfg.IncidentAfter, PublicURL: PublicURL(cfg), Now: s.now,
		Log: log, Operator: operator})
	return nil
}

// PublicURL is the base of links in messages: HOOKLINE_PUBLIC_URL, else http:// and the listen address
// (localhost for a wildcard host).
func PublicURL(cfg config.Config) string {
	if cfg.PublicURL != "" {
		return strings.TrimRight(cfg.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return "http://" + cfg.Addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// tracer is the tracing exporter as a service: Start makes it (from Options.TracerProvider, else from the
// OTEL_* variables), Stop exports what is still buffered. It is the lifecycle's first service, so the
// last stopped, once the requests and attempts have ended their spans.
type tracer struct {
	provider trace.TracerProvider
	*tracing.Tracing
}

func (t *tracer) Start(ctx context.Context) (err error) {
	if t.provider != nil {
		t.Tracing = tracing.With(t.provider)
		return nil
	}
	t.Tracing, err = tracing.FromEnv(ctx)
	return err
}

func (t *tracer) Stop(ctx context.Context) error { return t.Shutdown(ctx) }
