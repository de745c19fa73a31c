-- Polling subscriptions' consumers: their cursors, polls and commits (internal/polling). A position is
-- (poll_xid, id): see db/schema/00031_polling_subscriptions.sql for why the transaction id orders them.

-- name: PollHorizon :one
-- The first position a poll of this moment may not answer: every transaction below the snapshot's xmin has
-- ended, so rows whose poll_xid is below it are final; rows of transactions at or above it may still
-- appear. With the subscription's oldest pending delivery (a nil id when none waits), where a new consumer
-- starts.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
       coalesce(p.poll_xid, 0)::bigint AS oldest_pending_xid,
       coalesce(p.id, '00000000-0000-0000-0000-000000000000')::uuid AS oldest_pending_id
FROM (SELECT 1) one
LEFT JOIN LATERAL (
    -- pending: the queue's partition alone
    SELECT d.poll_xid, d.id FROM webhook_deliveries d
    WHERE d.tenant_id = @tenant_id AND d.subscription_id = @subscription_id AND d.poll_xid IS NOT NULL
      AND d.state = 'pending'
    ORDER BY d.poll_xid, d.id
    LIMIT 1
) p ON true;

-- name: GetConsumer :one
SELECT * FROM subscription_consumers
WHERE tenant_id = @tenant_id AND subscription_id = @subscription_id AND name = @name;

-- name: GetConsumerForUpdate :one
SELECT * FROM subscription_consumers
WHERE tenant_id = @tenant_id AND subscription_id = @subscription_id AND name = @name
FOR UPDATE;

-- name: CreateConsumer :one
-- Makes a consumer at a position (its first poll's start, or its first commit's cursor); a consumer made
-- meanwhile by a concurrent call is kept as it is (and returned).
INSERT INTO subscription_consumers AS c (subscription_id, tenant_id, name, position_xid, position_id, given_xid, given_id, created_at)
VALUES (@subscription_id, @tenant_id, @name, @position_xid, @position_id, @position_xid, @position_id, @now::timestamptz)
ON CONFLICT (subscription_id, name) DO UPDATE SET name = c.name
RETURNING *;

