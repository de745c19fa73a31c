package tracing

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Middleware makes a server span of every request, the child of the caller's traceparent when it sent one.
// The span is named after the route's pattern ("POST /api/v1/events", "GET /portal/{token}"), known once
// the router has matched it, and carries the pattern, never the request's path or query: paths hold ids,
// and a portal link's path is its single-use token. Probes and scrapes (/healthz, /readyz, /metrics) get
// no span: every few seconds from every prober, they would bury the traces that matter. When tracing is
// off it returns next itself, so requests pay nothing.
func (t *Tracing) Middleware(next http.Handler) http.Handler {
	tracer := t.Tracer()
	if tracer == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method)))
		sw := &statusRecorder{ResponseWriter: w}
		panicked := true
		defer func() {
			status := sw.status
			if panicked {
				status = http.StatusInternalServerError // the recovering middleware outside answers so
			} else if status == 0 {
				status = http.StatusOK
			}
			route := ""
			if rc := chi.RouteContext(ctx); rc != nil {
				route = rc.RoutePattern()
			}
			if route != "" {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(attribute.String("http.route", route))
			}
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
		panicked = false
	})
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
