-- name: ClaimDeliveries :many
-- Claims up to @max due deliveries of active subscriptions for one worker, SKIP LOCKED so that any number of
-- workers and processes can claim at once without taking the same row. The event body and the
-- subscription's URL, headers and valid secrets come back with each row so sending needs no more queries.
--
-- The subscription check is a correlated subquery, not a join, on purpose: it keeps the plan an ordered
-- scan of the pending partial index that stops after @max rows. With a join, PostgreSQL plans a hash join
-- over every pending row whenever the small subscriptions table lacks statistics (autovacuum never
-- analyzes a table with fewer than 50 changes), which costs a full scan and sort per claim.
WITH locked AS (
    SELECT d.id
    FROM webhook_deliveries d
    WHERE d.state = 'pending' AND d.next_attempt_at <= @now::timestamptz
      AND (SELECT s.state = 'active' AND s.deleted_at IS NULL FROM subscriptions s WHERE s.id = d.subscription_id)
    ORDER BY d.next_attempt_at, d.id
    LIMIT @max::int
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries d
SET state = 'in_flight', lease_expires_at = @lease_expires_at::timestamptz, lease_id = @lease_id::uuid,
    updated_at = @now::timestamptz
FROM locked, events e, subscriptions s
WHERE d.id = locked.id AND e.id = d.event_id AND s.id = d.subscription_id
RETURNING d.id, d.tenant_id, d.event_id, d.subscription_id, d.event_type, d.attempt_count, d.total_attempts,
          d.give_up_at, d.created_at, e.body, e.created_at AS event_created_at, s.url, s.headers,
          s.rate_limit_per_second,
          array(SELECT ss.secret FROM subscription_secrets ss
                WHERE ss.subscription_id = s.id AND (ss.expires_at IS NULL OR ss.expires_at > @now::timestamptz)
                ORDER BY ss.created_at DESC)::text[] AS secrets;

-- name: CompleteAttempts :many
-- Records a batch of finished attempts and moves each delivery to the state the worker decided, in one
-- statement. The lease_id guard drops a result whose lease was lost (the row was rescued and maybe
-- claimed again): that attempt's outcome no longer owns the row.
WITH r AS (
    -- Several unnest calls in one select list are zipped row by row.
    SELECT unnest(@delivery_ids::uuid[]) AS delivery_id, unnest(@lease_ids::uuid[]) AS lease_id,
           unnest(@started_at::timestamptz[]) AS started_at, unnest(@duration_ms::int[]) AS duration_ms,
           unnest(@status::int[]) AS status, unnest(@snippet::text[]) AS snippet, unnest(@error::text[]) AS error,
           unnest(@outcome::text[]) AS outcome, unnest(@new_state::text[]) AS new_state,
           unnest(@next_attempt_at::timestamptz[]) AS next_attempt_at, unnest(@dead_reason::text[]) AS dead_reason,
           unnest(@request_url::text[]) AS request_url, unnest(@request_headers::jsonb[]) AS request_headers
), moved AS (
    UPDATE webhook_deliveries d
    SET state = r.new_state, attempt_count = d.attempt_count + 1, total_attempts = d.total_attempts + 1,
        next_attempt_at = r.next_attempt_at, lease_expires_at = NULL, lease_id = NULL,
        last_attempt_at = r.started_at, last_status = nullif(r.status, 0), last_response = r.snippet,
        last_error = nullif(r.error, ''), dead_reason = nullif(r.dead_reason, ''),
        dead_at = CASE WHEN r.new_state IN ('failed', 'expired') THEN @now::timestamptz END, updated_at = @now::timestamptz
    FROM r
    WHERE d.id = r.delivery_id AND d.state = 'in_flight' AND d.lease_id = r.lease_id
    RETURNING d.id, d.tenant_id, d.subscription_id, d.total_attempts
), inserted AS (
    INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status,
                                  response_snippet, error, outcome, request_url, request_headers)
    SELECT m.id, m.tenant_id, m.subscription_id, m.total_attempts, r.started_at, r.duration_ms, nullif(r.status, 0),
           r.snippet, r.error, r.outcome, r.request_url, r.request_headers
    FROM moved m JOIN r ON r.delivery_id = m.id
    RETURNING delivery_id
)
SELECT delivery_id FROM inserted;

-- name: ReleaseDeliveries :execrows
-- Gives claimed deliveries back to the queue without an attempt (shutdown, or an outgoing rate limit
-- that would hold them past their lease).
UPDATE webhook_deliveries d
SET state = 'pending', lease_expires_at = NULL, lease_id = NULL, next_attempt_at = r.next_attempt_at,
    updated_at = @now::timestamptz
FROM (SELECT unnest(@delivery_ids::uuid[]) AS delivery_id, unnest(@lease_ids::uuid[]) AS lease_id,
             unnest(@next_attempt_at::timestamptz[]) AS next_attempt_at) AS r
WHERE d.id = r.delivery_id AND d.state = 'in_flight' AND d.lease_id = r.lease_id;

