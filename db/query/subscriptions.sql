-- name: CreateSubscription :one
INSERT INTO subscriptions (tenant_id, url, description, event_types, headers, rate_limit_per_second,
                           auth, credentials, tls_certificate, tls_certificate_subject, tls_certificate_not_after,
                           filter, retry_schedule, ordered, on_dead)
VALUES (@tenant_id, @url, @description, @event_types, @headers, @rate_limit_per_second,
        @auth, @credentials, @tls_certificate, @tls_certificate_subject, @tls_certificate_not_after,
        @filter, @retry_schedule, @ordered, @on_dead)
RETURNING *;

-- name: AddSubscriptionSecret :exec
INSERT INTO subscription_secrets (subscription_id, secret) VALUES (@subscription_id, @secret);

-- name: ExpireSubscriptionSecrets :exec
-- Called on rotation, before the new secret is added: every current secret keeps signing until expires_at.
UPDATE subscription_secrets SET expires_at = @expires_at
WHERE subscription_id = @subscription_id AND (expires_at IS NULL OR expires_at > @expires_at);

-- name: GetSubscription :one
SELECT * FROM subscriptions WHERE id = @id AND tenant_id = @tenant_id AND deleted_at IS NULL;

-- name: SubscriptionNames :many
-- What pages call some of a tenant's subscriptions, deleted ones included (the activity log names the
-- subscriptions its entries are about, also once they are gone).
SELECT id, url, description, deleted_at FROM subscriptions WHERE tenant_id = @tenant_id AND id = ANY(@ids::uuid[]);

-- name: ListSubscriptions :many
SELECT * FROM subscriptions WHERE tenant_id = @tenant_id AND deleted_at IS NULL ORDER BY created_at, id;

