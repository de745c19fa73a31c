-- name: ClaimDeliveries :many
-- Claims up to @max due deliveries for one worker, subscription by subscription, so that no endpoint takes
-- more than its fair share:
--   * candidates: subscriptions that may be sent to now (active, not deleted, under @cap attempts in
--     flight, circuit closed or due for a probe, rate-limit tokens left), each with its earliest due
--     delivery, oldest first. Paused, disabled and broken endpoints are skipped here, at the subscription,
--     so their backlogs are never read; each candidate's due rows are found through
--     webhook_deliveries_sub_pending_idx without reading any other subscription's rows.
--   * picked: up to each candidate's quota of its due rows (FOR UPDATE SKIP LOCKED, so any number of workers
--     and processes claim at once), taken in turns: every candidate's first row before anyone's second, so
--     a fresh event of a quiet subscription is never queued behind another's backlog. No candidate locks
--     more than its share, ceil(@max / candidates) rows, which is all the turns take while every candidate
--     has that many due (when some have fewer the claim comes back short, and the worker claims again as
--     its attempts finish). Locking up to @max of each, as it once did, had a claim over 100 busy
--     subscriptions lock up to ten times the rows it took, each lock a write.
--   * wanted, ordered: each subscription's picked rows as one array, so that no later step joins two of
--     this statement's intermediate results: the planner cannot size those, and on statistics taken while
--     the subscriptions were paused it paired them row by row (100 × 100 comparisons, three times, in
--     every claim over 100 subscriptions).
--   * reserved: the slots are taken on each subscription's row (claimed + n), in id order (no deadlock
--     between claims), guarded by claimed + n - finished <= @cap on the row's newest version: a claim in
--     another process that took the slots first makes the guard fail, and this claim then takes none of that
--     subscription's rows. That guard is what holds the cap across processes. finished (see
--     subscription_finished) is read from this statement's snapshot; it only grows, so a stale value only
--     makes the guard stricter. Completions never lock the subscription row to free a slot, so a busy
--     endpoint's claims and completions do not queue behind each other. An open circuit due for a probe gets
--     one row and goes half_open until the probe's outcome is recorded (or its lease runs out).
-- The event body and the subscription's URL, headers and valid secrets come back with each row so sending
-- needs no more queries; so does the delivery's trace context, which the attempt's span continues.
WITH candidates AS (
    SELECT s.id, s.claimed - fin.finished AS in_flight, fin.finished, s.circuit_state,
           coalesce(floor(rate_tokens_at(s.rate_limit_per_second, s.rate_tokens, s.rate_counted_at, sqlc.arg('now')::timestamptz))::int,
                    sqlc.arg('cap')::int) AS tokens,
           first.next_attempt_at AS first_due,
           -- each candidate's share of the claim: with k candidates, ceil(max / k) rows each is every turn
           -- the claim can take (k is at most max; count(*) over () counts the candidates before the LIMIT)
           (sqlc.arg('max')::int + least(count(*) OVER (), sqlc.arg('max')::int)::int - 1)
               / least(count(*) OVER (), sqlc.arg('max')::int)::int AS share
    FROM subscriptions s
    -- a scalar subquery is one primary-key lookup per subscription whatever the statistics say (a join
    -- planned on a stale estimate of subscription_finished scanned it once per subscription). OFFSET 0
    -- keeps it a subquery evaluated once per subscription: pulled up into the outer query, its lookup was
    -- copied into each of the three places that name fin.finished, three lookups per candidate.
    CROSS JOIN LATERAL (
        SELECT coalesce((SELECT f.finished FROM subscription_finished f WHERE f.subscription_id = s.id), 0) AS finished
        OFFSET 0
    ) fin
    CROSS JOIN LATERAL (
        SELECT d.next_attempt_at FROM webhook_deliveries d
        WHERE d.subscription_id = s.id AND d.state = 'pending' AND d.next_attempt_at <= sqlc.arg('now')::timestamptz
        ORDER BY d.next_attempt_at, d.id
        LIMIT 1
    ) first
    WHERE s.state = 'active' AND s.deleted_at IS NULL AND s.claimed - fin.finished < sqlc.arg('cap')::int
      -- a polling subscription's deliveries are pulled by its consumers, never sent
      AND s.type = 'webhook'
      AND (s.circuit_state = 'closed' OR s.circuit_probe_at <= sqlc.arg('now')::timestamptz)
      AND coalesce(rate_tokens_at(s.rate_limit_per_second, s.rate_tokens, s.rate_counted_at, sqlc.arg('now')::timestamptz) >= 1, true)
    ORDER BY first.next_attempt_at, s.id
    LIMIT sqlc.arg('max')::int
), picked AS (
    SELECT p.id, p.subscription_id, p.finished FROM (
        SELECT d.id, c.id AS subscription_id, c.first_due, c.finished,
               row_number() OVER (PARTITION BY c.id ORDER BY d.next_attempt_at, d.id) AS turn
        FROM candidates c
        CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE d.subscription_id = c.id AND d.state = 'pending' AND d.next_attempt_at <= sqlc.arg('now')::timestamptz
            ORDER BY d.next_attempt_at, d.id
            LIMIT greatest(0, least(sqlc.arg('cap')::int - c.in_flight, c.tokens, c.share,
                                    CASE WHEN c.circuit_state = 'closed' THEN sqlc.arg('cap')::int ELSE 1 END))
            FOR UPDATE OF d SKIP LOCKED
        ) d
    ) p
    ORDER BY p.turn, p.first_due, p.subscription_id
    LIMIT sqlc.arg('max')::int
), wanted AS (
    SELECT p.subscription_id, count(*)::int AS n, min(p.finished) AS finished, array_agg(p.id) AS ids
    FROM picked p GROUP BY p.subscription_id
), ordered AS (
    SELECT s.id, w.n, w.ids FROM subscriptions s JOIN wanted w ON w.subscription_id = s.id
    WHERE s.state = 'active' AND s.deleted_at IS NULL AND s.claimed + w.n - w.finished <= sqlc.arg('cap')::int
      AND (s.circuit_state = 'closed' OR (s.circuit_probe_at <= sqlc.arg('now')::timestamptz AND w.n = 1))
      AND coalesce(rate_tokens_at(s.rate_limit_per_second, s.rate_tokens, s.rate_counted_at, sqlc.arg('now')::timestamptz) >= w.n, true)
    ORDER BY s.id
    FOR NO KEY UPDATE OF s
), reserved AS (
    -- The guards above were checked on each row's newest version as it was locked (a row changed since
    -- this statement's snapshot is read again and checked again before it is locked), and the lock holds
    -- that version until the claim commits, so the update needs no guard of its own.
    UPDATE subscriptions s
    SET claimed = s.claimed + o.n,
        circuit_state = CASE WHEN s.circuit_state = 'closed' THEN 'closed' ELSE 'half_open' END,
        circuit_probe_at = CASE WHEN s.circuit_state = 'closed' THEN s.circuit_probe_at ELSE sqlc.arg('lease_expires_at')::timestamptz END,
        rate_tokens = rate_tokens_at(s.rate_limit_per_second, s.rate_tokens, s.rate_counted_at, sqlc.arg('now')::timestamptz) - o.n,
        rate_counted_at = CASE WHEN s.rate_limit_per_second IS NULL THEN NULL ELSE sqlc.arg('now')::timestamptz END
    FROM ordered o
    WHERE s.id = o.id
    RETURNING s.id, s.url, s.headers, s.auth, s.credentials, s.tls_certificate, s.retry_schedule, o.ids
), signing AS MATERIALIZED (
    -- The valid secrets of the claimed subscriptions, newest first, once per subscription and in one pass
    -- for the whole claim: a subquery per subscription was planned, on a small table, as a scan of all of
    -- it for each subscription (a sixth of a claim over 100 subscriptions). Materialized, because joined
    -- to the reserved subscriptions (estimated at one row) by a nested loop, inlined it was grouped again
    -- for each of them.
    SELECT ss.subscription_id, array_agg(ss.secret ORDER BY ss.created_at DESC)::text[] AS secrets
    FROM subscription_secrets ss
    WHERE ss.subscription_id IN (SELECT o.id FROM ordered o)
      AND (ss.expires_at IS NULL OR ss.expires_at > sqlc.arg('now')::timestamptz)
    GROUP BY ss.subscription_id
)
UPDATE webhook_deliveries d
SET state = 'in_flight', lease_expires_at = sqlc.arg('lease_expires_at')::timestamptz, lease_id = sqlc.arg('lease_id')::uuid,
    updated_at = sqlc.arg('now')::timestamptz
