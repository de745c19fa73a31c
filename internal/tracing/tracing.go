// Package tracing is Hookline's OpenTelemetry tracing: a provider configured only by the standard OTEL_*
// variables (off, a no-op, when none asks for an exporter), the HTTP request spans, and the trace context
// that a delivery keeps between its publish and its attempts (a W3C traceparent value stored with the row).
//
// Off is the default and costs next to nothing: Tracer returns nil, and every instrumented place checks
// for nil before doing any tracing work, so the delivery engine's hot path allocates nothing for it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of every Hookline span.
const Scope = "github.com/hookline/hookline"

// DefaultServiceName is service.name when OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names none.
const DefaultServiceName = "hookline"

// Tracing is the process's tracing: on with a provider, or off.
type Tracing struct {
	tracer trace.Tracer // nil when off
	// shutdown flushes and stops a provider this package made; nil for one the caller owns, or when off.
	shutdown func(context.Context) error
}

// Off is tracing switched off.
func Off() *Tracing { return &Tracing{} }

// With traces to tp, which the caller owns (and shuts down): tests' in-memory recorders. A nil tp is off.
func With(tp trace.TracerProvider) *Tracing {
	if tp == nil {
		return Off()
	}
	return &Tracing{tracer: tp.Tracer(Scope)}
}

// Enabled reports whether the standard variables ask for traces to be exported:
// OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none, turn tracing off; otherwise any of
// OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turns it on. With
// none of them set it is off: unlike the SDK's own default (an OTLP exporter to localhost), a Hookline
// that nobody configured for tracing sends nothing anywhere.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exporters != "" {
		return !strings.EqualFold(exporters, "none")
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != "" ||
		strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) != ""
}

// FromEnv sets tracing up from the OTEL_* variables (see Enabled): the exporter they choose
// (OTEL_TRACES_EXPORTER, default otlp; OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or grpc, and the
// endpoint, headers and timeout variables), batched (OTEL_BSP_*), the sampler of OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on), and the resource of OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES (service.name defaults to hookline). Shutdown flushes it.
func FromEnv(ctx context.Context) (*Tracing, error) {
	if !Enabled(os.Getenv) {
		return Off(), nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_* trace exporter: %w", err)
	}
	// Later detectors win: the variables override the default name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// No sampler option: the provider takes OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG itself.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tracer: tp.Tracer(Scope), shutdown: tp.Shutdown}, nil
}

// Tracer is the tracer to start spans with, or nil when tracing is off.
func (t *Tracing) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// On reports whether spans are made.
func (t *Tracing) On() bool { return t.Tracer() != nil }

// Shutdown exports the spans still buffered and stops the provider, within ctx. It does nothing when
// tracing is off or the provider is the caller's.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("tracing shutdown: %w", err)
	}
	return nil
}

// propagator is W3C Trace Context, the only propagation Hookline reads or stores.
var propagator = propagation.TraceContext{}

// Traceparent is the W3C traceparent value of ctx's span, or "" when it has none.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// traceparentCarrier carries one stored traceparent value to the propagator.
type traceparentCarrier string

func (c traceparentCarrier) Get(key string) string {
	if key == "traceparent" {
		return string(c)
	}
	return ""
}
func (traceparentCarrier) Set(string, string) {}
func (traceparentCarrier) Keys() []string     { return []string{"traceparent"} }

// ContinueFrom returns ctx with the stored traceparent as its remote parent span; ctx itself when the value
// is empty or malformed (the span then starts a trace of its own).
func ContinueFrom(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, traceparentCarrier(traceparent))
}
