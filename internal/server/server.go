// Package server wires Hookline together: database pool, services, HTTP routes and delivery workers.
// cmd/server and the end-to-end tests both build a Server here.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/hookline/hookline/internal/activity"
	"github.com/hookline/hookline/internal/api"
	"github.com/hookline/hookline/internal/brand"
	"github.com/hookline/hookline/internal/catalogue"
	"github.com/hookline/hookline/internal/config"
	"github.com/hookline/hookline/internal/deliveries"
	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/internal/httpx"
	"github.com/hookline/hookline/internal/incidents"
	"github.com/hookline/hookline/internal/maintenance"
	"github.com/hookline/hookline/internal/migrate"
	"github.com/hookline/hookline/internal/notify"
	"github.com/hookline/hookline/internal/pgxuuid"
	"github.com/hookline/hookline/internal/portal"
	"github.com/hookline/hookline/internal/publish"
	"github.com/hookline/hookline/internal/replays"
	"github.com/hookline/hookline/internal/retention"
	"github.com/hookline/hookline/internal/secretbox"
	"github.com/hookline/hookline/internal/smtpurl"
	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/internal/tenants"
	"github.com/hookline/hookline/internal/tracing"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
}

// Server is one Hookline process.
type Server struct {
	Config config.Config
	Log    *slog.Logger
	// Pool serves the API and dashboard (plans per call), EnginePool the workers (cached plans) and
	// GenericPool the publisher and the completions of small batches (generic plans).
	Pool          *pgxpool.Pool
	EnginePool    *pgxpool.Pool
	GenericPool   *pgxpool.Pool
	Tenants       *tenants.Service
	Subscriptions *subscriptions.Service
	Deliveries    *deliveries.Service
	Replays       *replays.Replays
	ReplayRunner  *replays.ReplayRunner
	Publisher     *publish.Publisher
	Worker        *delivery.Worker
	// Maintainer runs the periodic work (lease rescue, session pruning, retention) on one elected process.
	Maintainer *maintenance.Maintainer
	Activity   *activity.Log
	// Incidents finds failing endpoints and queues what to tell customers and the operator.
	Incidents *incidents.Service
	// Portal makes the customer portal's single-use links and keeps its sessions.
	Portal *portal.Service
	// Catalogue is the event catalogue; its compiled schemas check every publish.
	Catalogue *catalogue.Service
	// Brand is the platform's name, logo and accent colour (HOOKLINE_BRAND_*).
	Brand     brand.Brand
	Retention *retention.Sweeper
	Metrics   *delivery.Metrics
	// Keys open the signing secrets and custom header values stored sealed (HOOKLINE_SECRET_KEY); nil
	// without a key. Any other worker built on this server needs their Open.
	Keys   *secretbox.Box
	Policy delivery.RetryPolicy
	Now    func() time.Time
	// Tracing is OpenTelemetry tracing, configured by the OTEL_* variables (off when none asks for it).
	Tracing *tracing.Tracing

	registry *prometheus.Registry
	handler  http.Handler
	httpSrv  *http.Server
	serveErr chan error
	// metricsSrv serves /metrics on HOOKLINE_METRICS_ADDR when set; metricsLn is its listener.
	metricsSrv *http.Server
	metricsLn  net.Listener
	stopOnce   sync.Once
}

// PlanMode says how a pool's statements are planned.
type PlanMode int

const (
	// PlanPerCall plans every statement with its actual parameters (plan_cache_mode = force_custom_plan).
	// The list queries need it: their optional filters ("$1 IS NULL OR subscription_id = $1") only fold
	// into the right index scan when planned with the values, and a generic plan cached while a table was
	// small could stay a sequential scan once it holds millions of rows.
	PlanPerCall PlanMode = iota
	// PlanCached lets PostgreSQL cache plans (its default). The engine's statements have one good plan
	// whatever their parameters (the claim is an ordered scan of the pending index even as a generic plan
	// made on an empty table: TestClaimGenericPlanUsesPendingIndex), and planning them on every call cost
	// about a third of the drain rate.
	PlanCached
	// PlanGeneric always uses the generic plan (plan_cache_mode = force_generic_plan). For the publish:
	// left to choose, PostgreSQL planned its statement afresh on every call (0.65 ms, longer than it takes
	// to run), and the generic plan is the same one: the batch's arrays are joined to one tenant's
	// subscriptions through their index whatever their length.
	PlanGeneric
)

