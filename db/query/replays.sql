-- name: ListDeadLetters :many
-- Dead letters across tenants, and replays (bulk replays by operators, recovers by customers). Every
-- statement in this file filters dead deliveries the same way, the dead-letter criteria; sqlc cannot share
-- a WHERE clause, so the block is repeated and must be kept identical. NULL criteria fold away at plan time
-- on the API/dashboard pool (plans per call), so each combination uses the dead-letter partial indexes.
--
-- @replayable narrows to what a replay may schedule: not the deliveries of a deleted subscription, which no
-- worker ever claims (they would wait in pending for good). The dead-letter list still shows them.
--
-- Dead deliveries of every tenant, newest first, keyset-paginated on (created_at, id), with the tenant's
-- name, the subscription's URL and whether it was deleted (its deliveries are never sent again) for display.
SELECT sqlc.embed(d), t.name AS tenant_name, s.url AS subscription_url, (s.deleted_at IS NOT NULL)::bool AS subscription_deleted
FROM webhook_deliveries d
JOIN tenants t ON t.id = d.tenant_id
JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
  AND (sqlc.narg('tenant_id')::uuid IS NULL OR d.tenant_id = sqlc.narg('tenant_id')::uuid)
  AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
  AND (sqlc.narg('event_type')::text IS NULL OR d.event_type = sqlc.narg('event_type')::text)
  AND (cardinality(@states::text[]) = 0 OR d.state = ANY (@states::text[]))
  AND (sqlc.narg('dead_reason')::text IS NULL OR d.dead_reason = sqlc.narg('dead_reason')::text)
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR d.created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR d.created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('dead_before')::timestamptz IS NULL OR d.dead_at <= sqlc.narg('dead_before')::timestamptz)
  AND (NOT @replayable::bool OR s.deleted_at IS NULL)
  AND (sqlc.narg('after_created_at')::timestamptz IS NULL
       OR (d.created_at, d.id) < (sqlc.narg('after_created_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY d.created_at DESC, d.id DESC
LIMIT @max_rows::int;

-- name: CountDeadLetters :one
-- How many dead deliveries match, counting at most @up_to.
SELECT count(*)::bigint FROM (
    SELECT 1 FROM webhook_deliveries d
    WHERE d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
      AND (sqlc.narg('tenant_id')::uuid IS NULL OR d.tenant_id = sqlc.narg('tenant_id')::uuid)
      AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
      AND (sqlc.narg('event_type')::text IS NULL OR d.event_type = sqlc.narg('event_type')::text)
      AND (cardinality(@states::text[]) = 0 OR d.state = ANY (@states::text[]))
      AND (sqlc.narg('dead_reason')::text IS NULL OR d.dead_reason = sqlc.narg('dead_reason')::text)
      AND (sqlc.narg('created_from')::timestamptz IS NULL OR d.created_at >= sqlc.narg('created_from')::timestamptz)
      AND (sqlc.narg('created_to')::timestamptz IS NULL OR d.created_at < sqlc.narg('created_to')::timestamptz)
      AND (sqlc.narg('dead_before')::timestamptz IS NULL OR d.dead_at <= sqlc.narg('dead_before')::timestamptz)
      AND (NOT @replayable::bool OR (SELECT s.deleted_at IS NULL FROM subscriptions s WHERE s.id = d.subscription_id))
    LIMIT @up_to::int
) matches;

-- name: DeadLetterBreakdown :many
-- How the matching dead deliveries split by tenant and subscription, largest groups first.
SELECT d.tenant_id, t.name AS tenant_name, d.subscription_id, s.url AS subscription_url, count(*)::bigint AS deliveries
FROM webhook_deliveries d
JOIN tenants t ON t.id = d.tenant_id
JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
  AND (sqlc.narg('tenant_id')::uuid IS NULL OR d.tenant_id = sqlc.narg('tenant_id')::uuid)
  AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
  AND (sqlc.narg('event_type')::text IS NULL OR d.event_type = sqlc.narg('event_type')::text)
  AND (cardinality(@states::text[]) = 0 OR d.state = ANY (@states::text[]))
  AND (sqlc.narg('dead_reason')::text IS NULL OR d.dead_reason = sqlc.narg('dead_reason')::text)
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR d.created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR d.created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('dead_before')::timestamptz IS NULL OR d.dead_at <= sqlc.narg('dead_before')::timestamptz)
  AND (NOT @replayable::bool OR s.deleted_at IS NULL)
GROUP BY d.tenant_id, t.name, d.subscription_id, s.url
ORDER BY deliveries DESC, t.name, s.url
LIMIT @max_rows::int;

-- name: ReplayChunk :one
-- Moves the next @chunk dead deliveries of a replay, in (created_at, id) order after the cursor, back to
-- pending with a fresh schedule: next_attempt_at spread at random over @spread_seconds, a new give_up_at,
-- the current schedule's error fields cleared (the attempts stay), replay_id set. Only rows that are dead
-- at this moment and were already dead when the replay started move, so overlapping replays, manual
-- retries and retention never schedule one delivery twice. A @traceparent (the chunk's span, when
-- tracing) becomes the moved rows' trace context, so their next attempts are traced under the replay. FOR UPDATE (not SKIP LOCKED): a row another
-- transaction is changing is waited for and re-checked, never passed over. Returns how many rows it looked
-- at (0 means the replay is done), how many it moved, and the new cursor.
WITH batch AS (
    SELECT d.id, d.created_at FROM webhook_deliveries d
    WHERE d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
      AND (sqlc.narg('tenant_id')::uuid IS NULL OR d.tenant_id = sqlc.narg('tenant_id')::uuid)
      AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
      AND (sqlc.narg('event_type')::text IS NULL OR d.event_type = sqlc.narg('event_type')::text)
      AND (cardinality(@states::text[]) = 0 OR d.state = ANY (@states::text[]))
      AND (sqlc.narg('dead_reason')::text IS NULL OR d.dead_reason = sqlc.narg('dead_reason')::text)
      AND d.created_at >= @created_from::timestamptz AND d.created_at < @created_to::timestamptz
      AND d.dead_at <= @dead_before::timestamptz
      AND (SELECT s.deleted_at IS NULL FROM subscriptions s WHERE s.id = d.subscription_id)
      AND (sqlc.narg('after_created_at')::timestamptz IS NULL
           OR (d.created_at, d.id) > (sqlc.narg('after_created_at')::timestamptz, sqlc.narg('after_id')::uuid))
    ORDER BY d.created_at, d.id
    LIMIT @chunk::int
    FOR UPDATE OF d
), moved AS (
    UPDATE webhook_deliveries d
    SET state = 'pending', attempt_count = 0,
        next_attempt_at = sqlc.arg('now')::timestamptz + make_interval(0, 0, 0, 0, 0, 0, random() * sqlc.arg('spread_seconds')::int),
        give_up_at = @give_up_at::timestamptz, dead_reason = NULL, dead_at = NULL, last_status = NULL,
        last_error = NULL, last_response = NULL, replay_id = @replay_id::uuid, updated_at = @now::timestamptz,
        traceparent = coalesce(nullif(@traceparent::text, ''), d.traceparent),
        -- a polling delivery queued again gets a new position, after every cursor, so consumers get it again
        poll_xid = CASE WHEN d.poll_xid IS NOT NULL THEN pg_current_xact_id()::text::bigint END
    FROM batch
    WHERE d.id = batch.id AND d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
    RETURNING d.id
), last AS (
    SELECT created_at, id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1
)
SELECT (SELECT count(*) FROM batch)::int AS looked_at,
       (SELECT count(*) FROM moved)::int AS moved,
       coalesce((SELECT created_at FROM last), 'epoch')::timestamptz AS last_created_at,
       coalesce((SELECT id FROM last), '00000000-0000-0000-0000-000000000000')::uuid AS last_id;

-- name: CreateReplay :one
-- @traceparent is the trace context of the request that started it ('' for none), which its chunks continue.
INSERT INTO replays (kind, actor, actor_name, criteria, dry_run, matched, scheduled, state, tenant_id, subscription_id,
                     spread_seconds, started_at, updated_at, finished_at, traceparent)
VALUES (@kind, @actor, @actor_name, @criteria, @dry_run, @matched, 0, @state, sqlc.narg('tenant_id'), sqlc.narg('subscription_id'),
        @spread_seconds, @now, @now, sqlc.narg('finished_at'), nullif(@traceparent::text, ''))
RETURNING *;

-- name: GetReplay :one
-- One replay with the outcome of what it scheduled; @tenant_id, when set, limits it to that tenant's own
-- (customers see only their recovers). The outcome is counted from the deliveries whose replay_id is this
-- replay (webhook_deliveries_replay_idx, which carries state), in the same snapshot as the replay's row,
-- so a chunk committing meanwhile never makes the counts disagree: what it scheduled that no longer names
-- it (a later replay took it over, or retention deleted it) is scheduled minus those counted.
SELECT sqlc.embed(r), o.delivered, o.dead, o.pending, o.counted
FROM replays r
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.state = 'delivered')::bigint AS delivered,
           count(*) FILTER (WHERE d.state IN ('failed', 'expired'))::bigint AS dead,
           count(*) FILTER (WHERE d.state IN ('pending', 'in_flight'))::bigint AS pending,
           count(*)::bigint AS counted
    FROM webhook_deliveries d WHERE d.replay_id = r.id
) o
WHERE r.id = @id AND (sqlc.narg('tenant_id')::uuid IS NULL OR r.tenant_id = sqlc.narg('tenant_id')::uuid);