FROM reserved s LEFT JOIN signing k ON k.subscription_id = s.id CROSS JOIN LATERAL unnest(s.ids) AS p(id), events e
-- the rows are pending (locked so by picked): saying so confines the update to the queue's partitions
WHERE d.id = p.id AND d.state = 'pending' AND e.id = d.event_id
RETURNING d.id, d.tenant_id, d.event_id, d.subscription_id, d.event_type, d.attempt_count, d.total_attempts,
          d.give_up_at, d.created_at, d.traceparent, e.body, e.created_at AS event_created_at, s.url, s.headers,
          coalesce(k.secrets, '{}')::text[] AS secrets, s.auth, s.credentials, s.tls_certificate, s.retry_schedule;

-- name: CompleteAttempts :many
-- Records a batch of finished attempts and moves each delivery to the state the worker decided, in one
-- statement. The lease_id guard drops a result whose lease was lost (the row was rescued and maybe
-- claimed again): that attempt's outcome no longer owns the row.
--
-- The same statement frees the attempts' slots (subscription_finished, never the subscription row: see the
-- claim) and keeps each subscription's health, which the claim and the maintenance checks act on:
-- the run of consecutive transient failures (an answer, 2xx or permanent, ends it),
-- last success and failure, failing_since (the start of the current run of only failures), and the circuit:
-- @threshold transient failures in a row open it (next probe after @probe_base_ms); a failed probe opens it
-- again for twice as long (at most @probe_max_ms); any answer closes it. A 410 Gone disables the
-- subscription at once. Subscription rows are locked in id order, as the claim locks them, and only those
-- whose health changes: a batch of only successes on a healthy subscription whose last success was
-- recorded under a second ago leaves its row alone (so last_success_at is exact to a second), which keeps a
-- busy healthy endpoint's completions off the row its claims lock. Whether a row changes is judged on this
-- statement's snapshot; a concurrent batch that committed since then is simply ordered after this one.
WITH r AS (
    -- Several unnest calls in one select list are zipped row by row.
    SELECT unnest(sqlc.arg('delivery_ids')::uuid[]) AS delivery_id, unnest(sqlc.arg('lease_ids')::uuid[]) AS lease_id,
           unnest(sqlc.arg('started_at')::timestamptz[]) AS started_at, unnest(sqlc.arg('duration_ms')::int[]) AS duration_ms,
           unnest(sqlc.arg('status')::int[]) AS status, unnest(sqlc.arg('snippet')::text[]) AS snippet, unnest(sqlc.arg('error')::text[]) AS error,
           unnest(sqlc.arg('outcome')::text[]) AS outcome, unnest(sqlc.arg('new_state')::text[]) AS new_state,
           unnest(sqlc.arg('next_attempt_at')::timestamptz[]) AS next_attempt_at, unnest(sqlc.arg('dead_reason')::text[]) AS dead_reason,
           unnest(sqlc.arg('request_url')::text[]) AS request_url, unnest(sqlc.arg('request_headers')::jsonb[]) AS request_headers,
           -- the state every row must still be in; compared through r (see moved)
           'in_flight'::text AS from_state
), moved AS (
    UPDATE webhook_deliveries d
    SET state = r.new_state, attempt_count = d.attempt_count + 1, total_attempts = d.total_attempts + 1,
        next_attempt_at = r.next_attempt_at, lease_expires_at = NULL, lease_id = NULL,
        last_attempt_at = r.started_at, last_status = nullif(r.status, 0), last_response = r.snippet,
        last_error = nullif(r.error, ''), dead_reason = nullif(r.dead_reason, ''),
        dead_at = CASE WHEN r.new_state IN ('failed', 'expired') THEN sqlc.arg('now')::timestamptz END, updated_at = sqlc.arg('now')::timestamptz
    FROM r
    -- = ANY leads the plan to the primary key. The state is compared with r's column, not with a constant,
    -- so that the partial index of in-flight rows never matches: on statistics taken while nothing was in
    -- flight, the planner scanned it for "one" row and then scanned r once for each of the batch's rows
    -- (16 of 25 ms at 126 rows, over 100 subscriptions).
    -- The constant list confines the statement to the queue's partitions (pending and in_flight: the list
    -- partition's values) without naming the in-flight index's predicate, which would bring it back.
    WHERE d.id = ANY (sqlc.arg('delivery_ids')::uuid[]) AND d.id = r.delivery_id AND d.state = r.from_state AND d.lease_id = r.lease_id
      AND d.state IN ('pending', 'in_flight')
    RETURNING d.id, d.tenant_id, d.subscription_id, d.total_attempts
), inserted AS (
    INSERT INTO webhook_attempts (delivery_id, tenant_id, subscription_id, attempt, started_at, duration_ms, status,
                                  response_snippet, error, outcome, request_url, request_headers)
    SELECT m.id, m.tenant_id, m.subscription_id, m.total_attempts, r.started_at, r.duration_ms, nullif(r.status, 0),
           r.snippet, r.error, r.outcome, r.request_url, r.request_headers
    FROM moved m JOIN r ON r.delivery_id = m.id
    RETURNING delivery_id
), outcomes AS (
    -- Each subscription's last answer and last success in the batch come with every one of its rows, as
    -- window aggregates: joined back to a grouped copy of this CTE (estimated at one row) instead, they
    -- were planned as a nested loop that grouped the batch again for each of its rows.
    SELECT m.subscription_id, r.started_at, r.outcome, r.status,
           max(r.started_at) FILTER (WHERE r.outcome <> 'retry') OVER per_subscription AS answered_at,
           max(r.started_at) FILTER (WHERE r.outcome = 'delivered') OVER per_subscription AS ok_at
    FROM moved m JOIN r ON r.delivery_id = m.id
    WINDOW per_subscription AS (PARTITION BY m.subscription_id)
), per_sub AS (
    -- answered_at and ok_at are the same on all of a subscription's rows
    SELECT o.subscription_id, count(*)::int AS finished, o.answered_at, o.ok_at,
           -- transient failures after the batch's last answer (all of them when nothing answered)
           count(*) FILTER (WHERE o.outcome = 'retry' AND o.started_at > coalesce(o.answered_at, '-infinity'))::int AS transient,
           max(o.started_at) FILTER (WHERE o.outcome <> 'delivered') AS failed_at,
           min(o.started_at) FILTER (WHERE o.outcome <> 'delivered' AND o.started_at > coalesce(o.ok_at, '-infinity')) AS failing_from,
           bool_or(o.status = 410) AS gone
    FROM outcomes o
    GROUP BY o.subscription_id, o.answered_at, o.ok_at
), freed AS (
    INSERT INTO subscription_finished AS f (subscription_id, finished)
    SELECT subscription_id, finished FROM per_sub ORDER BY subscription_id
    ON CONFLICT (subscription_id) DO UPDATE SET finished = f.finished + excluded.finished
), changing AS (
    SELECT p.* FROM per_sub p JOIN subscriptions s ON s.id = p.subscription_id
    WHERE p.failed_at IS NOT NULL OR p.ok_at IS NULL OR p.gone
       OR s.consecutive_failures <> 0 OR s.failing_since IS NOT NULL OR s.circuit_state <> 'closed'
       OR s.last_success_at IS NULL OR s.last_success_at < p.ok_at - make_interval(0, 0, 0, 0, 0, 0, 1)
), ordered AS (
    SELECT s.id FROM subscriptions s JOIN changing p ON p.subscription_id = s.id ORDER BY s.id FOR NO KEY UPDATE OF s
), health AS (
    UPDATE subscriptions s
    SET consecutive_failures = CASE WHEN p.answered_at IS NOT NULL THEN p.transient ELSE s.consecutive_failures + p.transient END,
        last_success_at = greatest(s.last_success_at, p.ok_at),
        last_failure_at = greatest(s.last_failure_at, p.failed_at),
        failing_since = CASE WHEN p.ok_at IS NOT NULL THEN p.failing_from ELSE coalesce(s.failing_since, p.failing_from) END,
        circuit_state = CASE
            WHEN p.answered_at IS NOT NULL THEN 'closed'
            WHEN s.circuit_state = 'half_open' THEN 'open'
            WHEN s.circuit_state = 'closed' AND s.consecutive_failures + p.transient >= sqlc.arg('threshold')::int THEN 'open'
            ELSE s.circuit_state END,
        circuit_opened_at = CASE
            WHEN p.answered_at IS NOT NULL THEN NULL
            WHEN s.circuit_state = 'closed' AND s.consecutive_failures + p.transient >= sqlc.arg('threshold')::int THEN sqlc.arg('now')::timestamptz
            ELSE s.circuit_opened_at END,
        circuit_probe_ms = CASE
            WHEN p.answered_at IS NOT NULL THEN NULL
            WHEN s.circuit_state = 'half_open' THEN least(coalesce(s.circuit_probe_ms, sqlc.arg('probe_base_ms')::int) * 2, sqlc.arg('probe_max_ms')::int)
            WHEN s.circuit_state = 'closed' AND s.consecutive_failures + p.transient >= sqlc.arg('threshold')::int THEN sqlc.arg('probe_base_ms')::int
            ELSE s.circuit_probe_ms END,
        circuit_probe_at = CASE
            WHEN p.answered_at IS NOT NULL THEN NULL
            WHEN s.circuit_state = 'half_open'
                THEN sqlc.arg('now')::timestamptz + make_interval(0, 0, 0, 0, 0, 0, least(coalesce(s.circuit_probe_ms, sqlc.arg('probe_base_ms')::int) * 2, sqlc.arg('probe_max_ms')::int) / 1000.0)
            WHEN s.circuit_state = 'closed' AND s.consecutive_failures + p.transient >= sqlc.arg('threshold')::int
                THEN sqlc.arg('now')::timestamptz + make_interval(0, 0, 0, 0, 0, 0, sqlc.arg('probe_base_ms')::int / 1000.0)
            ELSE s.circuit_probe_at END,
        -- A 410 disables the subscription, except an internal tenant's (the operator's notifications), which
        -- nothing would enable again: for it the 410 fails that delivery only.
        state = CASE WHEN p.gone AND s.deleted_at IS NULL AND NOT (SELECT t.internal FROM tenants t WHERE t.id = s.tenant_id)
            THEN 'disabled' ELSE s.state END,
        disabled_reason = CASE WHEN p.gone AND s.deleted_at IS NULL AND s.state <> 'disabled'
                               AND NOT (SELECT t.internal FROM tenants t WHERE t.id = s.tenant_id)
            THEN 'The endpoint answered 410 Gone: it says it no longer exists. Resume the subscription once it is back.'
            ELSE s.disabled_reason END
    FROM changing p, ordered l
    WHERE s.id = p.subscription_id AND l.id = s.id
    RETURNING s.id
)
SELECT delivery_id FROM inserted;