// Connections per process: Pool's and EnginePool's 16 each, GenericPool's, and three sessions of their own
// (the worker's LISTEN, the token revocations' LISTEN and the maintenance leader's advisory lock). The
// docs/operations.md and docs/scaling.md size max_connections by MaxConns.
const (
	PoolConns    = 16 // Pool's and EnginePool's, each
	GenericConns = publish.PublishConns + 2
	MaxConns     = 2*PoolConns + GenericConns + 3
)

// DefaultConnectTimeout bounds each connection attempt to each host of DATABASE_URL when it sets no
// connect_timeout. Without a bound, a host that stopped answering without refusing (a crashed machine, a
// network partition) holds a connection attempt for as long as TCP keeps trying, minutes, and with several
// hosts the ones after it are never tried: the new primary of a failover would go unfound.
const DefaultConnectTimeout = 5 * time.Second

// Connect opens a pool with the given planning mode. The maintenance leader and the worker's listener
// open their own connections with the pool's settings, so they share its hosts and timeouts.
func Connect(ctx context.Context, url string, maxConns int32, mode PlanMode) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	switch mode {
	case PlanPerCall:
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	case PlanGeneric:
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "hookline"
	cfg.AfterConnect = pgxuuid.AfterConnect // uuids in binary, not through their string forms
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// New migrates the database, connects and builds every service. It starts nothing.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) (_ *Server, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	box, err := secretbox.Parse(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("HOOKLINE_SECRET_KEY: %w", err)
	}
	if err := migrate.Up(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	traces := tracing.With(o.TracerProvider)
	if o.TracerProvider == nil {
		if traces, err = tracing.FromEnv(ctx); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil { // a server that never started exports nothing: stop the exporter's goroutines
			_ = traces.Shutdown(ctx)
		}
	}()
	pool, err := Connect(ctx, cfg.DatabaseURL, PoolConns, PlanPerCall)
	if err != nil {
		return nil, err
	}
	enginePool, err := Connect(ctx, cfg.DatabaseURL, PoolConns, PlanCached)
	if err != nil {
		pool.Close()
		return nil, err
	}
	// The publisher's statements and its NOTIFYs (publish.PublishConns at a time), one more for an
	// Idempotency-Key's first answer, and one for the worker's completer (WorkerOptions.GenericPool).
	genericPool, err := Connect(ctx, cfg.DatabaseURL, GenericConns, PlanGeneric)
	if err != nil {
		pool.Close()
		enginePool.Close()
		return nil, err
	}
	s := &Server{Config: cfg, Log: log, Pool: pool, EnginePool: enginePool, GenericPool: genericPool, Now: o.Now, Keys: box, registry: o.Registry, Tracing: traces}
	s.Policy = delivery.RetryPolicy{Base: cfg.RetryBase, MaxDelay: cfg.RetryMaxDelay, MaxAttempts: cfg.RetryMaxAttempts, Window: cfg.RetryWindow}
	if s.Brand, err = brand.Load(cfg.BrandName, cfg.BrandLogo, cfg.BrandColor); err != nil {
		s.closePools()
		return nil, err
	}
	s.Tenants = tenants.NewService(pool, cfg.AdminToken)
	s.Tenants.Log = log.With("component", "tokens")
	s.Portal = portal.New(pool, PublicURL(cfg))
	s.Portal.Now = o.Now
	s.Subscriptions = subscriptions.NewService(pool, o.Now, cfg.AllowPrivateNetworks)
	s.Subscriptions.AllowAddrs(o.AllowAddrs...)
	s.Subscriptions.LimitPerTenant(cfg.MaxSubscriptions)
	s.Subscriptions.UseKeys(box)
	if err := sealAtRest(ctx, pool, box, log); err != nil {
		s.closePools()
		return nil, err
	}
	s.Deliveries = deliveries.NewService(pool, s.Policy, o.Now, cfg.MaxManualRetries, cfg.ResendPerMinute)
	s.Replays = replays.NewReplays(pool, s.Policy, o.Now)
	s.ReplayRunner = replays.NewReplayRunner(s.Replays, log.With("component", "replays"))
	s.Replays.Started = s.ReplayRunner.Wake
	s.Replays.Tracer = traces.Tracer()
	s.Publisher = publish.NewPublisher(genericPool, s.Policy, o.Now)
	s.Publisher.Tracer = traces.Tracer()
	s.Metrics = delivery.NewMetrics(o.Registry, delivery.QueueStatsReader(pool, o.Now, log.With("component", "metrics")))
	s.Publisher.Metrics = s.Metrics
	s.Catalogue = catalogue.New(pool, catalogue.Options{RegisteredOnly: cfg.EventTypes == config.EventTypesRegistered,
		Now: o.Now, Log: log.With("component", "catalogue")})
	if err := s.Catalogue.Load(ctx); err != nil {
		s.closePools()
		return nil, err
	}
	s.Publisher.CheckEvent = s.Catalogue.CheckEvent
	if s.Catalogue.RegisteredOnly() {
		s.Subscriptions.KnownEventType = s.Catalogue.Known
	}
	s.Subscriptions.OnDeadLettered = func(ctx context.Context, subID uuid.UUID, n int64) {
		s.Metrics.DeadLettered(delivery.Failed, n)
		httpx.Logger(ctx).Warn("subscription deleted: its queued deliveries were dead-lettered",
			"subscription_id", subID, "deliveries", n, "reason", delivery.ReasonSubscriptionDeleted)
	}
	sender := delivery.NewSender(delivery.SenderOptions{Timeout: cfg.AttemptTimeout, AllowPrivate: cfg.AllowPrivateNetworks, AllowAddrs: o.AllowAddrs})
	s.Worker = delivery.NewWorker(enginePool, sender, s.Policy, delivery.WorkerOptions{
		Concurrency: cfg.Workers, AttemptTimeout: cfg.AttemptTimeout, Now: o.Now,
		EndpointConcurrency: cfg.EndpointConcurrency,
		Breaker:             delivery.Breaker{Threshold: cfg.BreakerThreshold, ProbeInterval: cfg.BreakerProbeInterval, ProbeMax: cfg.RetryMaxDelay},
		Logger:              log.With("component", "worker"), Metrics: s.Metrics, Open: s.Keys.Open,
		Tracer: traces.Tracer(), GenericPool: genericPool,
	})
	s.Publisher.Local = s.Worker
	s.Maintainer = maintenance.New(maintenance.Options{
		ConnConfig: enginePool.Config().ConnConfig, Logger: log.With("component", "maintenance"),
	})
	s.Maintainer.Register(maintenance.Task{Name: "rescue", Interval: delivery.RescueInterval, Run: func(ctx context.Context) error {
		if _, err := s.Worker.RescueExpired(ctx); err != nil {
			return err
		}
		_, err := s.Worker.DeadLetterDeleted(ctx)
		return err
	}})
	mlog := log.With("component", "maintenance")
	s.Maintainer.Register(maintenance.Prune("prune_sessions", maintenance.SessionPruneInterval, s.Tenants.PruneSessions, mlog))
	s.Maintainer.Register(maintenance.Prune("prune_login_throttle", maintenance.SessionPruneInterval,
		tenants.NewLoginThrottle(pool, o.Now, 0, 0, 0).Prune, mlog))
	s.Maintainer.Register(maintenance.Prune("prune_portal_links", maintenance.SessionPruneInterval, s.Portal.Prune, mlog))
	var operator *incidents.Operator
	if cfg.OperatorWebhookURL != "" {
		if operator, err = incidents.EnsureOperator(ctx, pool, s.Subscriptions, s.Publisher, cfg.OperatorWebhookURL, cfg.OperatorWebhookSecret,
			log.With("component", "incidents")); err != nil {
			s.closePools()
			return nil, err
		}
	}
	s.Incidents = incidents.New(pool, incidents.Options{After: cfg.IncidentAfter, PublicURL: PublicURL(cfg), Now: o.Now,
		Log: log.With("component", "incidents"), Operator: operator})
	s.Maintainer.Register(maintenance.Task{Name: "incidents", Interval: maintenance.AutoDisableInterval, Run: s.Incidents.Check})
	// Customer alert emails: their own task, so a slow mail server never holds up the incident checks.
	smtp, err := smtpurl.Configured(cfg.SMTPURL)
	if err != nil {
		s.closePools()
		return nil, fmt.Errorf("HOOKLINE_SMTP_URL: %w", err)
	}
	s.Maintainer.Register(notify.New(pool, notify.Options{SMTP: smtp, Brand: s.Brand.Name, Now: o.Now, Log: log.With("component", "notify")}).Task())
	if cfg.AutoDisableAfter > 0 {
		s.Maintainer.Register(maintenance.AutoDisable(func(ctx context.Context, after time.Duration) (int, error) {
			disabled, err := s.Subscriptions.DisableFailing(ctx, after)
			for _, d := range disabled {
				log.Warn("subscription disabled after only failures", "subscription_id", d.ID, "tenant_id", d.TenantID,
					"failing_since", d.FailingSince)
			}
			return len(disabled), err
		}, cfg.AutoDisableAfter, log.With("component", "maintenance")))
	}
	s.Activity = activity.NewLog(pool)
	if cfg.RetentionActivity > 0 {
		s.Maintainer.Register(maintenance.Prune("prune_activity", maintenance.SessionPruneInterval, func(ctx context.Context) (int64, error) {
			return s.Activity.Prune(ctx, o.Now().Add(-cfg.RetentionActivity), 1000)
		}, mlog))
	}
	s.Retention = retention.New(pool, retention.Options{
		Delivered: cfg.RetentionDelivered, Dead: cfg.RetentionDead, ArchiveDir: cfg.ArchiveDir, Now: o.Now,
		Rate: cfg.RetentionRate, Interval: cfg.RetentionInterval,
		Logger: log.With("component", "retention"), Metrics: retention.NewMetrics(o.Registry),
	})
	// max: a Config built by hand (tests) may leave the interval zero.
	s.Maintainer.Register(maintenance.Task{Name: "retention", Interval: max(cfg.RetentionInterval, time.Second), Run: func(ctx context.Context) error {
		_, err := s.Retention.Sweep(ctx)
		return err
	}})
	if cfg.AdminEmail != "" || cfg.AdminPassword != "" {
		if err := s.Tenants.EnsureAdminUser(ctx, cfg.AdminEmail, cfg.AdminPassword); err != nil {
			s.closePools()
			return nil, fmt.Errorf("HOOKLINE_ADMIN_EMAIL/PASSWORD: %w", err)
		}
	}
	s.handler = s.routes()
	return s, nil
}

