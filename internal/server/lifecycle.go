package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/service"
)

// The server's lifecycle is one service.Group: the tracing exporter and the three pools (started by New),
// then what Serve starts, stopped in reverse, so that the pools outlive everything that uses them and the
// exporter outlives every span.

// Start listens on the configured address and starts the workers. When it fails, the server is stopped
// as by Stop (see Serve).
func (s *Server) Start(ctx context.Context) error {
	return s.serve(ctx, &httpServer{name: "listen", addr: s.Config.Addr})
}

// Serve serves on ln and starts the workers. When a step fails, Serve undoes every one before it and
// returns the server stopped as by Stop (listeners closed, ln too, background services stopped, pools
// closed), so a failed start leaves nothing running; Stop may still be called and does nothing more.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, &httpServer{ln: ln})
}

func (s *Server) serve(ctx context.Context, main *httpServer) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	main.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	main.ended = func(err error) {
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.serveErr <- err
	}
	s.serving = s.running(main)
	s.lifecycle.Add("serving", s.serving)
	return s.lifecycle.Start(ctx)
}

// running is what Serve starts: the listeners, the token listener and, unless Options.WithoutBackground,
// the background services.
func (s *Server) running(main *httpServer) together {
	t := together{{Name: "http", Service: main}}
	if s.metrics != nil {
		t = append(t, service.Named{Name: "metrics", Service: s.metrics})
	}
	// Before requests need it; until it listens every token is looked up.
	t = append(t, service.Named{Name: "token listener", Service: funcs{
		start: func(ctx context.Context) error { s.Tenants.StartListening(ctx); return nil },
		stop:  func(ctx context.Context) error { return within(ctx, s.Tenants.StopListening) },
	}})
	if s.withoutBackground {
		return t
	}
	return append(t,
		service.Named{Name: "replay runner", Service: s.ReplayRunner},
		service.Named{Name: "event catalogue", Service: s.Catalogue},
		// Its Stop gives leadership up at once, so another process takes over within seconds.
		service.Named{Name: "maintenance", Service: s.maintainer},
		service.Named{Name: "worker", Service: s.worker},
	)
}

// Stop shuts down within ctx: it stops accepting requests and finishes the ones running, and meanwhile
// stops the worker (no new claims; in-flight attempts finish or are released), the maintenance leader and
// the replay runner, then closes the pools. Each step gives up when ctx ends, so a database that stopped
// answering cannot hold the process: what was not recorded keeps its lease and is rescued by another
// process (or this one's next start) when the lease runs out. Stop after Stop does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	return s.lifecycle.Stop(ctx)
}

// Err reports a failure of the HTTP server after Serve.
func (s *Server) Err() <-chan error { return s.serveErr }

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.Config.Addr }

// MetricsAddr is the address /metrics is served on when HOOKLINE_METRICS_ADDR is set (the port chosen
// when it ends in :0), after Serve; "" otherwise.
func (s *Server) MetricsAddr() string {
	if s.metrics == nil || s.metrics.ln == nil {
		return ""
	}
	return s.metrics.ln.Addr().String()
}

// together is services started in order and stopped all at once. The running services stop together so
// that each has the whole shutdown deadline and none waits for another: requests finish while the worker
// finishes its attempts, and from the first moment neither new requests nor new claims are taken.
type together []service.Named

// failedStartStop bounds the stop after a failed start: what had started has had no work to finish yet.
const failedStartStop = 10 * time.Second

// Start starts each service in order. When one fails, those started before it are stopped, not under
// ctx: a start that failed because ctx ended must still stop what it started.
func (t together) Start(ctx context.Context) error {
	for i, m := range t {
		if err := m.Start(ctx); err != nil {
			err = fmt.Errorf("start %s: %w", m.Name, err)
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failedStartStop)
			defer cancel()
			if serr := t[:i].Stop(sctx); serr != nil {
				err = errors.Join(err, fmt.Errorf("stopping after the failed start: %w", serr))
			}
			return err
		}
	}
	return nil
}

// Stop stops every service at once, each within ctx, and joins their errors.
func (t together) Stop(ctx context.Context) error {
	errs := make([]error, len(t))
	var wg sync.WaitGroup
	for i, m := range t {
		wg.Go(func() {
			if err := m.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stop %s: %w", m.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// funcs is a service made of a start and a stop function, for the services of other packages whose own
// methods have another shape.
type funcs struct{ start, stop func(context.Context) error }

func (f funcs) Start(ctx context.Context) error { return f.start(ctx) }
func (f funcs) Stop(ctx context.Context) error  { return f.stop(ctx) }

// httpServer is an http.Server as a service: Start listens on addr (unless given ln) and serves in the
// background, telling ended how Serve ended; Stop lets running requests finish within ctx, then closes
// their connections, which cancels their contexts and so the database calls they wait on.
type httpServer struct {
	srv *http.Server
	// name labels a failed listen; addr is listened on when ln is nil.
	name, addr string
	ln         net.Listener
	ended      func(error)
}

func (h *httpServer) Start(context.Context) error {
	if h.ln == nil {
		ln, err := net.Listen("tcp", h.addr)
		if err != nil {
			return fmt.Errorf("%s: %w", h.name, err)
		}
		h.ln = ln
	}
	go func() { h.ended(h.srv.Serve(h.ln)) }()
	return nil
}

func (h *httpServer) Stop(ctx context.Context) error {
	err := h.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("http shutdown: %w", err), h.srv.Close())
	}
	// http.Server.Serve closes its listener when it returns, but its goroutine may not have run yet:
	// closed here, the address no longer answers once Stop has returned.
	_ = h.ln.Close()
	return err
}

// within runs stop and waits for it until ctx ends.
func within(ctx context.Context, stop func()) error {
	done := make(chan struct{})
	go func() { defer close(done); stop() }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
