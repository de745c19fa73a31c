-- name: MatchingSubscriptions :many
-- The live subscriptions of the tenant that want this event type, in creation order: an event gets one
-- delivery each. Paused subscriptions get theirs too (they wait); disabled and deleted ones get none.
SELECT s.id FROM subscriptions s
WHERE s.tenant_id = sqlc.arg('tenant_id') AND s.deleted_at IS NULL AND s.state <> 'disabled'
  AND (cardinality(s.event_types) = 0 OR sqlc.arg('event_type')::text = ANY (s.event_types))
  AND (sqlc.narg('only_subscription_id')::uuid IS NULL OR s.id = sqlc.narg('only_subscription_id')::uuid)
ORDER BY s.created_at, s.id;

-- name: StoreEvent :one
-- Stores an event, its publish answer and its deliveries in one statement (atomic without BEGIN/COMMIT:
-- one round trip). ON CONFLICT makes a publish reusing an Idempotency-Key insert nothing, event or
-- deliveries, and return no row; the caller then reads the first answer.
WITH ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, idempotency_key, request_hash, response, created_at)
    VALUES (sqlc.arg('id'), sqlc.arg('tenant_id'), sqlc.arg('event_type'), sqlc.arg('body'), sqlc.narg('idempotency_key'),
            sqlc.arg('request_hash'), sqlc.arg('response'), sqlc.arg('now')::timestamptz)
    ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id
), fanned AS (
    INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at,
                                    created_at, updated_at)
    SELECT d.id, sqlc.arg('tenant_id'), ev.id, d.subscription_id, sqlc.arg('event_type')::text, sqlc.arg('now')::timestamptz,
           sqlc.arg('give_up_at')::timestamptz, sqlc.arg('now')::timestamptz, sqlc.arg('now')::timestamptz
    FROM ev, (SELECT unnest(sqlc.arg('delivery_ids')::uuid[]) AS id, unnest(sqlc.arg('subscription_ids')::uuid[]) AS subscription_id) d
    RETURNING id
)
SELECT ev.id, (SELECT count(*) FROM fanned)::int AS deliveries FROM ev;

-- name: GetEventByIdempotencyKey :one
SELECT * FROM events WHERE tenant_id = @tenant_id AND idempotency_key = @idempotency_key;

-- name: GetEvent :one
SELECT * FROM events WHERE id = @id AND tenant_id = @tenant_id;

-- name: NotifyDeliveriesReady :exec
-- Wakes idle workers; sent at commit (or after it), so they never look before the rows are visible.
SELECT pg_notify('hookline_deliveries', '');