-- name: UpdateSubscription :one
-- PATCH in one statement: a NULL argument leaves its column as the row has it now, so two concurrent
-- PATCHes of different fields both stick (a read-then-write would put back the other's old value).
-- clear_rate_limit removes the limit (rate_limit_per_second: null or 0).
UPDATE subscriptions
SET url = coalesce(sqlc.narg('url'), url),
    description = coalesce(sqlc.narg('description'), description),
    event_types = coalesce(sqlc.narg('event_types')::text[], event_types),
    headers = coalesce(sqlc.narg('headers')::jsonb, headers),
    rate_limit_per_second = CASE WHEN sqlc.arg('clear_rate_limit')::bool THEN NULL
                                 ELSE coalesce(sqlc.narg('rate_limit_per_second'), rate_limit_per_second) END,
    -- the fields below are worked out whole by the caller from the row it locked (secrets kept or
    -- replaced), so each is set or left as it is
    auth = CASE WHEN sqlc.arg('set_auth')::bool THEN sqlc.narg('auth')::jsonb ELSE auth END,
    credentials = coalesce(sqlc.narg('credentials')::jsonb, credentials),
    tls_certificate = CASE WHEN sqlc.arg('set_certificate')::bool THEN sqlc.narg('tls_certificate')::text ELSE tls_certificate END,
    tls_certificate_subject = CASE WHEN sqlc.arg('set_certificate')::bool THEN sqlc.narg('tls_certificate_subject')::text ELSE tls_certificate_subject END,
    tls_certificate_not_after = CASE WHEN sqlc.arg('set_certificate')::bool THEN sqlc.narg('tls_certificate_not_after')::timestamptz ELSE tls_certificate_not_after END,
    certificate_expiry_notified_at = CASE WHEN sqlc.arg('set_certificate')::bool THEN NULL ELSE certificate_expiry_notified_at END,
    filter = CASE WHEN sqlc.arg('set_filter')::bool THEN sqlc.narg('filter')::jsonb ELSE filter END,
    retry_schedule = CASE WHEN sqlc.arg('set_retry_schedule')::bool THEN sqlc.narg('retry_schedule')::int[] ELSE retry_schedule END,
    ordered = coalesce(sqlc.narg('ordered')::bool, ordered),
    on_dead = coalesce(sqlc.narg('on_dead')::text, on_dead),
    updated_at = now()
WHERE id = sqlc.arg('id') AND tenant_id = sqlc.arg('tenant_id') AND deleted_at IS NULL
RETURNING *;

-- name: SetSubscriptionState :one
-- Moves a subscription between states; from_states guards the transition. Resuming a disabled
-- subscription is a fresh start: the circuit closes and the failure run is forgotten.
UPDATE subscriptions
SET state = sqlc.arg('state'), disabled_reason = sqlc.arg('disabled_reason'), updated_at = now(),
    circuit_state = CASE WHEN state = 'disabled' AND sqlc.arg('state') = 'active' THEN 'closed' ELSE circuit_state END,
    circuit_opened_at = CASE WHEN state = 'disabled' AND sqlc.arg('state') = 'active' THEN NULL ELSE circuit_opened_at END,
    circuit_probe_at = CASE WHEN state = 'disabled' AND sqlc.arg('state') = 'active' THEN NULL ELSE circuit_probe_at END,
    circuit_probe_ms = CASE WHEN state = 'disabled' AND sqlc.arg('state') = 'active' THEN NULL ELSE circuit_probe_ms END,
    consecutive_failures = CASE WHEN state = 'disabled' AND sqlc.arg('state') = 'active' THEN 0 ELSE consecutive_failures END,
    failing_since = CASE WHEN state = 'disabled' AND sqlc.arg('state') = 'active' THEN NULL ELSE failing_since END,
    disabled_notified_at = CASE WHEN sqlc.arg('state') = 'active' THEN NULL ELSE disabled_notified_at END
WHERE id = sqlc.arg('id') AND tenant_id = sqlc.arg('tenant_id') AND deleted_at IS NULL
  AND state = ANY(sqlc.arg('from_states')::text[])
RETURNING *;

-- name: DisableFailingSubscriptions :many
-- Auto-disable: active subscriptions whose attempts have only failed since before @failing_before.
-- failing_since is kept by the statement that records attempts (CompleteAttempts). The rows are locked in
-- id order first, as the claim and the completions lock them: updated in scan order, they deadlocked with
-- a claim holding some of them. Internal tenants' subscriptions (the operator's notifications) are never
-- disabled: nothing would enable them again.
WITH ordered AS (
    SELECT id FROM subscriptions
    WHERE state = 'active' AND deleted_at IS NULL AND failing_since < sqlc.arg('failing_before')::timestamptz
      AND tenant_id NOT IN (SELECT t.id FROM tenants t WHERE t.internal)
    ORDER BY id FOR NO KEY UPDATE
)
UPDATE subscriptions s
SET state = 'disabled', updated_at = sqlc.arg('now')::timestamptz,
    disabled_reason = 'Every attempt has failed since ' || to_char(s.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')
        || ' UTC, for longer than ' || sqlc.arg('after_text')::text
        || ': disabled automatically. Fix the endpoint, then Resume to send its waiting deliveries.'
FROM ordered o
WHERE s.id = o.id AND s.state = 'active' AND s.deleted_at IS NULL AND s.failing_since < sqlc.arg('failing_before')::timestamptz
RETURNING s.id, s.tenant_id, s.url, s.failing_since;

-- name: DeleteSubscription :one
UPDATE subscriptions SET deleted_at = now(), state = 'disabled', disabled_reason = 'deleted', updated_at = now()
WHERE id = @id AND tenant_id = @tenant_id AND deleted_at IS NULL
RETURNING id;

-- name: AttemptStatsBySubscription :many
-- Endpoint health over a window, for several of a tenant's subscriptions at once: attempts and successes,
-- the newest success and failure, and the current run of failures (those after the window's last
-- success), added up from attempt_minutes for the whole minutes of the window and read from
-- webhook_attempts (index only) for the minutes it cuts through: the first one, and the one of the last
-- success. So a look costs at most 1,440 rows a day of window, however busy the endpoint. Latency
-- percentiles are those of the newest @latency_sample attempts of the window (index only, newest first).
-- Subscriptions without attempts in the window have no row.
SELECT s.id AS subscription_id, w.attempts, w.successes, lat.p50 AS latency_p50, lat.p95 AS latency_p95,
       w.last_success_at, w.last_failure_at, run.failures AS consecutive_failures
FROM subscriptions s
CROSS JOIN LATERAL (
    SELECT coalesce(sum(x.attempts), 0)::int AS attempts, coalesce(sum(x.successes), 0)::int AS successes,
           max(x.last_success_at) AS last_success_at, max(x.last_failure_at) AS last_failure_at
    FROM (
        SELECT m.attempts, m.successes, m.last_success_at, m.last_failure_at
        FROM attempt_minutes m
        WHERE m.subscription_id = s.id AND m.minute >= attempt_minute(sqlc.arg('since')::timestamptz) + interval '1 minute'
        UNION ALL
        SELECT 1, (a.outcome = 'delivered')::int,
               CASE WHEN a.outcome = 'delivered' THEN a.started_at END, CASE WHEN a.outcome <> 'delivered' THEN a.started_at END
        FROM webhook_attempts a
        WHERE a.subscription_id = s.id AND a.started_at >= sqlc.arg('since')::timestamptz
          AND a.started_at < attempt_minute(sqlc.arg('since')::timestamptz) + interval '1 minute'
    ) x
) w
CROSS JOIN LATERAL (
    SELECT (CASE WHEN w.last_success_at IS NULL THEN w.attempts - w.successes
                 ELSE (SELECT coalesce(sum(m.attempts - m.successes), 0) FROM attempt_minutes m
                       WHERE m.subscription_id = s.id AND m.minute > attempt_minute(w.last_success_at))
                    + (SELECT count(*) FROM webhook_attempts a
                       WHERE a.subscription_id = s.id AND a.started_at > w.last_success_at
                         AND a.started_at < attempt_minute(w.last_success_at) + interval '1 minute' AND a.outcome <> 'delivered')
            END)::int AS failures
) run
CROSS JOIN LATERAL (
    SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.duration_ms), 0)::float8 AS p50,
           coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY r.duration_ms), 0)::float8 AS p95
    FROM (
        SELECT a.duration_ms FROM webhook_attempts a
        WHERE a.subscription_id = s.id AND a.started_at >= sqlc.arg('since')::timestamptz
        ORDER BY a.started_at DESC
        LIMIT sqlc.arg('latency_sample')::int
    ) r
) lat
WHERE s.id = ANY (sqlc.arg('subscription_ids')::uuid[]) AND s.tenant_id = sqlc.arg('tenant_id') AND w.attempts > 0;

