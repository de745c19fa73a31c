package replays

import "go.opentelemetry.io/otel/attribute"

// Span names and attributes of replays (docs/configuration.md, "Tracing"); the ones shared with the
// delivery engine are delivery.Attr*.
const (
	spanReplayStart = "replay.start"
	spanReplayChunk = "replay.chunk"

	attrReplayID   = attribute.Key("hookline.replay_id")
	attrReplayKind = attribute.Key("hookline.replay.kind")
)