-- name: ReleaseDeliveries :exec
-- Gives claimed deliveries back to the queue without an attempt (shutdown, or an outgoing rate limit
-- that would hold them past their lease), and their slots back to their subscriptions.
WITH released AS (
    UPDATE webhook_deliveries d
    SET state = 'pending', lease_expires_at = NULL, lease_id = NULL, next_attempt_at = r.next_attempt_at,
        updated_at = @now::timestamptz
    FROM (SELECT unnest(@delivery_ids::uuid[]) AS delivery_id, unnest(@lease_ids::uuid[]) AS lease_id,
                 unnest(@next_attempt_at::timestamptz[]) AS next_attempt_at) AS r
    WHERE d.id = r.delivery_id AND d.state = 'in_flight' AND d.lease_id = r.lease_id
    RETURNING d.subscription_id
), per_sub AS (
    SELECT subscription_id, count(*)::int AS n FROM released GROUP BY subscription_id
)
INSERT INTO subscription_finished AS f (subscription_id, finished)
SELECT subscription_id, n FROM per_sub ORDER BY subscription_id
ON CONFLICT (subscription_id) DO UPDATE SET finished = f.finished + excluded.finished;

-- name: RescueExpiredLeases :many
-- Puts deliveries whose worker died (lease ran out) back in the queue, due now, and their slots back to
-- their subscriptions.
WITH rescued AS (
    UPDATE webhook_deliveries
    SET state = 'pending', lease_expires_at = NULL, lease_id = NULL, next_attempt_at = @now::timestamptz,
        updated_at = @now::timestamptz
    WHERE state = 'in_flight' AND lease_expires_at < @now::timestamptz
    RETURNING id, subscription_id
), per_sub AS (
    SELECT subscription_id, count(*)::int AS n FROM rescued GROUP BY subscription_id
), freed AS (
    INSERT INTO subscription_finished AS f (subscription_id, finished)
    SELECT subscription_id, n FROM per_sub ORDER BY subscription_id
    ON CONFLICT (subscription_id) DO UPDATE SET finished = f.finished + excluded.finished
)
SELECT id, subscription_id FROM rescued;