// sealAtRest seals the signing secrets and custom header values still stored in plaintext, so configuring
// a key is all it takes to encrypt existing rows; or, without a key, says loudly that nothing is encrypted.
// Every starting process runs it: the updates are compare-and-set, so concurrent starts do not conflict,
// and after the first run it finds nothing to do.
func sealAtRest(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, log *slog.Logger) error {
	if !box.Enabled() {
		log.Warn("HOOKLINE_SECRET_KEY is empty: signing secrets and custom headers are stored UNENCRYPTED in the database; " +
			"set it to base64 of 32 random bytes (openssl rand -base64 32) to encrypt them")
	} else {
		n, err := subscriptions.SealStored(ctx, pool, box, subscriptions.SealPlaintext)
		if err != nil {
			return fmt.Errorf("encrypting stored secrets: %w", err)
		}
		if n.Secrets > 0 || n.Subscriptions > 0 {
			log.Info("encrypted plaintext secrets at rest", "signing_secrets", n.Secrets, "subscriptions_with_headers", n.Subscriptions, "key_id", box.KeyIDs()[0])
		}
	}
	// A key dropped too early (or a lost one) is not fatal, as other subscriptions still deliver, but it
	// must not go unnoticed.
	bad, err := subscriptions.Unreadable(ctx, pool, box)
	if err != nil {
		return err
	}
	if bad.Secrets > 0 || bad.Subscriptions > 0 {
		log.Error("stored secrets are encrypted under a key missing from HOOKLINE_SECRET_KEY: their deliveries wait until it is added back",
			"signing_secrets", bad.Secrets, "subscriptions_with_headers", bad.Subscriptions, "configured_key_ids", box.KeyIDs())
	}
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

// Handler serves everything: API, dashboard, health and metrics.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(httpx.Middleware(s.Log, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			api.RenderPanic(w, r)
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
	}))
	r.Use(baseSecurityHeaders)
	// Inside the logging middleware, which recovers panics: the span still ends (as a 500) when one passes.
	r.Use(s.Tracing.Middleware)
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain")
		if err := s.Pool.Ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("database unreachable\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if s.Config.MetricsAddr == "" {
		r.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	} else {
		// On its own (internal) address only: the public one must not tell anyone the process's figures.
		r.Handle("/metrics", http.NotFoundHandler())
	}
	a := &api.API{Tenants: s.Tenants, Subscriptions: s.Subscriptions, Deliveries: s.Deliveries, Replays: s.Replays, Publisher: s.Publisher, Portal: s.Portal,
		Activity: s.Activity, Catalogue: s.Catalogue,
		Limits: api.NewTokenLimits(s.Config.APIRatePerSecond, s.Config.APIBurst, s.Config.APIRateWait, s.Now)}
	r.Mount("/api/v1", a.Routes())
	s.mountWeb(r)
	return r
}