-- name: PollDeliveries :many
-- Up to @max_rows of a subscription's deliveries after the position, oldest position first: pending ones
-- (waiting to be committed) and delivered ones (committed by any consumer: every consumer gets every
-- delivery); dead and discarded ones are left out. Only rows below the statement's snapshot xmin are
-- answered (see PollHorizon). The page is found first (the position index of each partition, merged), then
-- its events are read by primary key.
-- The page also stops before its bodies pass @max_bytes (its first delivery is always answered): 500
-- bodies of 256 KiB would be 128 MiB in one answer. in_page is how many the page had before that cut
-- (octet_length reads a stored body's size without reading the body; the bodies cut are never read).
WITH page AS (
    SELECT d.id, d.event_id, d.event_type, d.poll_xid::bigint AS poll_xid
    FROM webhook_deliveries d
    WHERE d.tenant_id = @tenant_id AND d.subscription_id = @subscription_id AND d.poll_xid IS NOT NULL
      AND (d.poll_xid, d.id) > (@after_xid::bigint, @after_id::uuid)
      AND d.poll_xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
      AND d.state IN ('pending', 'delivered') AND d.discarded_at IS NULL
    ORDER BY d.poll_xid, d.id
    LIMIT @max_rows::int
), sized AS (
    SELECT p.id, p.event_id, p.event_type, p.poll_xid, e.created_at,
           sum(octet_length(e.body)) OVER (ORDER BY p.poll_xid, p.id) - octet_length(e.body) AS before_bytes,
           count(*) OVER () AS in_page
    FROM page p JOIN events e ON e.id = p.event_id AND e.tenant_id = @tenant_id
)
SELECT s.id, s.event_id, s.event_type, s.poll_xid, e.body, s.created_at AS event_created_at, s.in_page::int AS in_page
FROM sized s JOIN events e ON e.id = s.event_id AND e.tenant_id = @tenant_id
WHERE s.before_bytes = 0 OR s.before_bytes + octet_length(e.body) <= @max_bytes::bigint
ORDER BY s.poll_xid, s.id;

-- name: MarkConsumerPolled :exec
-- A poll handed the consumer everything up to @given: the furthest position it may commit grows.
UPDATE subscription_consumers
SET last_polled_at = @now::timestamptz,
    given_xid = CASE WHEN (@given_xid::bigint, @given_id::uuid) > (given_xid, given_id) THEN @given_xid::bigint ELSE given_xid END,
    given_id = CASE WHEN (@given_xid::bigint, @given_id::uuid) > (given_xid, given_id) THEN @given_id::uuid ELSE given_id END
WHERE tenant_id = @tenant_id AND subscription_id = @subscription_id AND name = @name;

-- name: LockPollingSubscription :one
-- A commit locks its subscription's row first, so that commits of one subscription (by any consumer) are
-- made one at a time: two delivering the same pending rows would otherwise meet on rows the other moved
-- out of the queue (40001) or lock them in opposite orders. The push engine never locks a polling
-- subscription's row (its claim skips them).
SELECT id, type, state, last_success_at FROM subscriptions
WHERE id = @id AND tenant_id = @tenant_id AND deleted_at IS NULL
FOR NO KEY UPDATE;

-- name: CommitDeliveries :many
-- Every pending delivery of the subscription at or before the cursor becomes delivered, each with an
-- attempt recording the consumer (its outcome delivered; no HTTP request, so no status and no URL).
WITH moved AS (
    UPDATE webhook_deliveries d
    SET state = 'delivered', attempt_count = d.attempt_count + 1, total_attempts = d.total_attempts + 1,
        last_attempt_at = @now::timestamptz, last_status = NULL, last_error = NULL, last_response = NULL,
        dead_reason = NULL, updated_at = @now::timestamptz
    WHERE d.tenant_id = @tenant_id AND d.subscription_id = @subscription_id AND d.poll_xid IS NOT NULL
      AND d.state = 'pending' AND (d.poll_xid, d.id) <= (@cursor_xid::bigint, @cursor_id::uuid)
    RETURNING d.id, d.tenant_id, d.subscription_id, d.total_attempts
), inserted AS (
    INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status,
                                  response_snippet, error, outcome, request_url, request_headers, consumer)
    SELECT m.id, m.tenant_id, m.subscription_id, m.total_attempts, @now::timestamptz, 0, NULL,
           '', '', 'delivered', '', '{}'::jsonb, @consumer::text
    FROM moved m
    RETURNING delivery_id
)
SELECT delivery_id FROM inserted;

-- name: MarkPolledSubscriptionHealthy :exec
-- A commit that delivered something is a polling subscription's success: its run of waiting ends (which
-- ends its incident), as a 2xx ends a webhook endpoint's run of failures.
UPDATE subscriptions
SET last_success_at = greatest(last_success_at, @now::timestamptz), failing_since = NULL, consecutive_failures = 0
WHERE id = @id AND tenant_id = @tenant_id;

-- name: AdvanceConsumer :exec
-- The consumer's committed cursor moves forward only (a cursor behind it changes nothing but committed_at).
UPDATE subscription_consumers
SET position_xid = CASE WHEN (@cursor_xid::bigint, @cursor_id::uuid) > (position_xid, position_id) THEN @cursor_xid::bigint ELSE position_xid END,
    position_id = CASE WHEN (@cursor_xid::bigint, @cursor_id::uuid) > (position_xid, position_id) THEN @cursor_id::uuid ELSE position_id END,
    given_xid = CASE WHEN (@cursor_xid::bigint, @cursor_id::uuid) > (given_xid, given_id) THEN @cursor_xid::bigint ELSE given_xid END,
    given_id = CASE WHEN (@cursor_xid::bigint, @cursor_id::uuid) > (given_xid, given_id) THEN @cursor_id::uuid ELSE given_id END,
    committed_at = @now::timestamptz
WHERE tenant_id = @tenant_id AND subscription_id = @subscription_id AND name = @name;

-- name: ListConsumers :many
-- A subscription's consumers by name, each with its lag (deliveries after its cursor, pending or
-- delivered, counted up to @up_to) and the delivery its cursor is at (none: before the first, or a
-- position between deliveries), which pages name in words.
SELECT sqlc.embed(c), lag.n::bigint AS lag,
       coalesce(at.event_type, '')::text AS at_event_type, coalesce(at.created_at, 'epoch')::timestamptz AS at_created_at