-- name: QueueGauges :one
-- The queue's gauges for /metrics, in one statement: pending deliveries (paused subscriptions' included),
-- dead ones (not discarded), subscriptions with an open or half-open circuit, disabled subscriptions, and
-- the queue lag: how long the oldest due delivery of an active subscription has waited (found per
-- subscription through its pending index, as the claim does).
SELECT (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending')::bigint AS pending,
       (SELECT count(*) FROM webhook_deliveries WHERE state IN ('failed', 'expired') AND discarded_at IS NULL)::bigint AS dead,
       (SELECT count(*) FROM subscriptions WHERE deleted_at IS NULL AND circuit_state <> 'closed')::bigint AS circuits_open,
       (SELECT count(*) FROM subscriptions WHERE deleted_at IS NULL AND state = 'disabled')::bigint AS disabled,
       coalesce((SELECT extract(epoch FROM sqlc.arg('now')::timestamptz - min(first.next_attempt_at))
                 FROM subscriptions s
                 CROSS JOIN LATERAL (
                     SELECT d.next_attempt_at FROM webhook_deliveries d
                     WHERE d.subscription_id = s.id AND d.state = 'pending' AND d.next_attempt_at <= sqlc.arg('now')::timestamptz
                     ORDER BY d.next_attempt_at, d.id LIMIT 1
                 ) first
                 WHERE s.state = 'active' AND s.deleted_at IS NULL AND s.type = 'webhook'), 0)::float8 AS lag_seconds;

-- name: GetDelivery :one
SELECT * FROM webhook_deliveries WHERE id = @id AND tenant_id = @tenant_id;

-- name: GetDeliveryDetail :one
-- With the subscription's URL and the names of its custom headers (never their values), which a request
-- not sent yet will carry.
SELECT sqlc.embed(d), e.body, e.created_at AS event_created_at, s.url AS subscription_url,
       s.deleted_at AS subscription_deleted_at,
       ARRAY(SELECT jsonb_object_keys(s.headers) ORDER BY 1)::text[] AS subscription_header_names
FROM webhook_deliveries d
JOIN events e ON e.id = d.event_id
JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.id = @id AND d.tenant_id = @tenant_id;

-- name: ListAttempts :many
SELECT * FROM webhook_attempts WHERE delivery_id = @delivery_id AND tenant_id = @tenant_id ORDER BY attempt;

-- name: ListDeliveries :many
-- Newest first, keyset-paginated on (created_at, id). NULL filters are folded away at plan time (the pool
-- plans every statement with its parameters), so each combination uses its index; an event_id finds its
-- few rows (one per subscription) through webhook_deliveries_event_id_idx. event_type_prefix matches types
-- starting with it (invoice. matches invoice.paid). status_min..status_max is the last HTTP status (one
-- code, or a class such as 400..499); like event_type it filters the newest-first walk of the index the
-- other filters pick, and the page's LIMIT (the counts' @up_to) ends it.
SELECT * FROM webhook_deliveries
WHERE tenant_id = @tenant_id AND discarded_at IS NULL
  AND (sqlc.narg('subscription_id')::uuid IS NULL OR subscription_id = sqlc.narg('subscription_id')::uuid)
  AND (cardinality(@states::text[]) = 0 OR state = ANY (@states::text[]))
  AND (sqlc.narg('retrying')::bool IS NULL OR (total_attempts > 0) = sqlc.narg('retrying')::bool)
  AND (sqlc.narg('event_id')::uuid IS NULL OR event_id = sqlc.narg('event_id')::uuid)
  AND (sqlc.narg('event_type')::text IS NULL OR event_type = sqlc.narg('event_type')::text)
  AND (sqlc.narg('event_type_prefix')::text IS NULL OR starts_with(event_type, sqlc.narg('event_type_prefix')::text))
  AND (sqlc.narg('status_min')::int IS NULL OR last_status BETWEEN sqlc.narg('status_min')::int AND sqlc.narg('status_max')::int)
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
      AND (sqlc.narg('event_id')::uuid IS NULL OR event_id = sqlc.narg('event_id')::uuid)
      AND (sqlc.narg('event_type')::text IS NULL OR event_type = sqlc.narg('event_type')::text)
      AND (sqlc.narg('event_type_prefix')::text IS NULL OR starts_with(event_type, sqlc.narg('event_type_prefix')::text))
      AND (sqlc.narg('status_min')::int IS NULL OR last_status BETWEEN sqlc.narg('status_min')::int AND sqlc.narg('status_max')::int)
      AND (sqlc.narg('since')::timestamptz IS NULL OR created_at >= sqlc.narg('since')::timestamptz)
      AND (sqlc.narg('until')::timestamptz IS NULL OR created_at < sqlc.narg('until')::timestamptz)
    LIMIT @up_to::int
) matches;

