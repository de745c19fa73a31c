-- Retention (internal/retention): old delivered and dead deliveries are deleted in bounded batches found by
-- the partial indexes webhook_deliveries_delivered_at_idx and webhook_deliveries_dead_at_idx. Their
-- attempts go with them, in the same statement. SKIP LOCKED leaves rows a worker or a manual retry is
-- touching for the next batch instead of waiting on them.

-- name: DeleteDeliveredBefore :many
-- Deletes up to max deliveries delivered before cutoff, oldest first, and returns their events' ids: those
-- of the legacy partition only (ids before @legacy_until, the history as it was before partitioning); the
-- time partitions go whole (history_compact).
WITH doomed AS (
    SELECT id FROM webhook_deliveries
    WHERE state = 'delivered' AND last_attempt_at < @cutoff::timestamptz AND id < @legacy_until::uuid
    ORDER BY last_attempt_at
    LIMIT @max::int
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM webhook_deliveries d USING doomed
    WHERE d.id = doomed.id
    RETURNING d.id, d.event_id
), attempts AS (
    DELETE FROM webhook_attempts a USING gone WHERE a.delivery_id = gone.id
)
SELECT gone.event_id FROM gone;

-- name: DeleteDeadBefore :many
-- Deletes up to max dead deliveries (failed or expired, discarded or not) that died before cutoff, oldest
-- first, and returns their events' ids.
WITH doomed AS (
    SELECT id FROM webhook_deliveries
    WHERE state IN ('failed', 'expired') AND dead_at < @cutoff::timestamptz
    ORDER BY dead_at
    LIMIT @max::int
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM webhook_deliveries d USING doomed
    WHERE d.id = doomed.id
    RETURNING d.id, d.event_id
), attempts AS (
    DELETE FROM webhook_attempts a USING gone WHERE a.delivery_id = gone.id
)
SELECT gone.event_id FROM gone;

-- name: LockDeadBefore :many
-- Locks up to max dead deliveries that died before cutoff, with their events, for archiving; the caller
-- deletes them (DeleteDeliveriesByID) in the same transaction after the archive is on disk.
SELECT d.id, d.tenant_id, d.subscription_id, d.event_type, d.state, d.dead_reason, d.dead_at, d.discarded_at,
       d.attempt_count, d.total_attempts, d.manual_retries, d.last_attempt_at, d.last_status, d.last_error,
       d.replay_id, d.created_at, d.updated_at,
       e.id AS event_id, e.created_at AS event_created_at, e.body AS event_body
FROM webhook_deliveries d
JOIN events e ON e.id = d.event_id
WHERE d.state IN ('failed', 'expired') AND d.dead_at < @cutoff::timestamptz
ORDER BY d.dead_at
LIMIT @max::int
FOR UPDATE OF d SKIP LOCKED;

-- name: ListAttemptsOfDeliveries :many
-- Every attempt of the given deliveries, for the archive. request_headers were stored without secrets.
SELECT delivery_id, attempt, started_at, duration_ms, status, response_snippet, error, outcome, request_url, request_headers
FROM webhook_attempts
WHERE delivery_id = ANY(@delivery_ids::uuid[])
ORDER BY delivery_id, attempt;

-- name: DeleteDeliveriesByID :many
-- Deletes the given deliveries (locked by LockDeadBefore in this transaction) with their attempts and
-- returns their events' ids.
WITH gone AS (
    DELETE FROM webhook_deliveries
    WHERE id = ANY(@delivery_ids::uuid[])
    RETURNING id, event_id
), attempts AS (
    DELETE FROM webhook_attempts a USING gone WHERE a.delivery_id = gone.id
)
SELECT gone.event_id FROM gone;

-- name: DeleteEventsWithoutDeliveries :one
-- Deletes those of the given events that have no delivery left, with their Idempotency-Keys, and counts
-- them. It runs after the deliveries' delete in the same transaction: within one statement the deleted
-- rows would still be visible to NOT EXISTS.
WITH gone AS (
    DELETE FROM events e
    WHERE e.id = ANY(@event_ids::uuid[])
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
    RETURNING e.id
), keys AS (
    DELETE FROM event_idempotency k USING gone WHERE k.event_id = gone.id
)
SELECT count(*)::bigint FROM gone;

-- name: DeleteUndeliveredEventsInRange :one
-- Scans up to max events with after < id < before in primary-key order (ids are UUIDv7, so an id range is a
-- time range) and deletes those that have no delivery: events no subscription matched. It returns the
-- last id scanned (after when none), how many were scanned and how many deleted.
WITH scanned AS (
    SELECT id FROM events
    WHERE id > @after::uuid AND id < @before::uuid
    ORDER BY id
    LIMIT @max::int
), deleted AS (
    DELETE FROM events e USING scanned s
    WHERE e.id = s.id AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
    RETURNING e.id
), keys AS (
    DELETE FROM event_idempotency k USING deleted WHERE k.event_id = deleted.id
)
SELECT COALESCE((SELECT s.id FROM scanned s ORDER BY s.id DESC LIMIT 1), @after::uuid)::uuid AS last_id,
       (SELECT count(*) FROM scanned)::int AS scanned,
       (SELECT count(*) FROM deleted)::int AS deleted;

-- name: DeleteAttemptMinutesBefore :execrows
-- Deletes up to max of the health's per-minute attempt counts older than cutoff (nothing reads them past
-- the longest health range), oldest first through attempt_minutes_minute_idx.
DELETE FROM attempt_minutes m
WHERE (m.subscription_id, m.minute) IN (
    SELECT subscription_id, minute FROM attempt_minutes
    WHERE minute < @cutoff::timestamptz
    ORDER BY minute
    LIMIT @max::int
);