-- name: AttemptSeriesBySubscription :many
-- Successful and failed attempts per subscription and time bucket (@step_seconds long, counted from
-- @origin), for the health charts, added up from attempt_minutes (@origin and the step are whole minutes,
-- so each minute falls in one bucket): at most one row per minute of the range and subscription.
SELECT m.subscription_id,
       floor(extract(epoch FROM m.minute - sqlc.arg('origin')::timestamptz) / sqlc.arg('step_seconds')::float8)::int AS bucket,
       sum(m.successes)::int AS successes,
       sum(m.attempts - m.successes)::int AS failures
FROM attempt_minutes m
WHERE m.subscription_id = ANY (sqlc.arg('subscription_ids')::uuid[]) AND m.tenant_id = sqlc.arg('tenant_id')
  AND m.minute >= sqlc.arg('origin')::timestamptz
GROUP BY 1, 2 ORDER BY 1, 2;

-- name: ResendWait :one
-- How long until the subscription's resend bucket has a token, without taking one (0 when it has): the
-- dashboard disables Resend and Retry now meanwhile. One row by primary key.
SELECT greatest(0, (1 - bucket_tokens_at(sqlc.arg('per_minute')::float8, sqlc.arg('per_minute')::float8 / 60,
                                         s.resend_tokens, s.resend_counted_at, sqlc.arg('now')::timestamptz))
                   * 60 / sqlc.arg('per_minute')::float8)::float8 AS wait_seconds
FROM subscriptions s
WHERE s.id = sqlc.arg('id');

-- name: TakeResendToken :one
-- Takes one manual resend from the subscription's bucket (capacity @per_minute, refilled evenly over a
-- minute), on the row's newest version so that every process shares it. granted says whether there was
-- one; wait_seconds how long until there is.
WITH cur AS (
    SELECT s.id, bucket_tokens_at(sqlc.arg('per_minute')::float8, sqlc.arg('per_minute')::float8 / 60,
                                  s.resend_tokens, s.resend_counted_at, sqlc.arg('now')::timestamptz) AS tokens
    FROM subscriptions s
    WHERE s.id = sqlc.arg('id')
    FOR NO KEY UPDATE
), took AS (
    UPDATE subscriptions s SET resend_tokens = cur.tokens - 1, resend_counted_at = sqlc.arg('now')::timestamptz
    FROM cur WHERE s.id = cur.id AND cur.tokens >= 1
    RETURNING s.id
)
SELECT (SELECT count(*) FROM took) = 1 AS granted,
       coalesce(greatest(0, (1 - (SELECT tokens FROM cur)) * 60 / sqlc.arg('per_minute')::float8), 0)::float8 AS wait_seconds;