-- name: CountDeliveryStatesBySubscription :many
-- Each of several of a tenant's subscriptions' deliveries in each state now, as the lists' state tabs count
-- them (CountDeliveries with that subscription and state: pending includes retrying, dead is failed and
-- expired, discarded ones are left out), each counted up to @up_to like a tab: the health card's counts
-- and a paused subscription's "N waiting". Each count stops at @up_to matches and reads a partial index
-- of its state (pending and retrying: the subscription's own pending index), never the subscription's
-- whole history.
SELECT s.id::uuid AS subscription_id,
       (SELECT count(*) FROM (
           SELECT 1 FROM webhook_deliveries d
           WHERE d.tenant_id = @tenant_id AND d.subscription_id = s.id AND d.discarded_at IS NULL AND d.state = 'pending'
           LIMIT @up_to::int) m)::bigint AS pending,
       (SELECT count(*) FROM (
           SELECT 1 FROM webhook_deliveries d
           WHERE d.tenant_id = @tenant_id AND d.subscription_id = s.id AND d.discarded_at IS NULL AND d.state = 'pending'
             AND d.total_attempts > 0
           LIMIT @up_to::int) m)::bigint AS retrying,
       (SELECT count(*) FROM (
           SELECT 1 FROM webhook_deliveries d
           WHERE d.tenant_id = @tenant_id AND d.subscription_id = s.id AND d.discarded_at IS NULL AND d.state = 'in_flight'
           LIMIT @up_to::int) m)::bigint AS in_flight,
       (SELECT count(*) FROM (
           SELECT 1 FROM webhook_deliveries d
           WHERE d.tenant_id = @tenant_id AND d.subscription_id = s.id AND d.discarded_at IS NULL
             AND d.state IN ('failed', 'expired')
           LIMIT @up_to::int) m)::bigint AS dead
FROM unnest(@subscription_ids::uuid[]) AS s (id);

-- name: RetryDelivery :one
-- Puts a finished delivery back in the queue with a fresh schedule. Guarded by state and by the version
-- the caller read (total_attempts and updated_at, which every move changes), so of several concurrent
-- calls exactly one matches: the others find it pending, or, when the first one's retry was already sent
-- and finished, a newer version than they read (without that guard an admin's second call, not held by
-- the manual cap, re-queued the just-delivered row). @max_manual < 0 means no cap (admins). A
-- @traceparent (the retry's trace context) replaces the delivery's, so the next attempt is traced under
-- the retry; '' (tracing off) keeps the one it had.
-- A deleted subscription's delivery is never queued: no worker claims it, so it would wait for good.
UPDATE webhook_deliveries d
SET state = 'pending', attempt_count = 0,
    manual_retries = d.manual_retries + CASE WHEN @count_manual::bool THEN 1 ELSE 0 END,
    next_attempt_at = @now::timestamptz, give_up_at = @give_up_at::timestamptz, dead_reason = NULL, dead_at = NULL,
    traceparent = coalesce(nullif(@traceparent::text, ''), d.traceparent), updated_at = @now::timestamptz,
    -- a polling delivery queued again gets a new position, after every cursor, so consumers get it again
    poll_xid = CASE WHEN d.poll_xid IS NOT NULL THEN pg_current_xact_id()::text::bigint END
WHERE d.id = @id AND d.tenant_id = @tenant_id AND d.state IN ('failed', 'expired', 'delivered') AND d.discarded_at IS NULL
  AND d.total_attempts = @seen_total_attempts::int AND d.updated_at = @seen_updated_at::timestamptz
  AND (@max_manual::int < 0 OR d.manual_retries < @max_manual::int)
  AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = d.subscription_id AND s.deleted_at IS NULL)
RETURNING d.*;

-- name: RetryNowDelivery :one
-- Retry now: a retrying delivery (pending, tried before) waiting for its backoff gets its next attempt moved
-- to @now; attempts, schedule and deadline stay. Guarded by state and the version read like RetryDelivery,
-- by the same cap, and by the subscription's circuit: while it is open (or half open) nothing but the
-- probe is sent, so a retry now would change nothing and is refused without counting. @traceparent as in
-- RetryDelivery.
UPDATE webhook_deliveries d
SET next_attempt_at = least(d.next_attempt_at, @now::timestamptz),
    manual_retries = d.manual_retries + CASE WHEN @count_manual::bool THEN 1 ELSE 0 END,
    traceparent = coalesce(nullif(@traceparent::text, ''), d.traceparent), updated_at = @now::timestamptz
WHERE d.id = @id AND d.tenant_id = @tenant_id AND d.state = 'pending' AND d.total_attempts > 0 AND d.discarded_at IS NULL
  AND d.total_attempts = @seen_total_attempts::int AND d.updated_at = @seen_updated_at::timestamptz
  AND (@max_manual::int < 0 OR d.manual_retries < @max_manual::int)
  AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = d.subscription_id AND s.circuit_state = 'closed' AND s.deleted_at IS NULL)