// baseSecurityHeaders go on every answer (API, health, metrics); the dashboard sets its own, stricter page
// policy on top. JSON and text answers never need to run script, be framed or be sniffed as HTML.
func baseSecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// Start listens on the configured address and starts the workers. When it fails, the server is stopped
// as by Stop (see Serve).
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Config.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("listen: %w", err), s.stopAfterFailedStart(ctx))
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln and starts the workers. When a step fails, Serve undoes every one before it and
// returns the server stopped as by Stop (listeners closed, ln too, background services stopped, pools
// closed), so a failed start leaves nothing running; Stop may still be called and does nothing more.
func (s *Server) Serve(ctx context.Context, ln net.Listener) (err error) {
	defer func() {
		if err != nil {
			// http.Server.Serve closes its listener when it returns, but its goroutine may not have run yet:
			// closed here, neither address answers once Serve has returned.
			_ = ln.Close()
			if s.metricsLn != nil {
				_ = s.metricsLn.Close()
			}
			err = errors.Join(err, s.stopAfterFailedStart(ctx))
		}
	}()
	s.httpSrv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn),
	}
	s.serveErr = make(chan error, 2)
	if s.Config.MetricsAddr != "" {
		mln, err := net.Listen("tcp", s.Config.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listen on HOOKLINE_METRICS_ADDR: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
		// Go's profiles, for operators diagnosing CPU or memory: only here, on the address that is kept
		// off the public network, never on the main one.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		s.metricsLn = mln
		s.metricsSrv = &http.Server{
			Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			ErrorLog: slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn),
		}
		go func() {
			if err := s.metricsSrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				s.serveErr <- fmt.Errorf("metrics: %w", err)
			}
		}()
	}
	go func() {
		err := s.httpSrv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.serveErr <- err
	}()
	s.Tenants.StartListening(ctx) // before requests need it; until it listens every token is looked up
	if err := s.ReplayRunner.Start(ctx); err != nil {
		return err
	}
	if err := s.Catalogue.Start(ctx); err != nil {
		return err
	}
	if err := s.Maintainer.Start(ctx); err != nil {
		return err
	}
	return s.Worker.Start(ctx)
}

