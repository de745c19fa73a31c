-- name: InsertEvent :one
-- ON CONFLICT makes a concurrent publish with the same Idempotency-Key insert nothing instead of failing.
INSERT INTO events (id, tenant_id, event_type, body, idempotency_key, request_hash, created_at)
VALUES (@id, @tenant_id, @event_type, @body, @idempotency_key, @request_hash, @created_at)
ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id;

-- name: GetEventByIdempotencyKey :one
SELECT * FROM events WHERE tenant_id = @tenant_id AND idempotency_key = @idempotency_key;

-- name: SetEventResponse :exec
UPDATE events SET response = @response WHERE id = @id AND tenant_id = @tenant_id;

-- name: GetEvent :one
SELECT * FROM events WHERE id = @id AND tenant_id = @tenant_id;

-- name: FanOutEvent :many
-- One pending delivery per live subscription of the tenant that wants this event type. Paused
-- subscriptions get theirs too (they wait); disabled and deleted ones get none.
INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at, created_at, updated_at)
SELECT @tenant_id, @event_id, s.id, @event_type::text, @now, @give_up_at, @now, @now
FROM subscriptions s
WHERE s.tenant_id = @tenant_id AND s.deleted_at IS NULL AND s.state <> 'disabled'
  AND (cardinality(s.event_types) = 0 OR @event_type::text = ANY (s.event_types))
  AND (sqlc.narg('only_subscription_id')::uuid IS NULL OR s.id = sqlc.narg('only_subscription_id')::uuid)
ORDER BY s.created_at, s.id
RETURNING id, subscription_id, state;

-- name: NotifyDeliveriesReady :exec
-- Wakes idle workers; sent at commit, so they never look before the rows are visible.
SELECT pg_notify('hookline_deliveries', '');