-- name: FailingRunAttempts :many
-- How many attempts the current run of only failures holds, for the subscriptions that are failing: all of
-- them failed, since failing_since starts the run. Added up like AttemptStatsBySubscription, from
-- attempt_minutes for whole minutes and from webhook_attempts (index only) for the first minute, so a long
-- run costs at most a row a minute.
SELECT s.id AS subscription_id,
       ((SELECT coalesce(sum(m.attempts), 0) FROM attempt_minutes m
         WHERE m.subscription_id = s.id AND m.minute >= attempt_minute(s.failing_since) + interval '1 minute')
      + (SELECT count(*) FROM webhook_attempts a
         WHERE a.subscription_id = s.id AND a.started_at >= s.failing_since
           AND a.started_at < attempt_minute(s.failing_since) + interval '1 minute'))::int AS attempts
FROM subscriptions s
WHERE s.id = ANY (sqlc.arg('subscription_ids')::uuid[]) AND s.tenant_id = sqlc.arg('tenant_id') AND s.failing_since IS NOT NULL;

-- name: SubscriptionOfTenant :one
-- Whether the id names one of the tenant's subscriptions, deleted ones included (their deliveries stay
-- listed): a list filtered by anything else says so instead of listing nothing.
SELECT EXISTS (SELECT 1 FROM subscriptions WHERE id = @id AND tenant_id = @tenant_id)::bool;

-- name: LockTenantSubscriptions :one
-- Taken before a subscription is created, so that two creates of one tenant at its limit run one after
-- the other: the second counts the first's row (CountTenantSubscriptions, a statement of its own so that
-- it sees what committed while this one waited). NO KEY UPDATE: the subscriptions' own foreign-key locks
-- (KEY SHARE) on the tenant row do not wait for it.
SELECT id FROM tenants WHERE id = @tenant_id FOR NO KEY UPDATE;

-- name: CountTenantSubscriptions :one
SELECT count(*)::int FROM subscriptions WHERE tenant_id = @tenant_id AND deleted_at IS NULL;

-- name: GetSubscriptionForUpdate :one
-- A subscription as it is before a change, locked until the change commits: the activity entry compares it
-- with the row the change leaves, and a header given without a value keeps the value stored here.
SELECT * FROM subscriptions WHERE id = @id AND tenant_id = @tenant_id AND deleted_at IS NULL FOR NO KEY UPDATE;

-- name: ValidSubscriptionSecrets :many
-- The signing secrets a subscription signs with now (as the claim picks them), newest first.
SELECT ss.secret, ss.expires_at FROM subscription_secrets ss
JOIN subscriptions s ON s.id = ss.subscription_id
WHERE ss.subscription_id = @subscription_id AND s.tenant_id = @tenant_id AND s.deleted_at IS NULL
  AND (ss.expires_at IS NULL OR ss.expires_at > sqlc.arg('now')::timestamptz)
ORDER BY ss.created_at DESC, ss.id DESC;

-- name: SubscriptionTenant :one
-- Whose a live subscription is, for operators who open any subscription by its id.
SELECT tenant_id FROM subscriptions WHERE id = @id AND deleted_at IS NULL;

-- name: TenantCertificatesExpiring :many
-- A tenant's live subscriptions whose client certificate expires by @expires_by (now plus the notice
-- window), expired ones included, soonest first: the dashboard's banner on every page of the tenant's.
SELECT id, url, description, tls_certificate_not_after::timestamptz AS not_after
FROM subscriptions
WHERE tenant_id = @tenant_id AND deleted_at IS NULL AND tls_certificate_not_after IS NOT NULL
  AND tls_certificate_not_after <= sqlc.arg('expires_by')::timestamptz
ORDER BY tls_certificate_not_after, id;
