-- name: PublishEvent :many
-- Stores an event and one pending delivery per live subscription of the tenant that wants its type, in one
-- statement (atomic without BEGIN/COMMIT, and one round trip: a publish used to read the subscriptions
-- first). Paused subscriptions get their delivery too (it waits); disabled and deleted ones get none.
-- The answer is one row per delivery in subscription creation order, or a single row of nil uuids when
-- nothing matched. ON CONFLICT makes a publish reusing an Idempotency-Key insert nothing, event or
-- deliveries, and return no row at all; the caller then reads the first answer (PublishedDeliveries).
WITH matching AS (
    SELECT s.id, s.created_at FROM subscriptions s
    WHERE s.tenant_id = sqlc.arg('tenant_id') AND s.deleted_at IS NULL AND s.state <> 'disabled'
      AND (cardinality(s.event_types) = 0 OR sqlc.arg('event_type')::text = ANY (s.event_types))
      AND (sqlc.narg('only_subscription_id')::uuid IS NULL OR s.id = sqlc.narg('only_subscription_id')::uuid)
), ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, idempotency_key, request_hash, created_at)
    VALUES (sqlc.arg('id'), sqlc.arg('tenant_id'), sqlc.arg('event_type'), sqlc.arg('body'), sqlc.narg('idempotency_key'),
            sqlc.arg('request_hash'), sqlc.arg('now')::timestamptz)
    ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id
), fanned AS (
    INSERT INTO webhook_deliveries (tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at,
                                    created_at, updated_at)
    SELECT sqlc.arg('tenant_id'), ev.id, m.id, sqlc.arg('event_type')::text, sqlc.arg('now')::timestamptz,
           sqlc.arg('give_up_at')::timestamptz, sqlc.arg('now')::timestamptz, sqlc.arg('now')::timestamptz
    FROM ev, matching m
    RETURNING id, subscription_id
)
SELECT coalesce(f.id, '00000000-0000-0000-0000-000000000000')::uuid AS delivery_id,
       coalesce(f.subscription_id, '00000000-0000-0000-0000-000000000000')::uuid AS subscription_id
FROM ev LEFT JOIN (fanned f JOIN matching m ON m.id = f.subscription_id) ON true
ORDER BY m.created_at, m.id;

-- name: PublishedDeliveries :many
-- The deliveries a publish created, in the order its answer listed them: the answer to a publish that
-- reuses its Idempotency-Key.
SELECT d.id, d.subscription_id FROM webhook_deliveries d
JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.event_id = @event_id AND d.tenant_id = @tenant_id
ORDER BY s.created_at, s.id;

-- name: GetEventByIdempotencyKey :one
SELECT * FROM events WHERE tenant_id = @tenant_id AND idempotency_key = @idempotency_key;

-- name: GetEvent :one
SELECT * FROM events WHERE id = @id AND tenant_id = @tenant_id;

-- name: NotifyDeliveriesReady :exec
-- Wakes idle workers; sent at commit (or after it), so they never look before the rows are visible.
SELECT pg_notify('hookline_deliveries', '');