RETURNING d.*;

-- name: GetDeliveryToRetry :one
-- A delivery as a manual retry reads it, with what the rules need of its subscription: its URL and when it
-- was deleted (a deleted subscription's delivery is never queued again), and its circuit (Retry now).
SELECT sqlc.embed(d), s.url AS subscription_url, s.deleted_at AS subscription_deleted_at, s.circuit_state, s.circuit_probe_at
FROM webhook_deliveries d
JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.id = @id AND d.tenant_id = @tenant_id;

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

-- name: DeadLetterQueuedOfDeletedSubscriptions :many
-- The waiting deliveries of deleted subscriptions that the delete did not end: queued meanwhile by a
-- publish, a manual retry or a replay that read the subscription before the delete committed, or back from
-- an attempt that was in flight (a transient failure, a lease that ran out). No worker claims them, so they
-- are dead-lettered like the delete's own (reason subscription_deleted), at most @max_rows a run. Rows a
-- claim or another transaction holds are skipped (the claim takes none of a deleted subscription's rows and
-- lets them go); the next run finds them. Across tenants: the maintenance leader runs it.
WITH waiting AS (
    SELECT w.id
    FROM subscriptions s
    CROSS JOIN LATERAL (
        SELECT d.id FROM webhook_deliveries d
        WHERE d.subscription_id = s.id AND d.state = 'pending'
        ORDER BY d.next_attempt_at, d.id
        LIMIT @max_rows::int
        FOR UPDATE OF d SKIP LOCKED
    ) w
    WHERE s.deleted_at IS NOT NULL
    LIMIT @max_rows::int
)
UPDATE webhook_deliveries d
SET state = 'failed', dead_reason = 'subscription_deleted', dead_at = @now::timestamptz, updated_at = @now::timestamptz
FROM waiting w
WHERE d.id = w.id AND d.state = 'pending'
RETURNING d.id, d.tenant_id, d.subscription_id;

-- name: DeliveryTenant :one
-- Which tenant a delivery belongs to: operators open any tenant's delivery page by its id alone.
SELECT tenant_id FROM webhook_deliveries WHERE id = @id;

-- name: ListenForDeliveries :exec
LISTEN hookline_deliveries;

-- name: RecentEventTypes :many
-- The event types among a tenant's (or one of its subscriptions') newest @up_to deliveries, for the
-- dashboard's event-type choice: an index range scan of at most @up_to entries, never the whole history.
SELECT DISTINCT r.event_type::text AS event_type FROM (
    SELECT d.event_type FROM webhook_deliveries d
    WHERE d.tenant_id = @tenant_id
      AND (sqlc.narg('subscription_id')::uuid IS NULL OR d.subscription_id = sqlc.narg('subscription_id')::uuid)
    ORDER BY d.created_at DESC, d.id DESC
    LIMIT @up_to::int
) r
ORDER BY 1;