FROM subscription_consumers c
CROSS JOIN LATERAL (
    SELECT count(*) AS n FROM (
        SELECT 1 FROM webhook_deliveries d
        WHERE d.tenant_id = @tenant_id AND d.subscription_id = c.subscription_id AND d.poll_xid IS NOT NULL
          AND (d.poll_xid, d.id) > (c.position_xid, c.position_id)
          AND d.state IN ('pending', 'delivered') AND d.discarded_at IS NULL
        LIMIT @up_to::int
    ) m
) lag
LEFT JOIN LATERAL (
    SELECT d.event_type, d.created_at FROM webhook_deliveries d
    WHERE d.tenant_id = @tenant_id AND d.id = c.position_id AND d.subscription_id = c.subscription_id
    LIMIT 1
) at ON true
WHERE c.tenant_id = @tenant_id AND c.subscription_id = @subscription_id
ORDER BY c.name;

-- name: CommittedByConsumer :one
-- Which consumer's commit delivered a delivery (its newest attempt that names one), for its page; '' when none.
SELECT coalesce((SELECT a.consumer FROM webhook_attempts a
                 WHERE a.tenant_id = @tenant_id AND a.delivery_id = @delivery_id AND a.consumer IS NOT NULL
                 ORDER BY a.attempt DESC LIMIT 1), '')::text AS consumer;

-- name: ExpireUnpulledDeliveries :many
-- Pending deliveries of polling subscriptions not committed by their give_up_at expire (dead_reason
-- deadline), at most @max_rows a run, as a webhook endpoint's expire when their next attempt would come too
-- late. Paused subscriptions' deliveries wait like a paused endpoint's; deleted subscriptions' are
-- dead-lettered by DeadLetterQueuedOfDeletedSubscriptions. Rows another transaction holds (a commit) are
-- skipped: the next run finds them if they are still pending. Across tenants: the maintenance leader runs it.
WITH due AS (
    SELECT w.id
    FROM subscriptions s
    CROSS JOIN LATERAL (
        SELECT d.id FROM webhook_deliveries d
        WHERE d.subscription_id = s.id AND d.state = 'pending' AND d.poll_xid IS NOT NULL
          AND d.give_up_at <= @now::timestamptz
        ORDER BY d.next_attempt_at, d.id
        LIMIT @max_rows::int
        FOR UPDATE OF d SKIP LOCKED
    ) w
    WHERE s.type = 'polling' AND s.state <> 'paused' AND s.deleted_at IS NULL
    LIMIT @max_rows::int
)
UPDATE webhook_deliveries d
SET state = 'expired', dead_reason = 'deadline', dead_at = @now::timestamptz, updated_at = @now::timestamptz
FROM due
WHERE d.id = due.id AND d.state = 'pending'
RETURNING d.id, d.tenant_id, d.subscription_id;

-- name: MarkUnpulledSubscriptions :execrows
-- A polling subscription is failing, for the incident rules and auto-disable, from the moment a delivery
-- waited and nobody committed: since its oldest pending delivery was made, or its last commit when that is
-- later. A commit that delivers clears it (MarkPolledSubscriptionHealthy). Active subscriptions only, as a
-- paused endpoint is not attempted; rows locked in id order, as every writer of subscriptions locks them.
-- Across tenants: the maintenance leader runs it before opening incidents.
WITH unpulled AS (
    SELECT s.id, greatest(first.created_at, coalesce(s.last_success_at, first.created_at)) AS since
    FROM subscriptions s
    CROSS JOIN LATERAL (
        SELECT d.next_attempt_at AS created_at FROM webhook_deliveries d
        WHERE d.subscription_id = s.id AND d.state = 'pending'
        ORDER BY d.next_attempt_at, d.id
        LIMIT 1
    ) first
    WHERE s.type = 'polling' AND s.state = 'active' AND s.deleted_at IS NULL AND s.failing_since IS NULL
    ORDER BY s.id
    FOR NO KEY UPDATE OF s
)
UPDATE subscriptions s SET failing_since = u.since
FROM unpulled u
WHERE s.id = u.id AND s.failing_since IS NULL;

-- name: MakeSubscriptionPolling :one
-- A subscription created as polling (in its create's transaction, right after the insert): its deliveries
-- wait to be pulled. Its url is '' (the API answers null). The type never changes afterwards.
UPDATE subscriptions SET type = 'polling', url = ''
WHERE id = @id AND tenant_id = @tenant_id AND deleted_at IS NULL
RETURNING *;
