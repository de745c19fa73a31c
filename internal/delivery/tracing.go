package delivery

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookline/hookline/internal/fault"
	"github.com/hookline/hookline/internal/tracing"
)

// Span names and attributes of the delivery engine (docs/configuration.md, "Tracing").
const (
	spanAttempt     = "delivery.attempt"
	spanReplayStart = "replay.start"
	spanReplayChunk = "replay.chunk"

	attrTenantID       = attribute.Key("hookline.tenant_id")
	attrSubscriptionID = attribute.Key("hookline.subscription_id")
	attrDeliveryID     = attribute.Key("hookline.delivery_id")
	attrEventID        = attribute.Key("hookline.event_id")
	attrEventType      = attribute.Key("hookline.event_type")
	attrAttempt        = attribute.Key("hookline.attempt")
	attrOutcome        = attribute.Key("hookline.outcome")
	attrDurationMS     = attribute.Key("hookline.duration_ms")
	attrReplayID       = attribute.Key("hookline.replay_id")
	attrReplayKind     = attribute.Key("hookline.replay.kind")
	attrStatusCode     = attribute.Key("http.response.status_code")
)

// traceparentOf is span's context as a stored traceparent.
func traceparentOf(span trace.Span) string {
	return tracing.Traceparent(trace.ContextWithSpanContext(context.Background(), span.SpanContext()))
}

// spanFailed marks a span as failed by err: a refusal (bad input, a limit) says its code, anything else
// is recorded as an error.
func spanFailed(span trace.Span, err error) {
	if fe := fault.As(err); fe != nil {
		span.SetStatus(codes.Error, string(fe.Code))
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, "internal error")
}