-- name: ListReplays :many
-- The audit log, newest first, keyset-paginated on (started_at, id), each with its outcome counted as
-- GetReplay does. @dry_run, when set, keeps only dry runs (true) or only real ones (false).
SELECT sqlc.embed(r), o.delivered, o.dead, o.pending, o.counted
FROM replays r
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.state = 'delivered')::bigint AS delivered,
           count(*) FILTER (WHERE d.state IN ('failed', 'expired'))::bigint AS dead,
           count(*) FILTER (WHERE d.state IN ('pending', 'in_flight'))::bigint AS pending,
           count(*)::bigint AS counted
    FROM webhook_deliveries d WHERE d.replay_id = r.id
) o
WHERE (sqlc.narg('tenant_id')::uuid IS NULL OR r.tenant_id = sqlc.narg('tenant_id')::uuid)
  AND (sqlc.narg('subscription_id')::uuid IS NULL OR r.subscription_id = sqlc.narg('subscription_id')::uuid)
  AND (sqlc.narg('dry_run')::bool IS NULL OR r.dry_run = sqlc.narg('dry_run')::bool)
  AND (sqlc.narg('after_started_at')::timestamptz IS NULL
       OR (r.started_at, r.id) < (sqlc.narg('after_started_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY r.started_at DESC, r.id DESC
LIMIT @max_rows::int;

-- name: RunningReplays :many
-- Unfinished replays, oldest first, for the runners.
SELECT id FROM replays WHERE state = 'running' ORDER BY started_at LIMIT 20;

-- name: LockRunningReplay :one
-- Takes one running replay for the length of a chunk's transaction. SKIP LOCKED: a replay another instance
-- is working on is left to it.
SELECT * FROM replays WHERE id = @id AND state = 'running' FOR UPDATE SKIP LOCKED;

-- name: AdvanceReplay :exec
-- Records a chunk, in the chunk's transaction.
UPDATE replays
SET scheduled = scheduled + @moved::int, cursor_created_at = @cursor_created_at, cursor_id = @cursor_id,
    updated_at = @now::timestamptz
WHERE id = @id AND state = 'running';

-- name: FinishReplay :one
-- Ends a replay: finished when it walked every row, failed (with the error) when it could not; what matched
-- but was no longer dead when reached (retried, replayed, deleted meanwhile) is skipped.
UPDATE replays
SET state = @state, error = @error, skipped = greatest(matched - scheduled, 0), finished_at = @now::timestamptz,
    updated_at = @now::timestamptz
WHERE id = @id AND state = 'running'
RETURNING *;

-- name: ListReplayDeliveries :many
-- The deliveries a replay scheduled (those whose latest replay it is), newest first.
SELECT * FROM webhook_deliveries
WHERE replay_id = @replay_id
  AND (sqlc.narg('after_created_at')::timestamptz IS NULL
       OR (created_at, id) < (sqlc.narg('after_created_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows::int;

-- name: DeadLettersByHour :many
-- How many dead deliveries matching the dead-letter criteria were created in each hour (UTC) of
-- [@created_from, @created_to), for the dead-letter chart. Only the newest @max_rows matches are counted
-- (the partial index on created_at read backwards, no heap page when only times filter), so a huge
-- dead-letter queue cannot make the page slow; the caller says so when the counts add up to the cap.
WITH m AS (
    SELECT d.created_at FROM webhook_deliveries d
    WHERE d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
      AND (sqlc.narg('tenant_id')::uuid IS NULL OR d.tenant_id = sqlc.narg('tenant_id')::uuid)
      AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
      AND (sqlc.narg('event_type')::text IS NULL OR d.event_type = sqlc.narg('event_type')::text)
      AND (cardinality(@states::text[]) = 0 OR d.state = ANY (@states::text[]))
      AND (sqlc.narg('dead_reason')::text IS NULL OR d.dead_reason = sqlc.narg('dead_reason')::text)
      AND d.created_at >= @created_from::timestamptz AND d.created_at < @created_to::timestamptz
    ORDER BY d.created_at DESC
    LIMIT @max_rows::int
)
SELECT date_bin('1 hour', m.created_at, '2000-01-01 00:00:00+00')::timestamptz AS hour, count(*)::bigint AS deliveries
FROM m
GROUP BY 1
ORDER BY 1;

-- name: DeadLetterGroups :many
-- The newest @max_rows dead deliveries matching the criteria in [@created_from, @created_to), grouped by
-- tenant, subscription and last status, with the first and last creation time of each group: where an
-- outage hit, and the window a replay of it needs (none of a deleted subscription's: replays skip them).
-- Largest groups first, at most @max_groups.
WITH m AS (
    SELECT d.tenant_id, d.subscription_id, d.last_status, d.created_at FROM webhook_deliveries d
    WHERE d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
      AND (sqlc.narg('tenant_id')::uuid IS NULL OR d.tenant_id = sqlc.narg('tenant_id')::uuid)
      AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
      AND (sqlc.narg('event_type')::text IS NULL OR d.event_type = sqlc.narg('event_type')::text)
      AND (cardinality(@states::text[]) = 0 OR d.state = ANY (@states::text[]))
      AND (sqlc.narg('dead_reason')::text IS NULL OR d.dead_reason = sqlc.narg('dead_reason')::text)
      AND d.created_at >= @created_from::timestamptz AND d.created_at < @created_to::timestamptz
    ORDER BY d.created_at DESC
    LIMIT @max_rows::int
), g AS (
    SELECT m.tenant_id, m.subscription_id, m.last_status, count(*)::bigint AS deliveries,
           min(m.created_at)::timestamptz AS first_created, max(m.created_at)::timestamptz AS last_created
    FROM m
    GROUP BY m.tenant_id, m.subscription_id, m.last_status
)
SELECT g.tenant_id, t.name AS tenant_name, g.subscription_id, s.url AS subscription_url,
       (s.deleted_at IS NOT NULL)::bool AS subscription_deleted, g.last_status, g.deliveries, g.first_created, g.last_created
FROM g
JOIN tenants t ON t.id = g.tenant_id
JOIN subscriptions s ON s.id = g.subscription_id
ORDER BY g.deliveries DESC, g.last_created DESC, t.name, s.url
LIMIT @max_groups::int;
