package delivery

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/tracing"
)

// Span names and attributes of the delivery engine (docs/configuration.md, "Tracing"). The publisher and
// the replays share the exported ones; the replays' own are in internal/replays.
const (
	spanAttempt = "delivery.attempt"

	AttrTenantID       = attribute.Key("hookline.tenant_id")
	attrSubscriptionID = attribute.Key("hookline.subscription_id")
	attrDeliveryID     = attribute.Key("hookline.delivery_id")
	AttrEventID        = attribute.Key("hookline.event_id")
	AttrEventType      = attribute.Key("hookline.event_type")
	attrAttempt        = attribute.Key("hookline.attempt")
	attrOutcome        = attribute.Key("hookline.outcome")
	attrDurationMS     = attribute.Key("hookline.duration_ms")
	attrStatusCode     = attribute.Key("http.response.status_code")
)

// TraceparentOf is span's context as a stored traceparent.
func TraceparentOf(span trace.Span) string {
	return tracing.Traceparent(trace.ContextWithSpanContext(context.Background(), span.SpanContext()))
}

// SpanFailed marks a span as failed by err: a refusal (bad input, a limit) says its code, anything else
// is recorded as an error.
func SpanFailed(span trace.Span, err error) {
	if fe := fault.As(err); fe != nil {
		span.SetStatus(codes.Error, string(fe.Code))
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, "internal error")
}