-- name: RescueExpiredLeases :many
-- Puts deliveries whose worker died (lease ran out) back in the queue, due now.
UPDATE webhook_deliveries
SET state = 'pending', lease_expires_at = NULL, lease_id = NULL, next_attempt_at = @now::timestamptz,
    updated_at = @now::timestamptz
WHERE state = 'in_flight' AND lease_expires_at < @now::timestamptz
RETURNING id, subscription_id;

-- name: NextDueAt :one
-- When the earliest pending delivery is due, so an idle worker can sleep exactly that long.
SELECT min(next_attempt_at)::timestamptz FROM webhook_deliveries WHERE state = 'pending';

-- name: CountPendingDeliveries :one
SELECT count(*)::bigint FROM webhook_deliveries WHERE state = 'pending';

-- name: GetDelivery :one
SELECT * FROM webhook_deliveries WHERE id = @id AND tenant_id = @tenant_id;

-- name: GetDeliveryDetail :one
SELECT sqlc.embed(d), e.body, e.created_at AS event_created_at, s.url AS subscription_url
FROM webhook_deliveries d
JOIN events e ON e.id = d.event_id
JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.id = @id AND d.tenant_id = @tenant_id;

-- name: ListAttempts :many
SELECT * FROM webhook_attempts WHERE delivery_id = @delivery_id AND tenant_id = @tenant_id ORDER BY attempt;

-- name: ListDeliveries :many
-- Newest first, keyset-paginated on (created_at, id). NULL filters are folded away at plan time (the pool
-- plans every statement with its parameters), so each combination uses its index.
SELECT * FROM webhook_deliveries
WHERE tenant_id = @tenant_id AND discarded_at IS NULL
  AND (sqlc.narg('subscription_id')::uuid IS NULL OR subscription_id = sqlc.narg('subscription_id')::uuid)
  AND (cardinality(@states::text[]) = 0 OR state = ANY (@states::text[]))
  AND (sqlc.narg('retrying')::bool IS NULL OR (total_attempts > 0) = sqlc.narg('retrying')::bool)
  AND (sqlc.narg('event_type')::text IS NULL OR event_type = sqlc.narg('event_type')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR created_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('after_created_at')::timestamptz IS NULL
       OR (created_at, id) < (sqlc.narg('after_created_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows::int;

-- name: CountDeliveries :one
-- The number of matches, counting at most @up_to rows so that a page can say "10,000+" quickly on a
-- table of millions (pass the largest int for an exact count).
SELECT count(*)::bigint FROM (
    SELECT 1 FROM webhook_deliveries
    WHERE tenant_id = @tenant_id AND discarded_at IS NULL
      AND (sqlc.narg('subscription_id')::uuid IS NULL OR subscription_id = sqlc.narg('subscription_id')::uuid)
      AND (cardinality(@states::text[]) = 0 OR state = ANY (@states::text[]))
      AND (sqlc.narg('retrying')::bool IS NULL OR (total_attempts > 0) = sqlc.narg('retrying')::bool)
      AND (sqlc.narg('event_type')::text IS NULL OR event_type = sqlc.narg('event_type')::text)
      AND (sqlc.narg('since')::timestamptz IS NULL OR created_at >= sqlc.narg('since')::timestamptz)
      AND (sqlc.narg('until')::timestamptz IS NULL OR created_at < sqlc.narg('until')::timestamptz)
    LIMIT @up_to::int
) matches;

-- name: RetryDelivery :one
-- Puts a finished delivery back in the queue with a fresh schedule. Guarded by state, so of several
-- concurrent calls exactly one matches; the others find it pending. @max_manual < 0 means no cap (admins).
UPDATE webhook_deliveries
SET state = 'pending', attempt_count = 0,
    manual_retries = manual_retries + CASE WHEN @count_manual::bool THEN 1 ELSE 0 END,
    next_attempt_at = @now::timestamptz, give_up_at = @give_up_at::timestamptz, dead_reason = NULL, dead_at = NULL,
    updated_at = @now::timestamptz
WHERE id = @id AND tenant_id = @tenant_id AND state IN ('failed', 'expired', 'delivered') AND discarded_at IS NULL
  AND (@max_manual::int < 0 OR manual_retries < @max_manual::int)
RETURNING *;

-- name: DiscardDelivery :one
UPDATE webhook_deliveries SET discarded_at = @now::timestamptz, updated_at = @now::timestamptz
WHERE id = @id AND tenant_id = @tenant_id AND state IN ('failed', 'expired') AND discarded_at IS NULL
RETURNING id;

-- name: DeadLetterQueuedOfSubscription :execrows
-- A deleted subscription's queued deliveries are dead-lettered, not dropped, so nothing vanishes silently.
-- In-flight ones finish their attempt; its outcome decides.
UPDATE webhook_deliveries
SET state = 'failed', dead_reason = 'subscription_deleted', dead_at = @now::timestamptz, updated_at = @now::timestamptz
WHERE subscription_id = @subscription_id AND tenant_id = @tenant_id AND state = 'pending';

-- name: DeliveryTenant :one
-- Which tenant a delivery belongs to: operators open any tenant's delivery page by its id alone.
SELECT tenant_id FROM webhook_deliveries WHERE id = @id;

-- name: ListenForDeliveries :exec
LISTEN hookline_deliveries;