// failedStartStop bounds the stop after a failed start: what had started has had no work to finish yet.
const failedStartStop = 10 * time.Second

// stopAfterFailedStart stops what a failed Start or Serve started (Stop). Not under ctx: a start that
// failed because ctx ended must still stop what it started.
func (s *Server) stopAfterFailedStart(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failedStartStop)
	defer cancel()
	if err := s.Stop(sctx); err != nil {
		return fmt.Errorf("stopping after the failed start: %w", err)
	}
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.Config.Addr }

// MetricsAddr is the address /metrics is served on when HOOKLINE_METRICS_ADDR is set (the port chosen
// when it ends in :0), after Serve; "" otherwise.
func (s *Server) MetricsAddr() string {
	if s.metricsLn == nil {
		return ""
	}
	return s.metricsLn.Addr().String()
}

// Stop shuts down within ctx: it stops accepting requests and finishes the ones running, and meanwhile
// stops the worker (no new claims; in-flight attempts finish or are released), the maintenance leader and
// the replay runner, then closes the pools. Each step gives up when ctx ends, so a database that stopped
// answering cannot hold the process: what was not recorded keeps its lease and is rescued by another
// process (or this one's next start) when the lease runs out.
func (s *Server) Stop(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		var mu sync.Mutex
		var wg sync.WaitGroup
		step := func(f func() error) {
			wg.Go(func() {
				if e := f(); e != nil {
					mu.Lock()
					err = errors.Join(err, e)
					mu.Unlock()
				}
			})
		}
		if s.httpSrv != nil {
			step(func() error { return shutdownHTTP(ctx, s.httpSrv) })
		}
		if s.metricsSrv != nil {
			step(func() error { return shutdownHTTP(ctx, s.metricsSrv) })
		}
		step(func() error { return s.ReplayRunner.Stop(ctx) })
		step(func() error { return within(ctx, "event catalogue", s.Catalogue.Stop) })
		step(func() error { return within(ctx, "token listener", s.Tenants.StopListening) })
		step(func() error { return s.Maintainer.Stop(ctx) }) // gives leadership up at once, so another process takes over within seconds
		step(func() error { return s.Worker.Stop(ctx) })
		wg.Wait()
		// Close waits for every borrowed connection; a request or task still stuck on the database after
		// ctx must not hold the exit.
		err = errors.Join(err, within(ctx, "closing the pools", s.closePools))
		// Last, once the requests and attempts have ended their spans: exports what is still buffered.
		err = errors.Join(err, s.Tracing.Shutdown(ctx))
	})
	return err
}

// shutdownHTTP lets running requests finish within ctx, then closes their connections, which cancels
// their contexts and so the database calls they wait on.
func shutdownHTTP(ctx context.Context, srv *http.Server) error {
	err := srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("http shutdown: %w", err), srv.Close())
	}
	return err
}

// within runs stop and waits for it until ctx ends.
func within(ctx context.Context, what string, stop func()) error {
	done := make(chan struct{})
	go func() { defer close(done); stop() }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// Err reports a failure of the HTTP server after Serve.
func (s *Server) Err() <-chan error { return s.serveErr }

func (s *Server) closePools() {
	s.Pool.Close()
	s.EnginePool.Close()
	s.GenericPool.Close()
}
