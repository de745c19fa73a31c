-- +goose Up
-- The W3C trace context (a traceparent header value) that a delivery's attempts continue: the publish
-- span that created it, or the replay, recover or manual retry that queued it again. The worker starts
-- each attempt's span under it, so an event's attempts land in the same trace as its publish, however
-- much later and in whichever process they are sent. NULL when tracing was off at the time (the default):
-- nothing is stored and nothing is traced. A replay keeps the context of the request that started it, so
-- its chunks, run later by whichever process holds it, are traced under that request too.
ALTER TABLE webhook_deliveries ADD COLUMN traceparent text;
ALTER TABLE replays ADD COLUMN traceparent text;

-- +goose Down
ALTER TABLE replays DROP COLUMN traceparent;
ALTER TABLE webhook_deliveries DROP COLUMN traceparent;
