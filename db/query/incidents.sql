-- name: OpenIncidents :many
-- Opens an incident for up to @max_rows live subscriptions whose attempts have only failed since before
-- @cutoff (now - HOOKLINE_INCIDENT_AFTER) and that have none open (the caller repeats while it gets
-- @max_rows: one shared receiver's outage may open thousands). The unique index on open incidents makes this
-- safe to run from several processes at once: one insert wins, the others do nothing.
INSERT INTO incidents (tenant_id, subscription_id, failing_since, opened_at)
SELECT s.tenant_id, s.id, s.failing_since, sqlc.arg('now')::timestamptz
FROM subscriptions s
WHERE s.failing_since < sqlc.arg('cutoff')::timestamptz AND s.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM incidents i WHERE i.subscription_id = s.id AND i.ended_at IS NULL)
ORDER BY s.id
LIMIT sqlc.arg('max_rows')::int
ON CONFLICT DO NOTHING
RETURNING *;

-- name: EndIncidents :many
-- Ends up to @max_rows open incidents whose subscription has had a 2xx since (failing_since cleared, or a
-- newer run of failures began), or was deleted.
UPDATE incidents i SET ended_at = sqlc.arg('now')::timestamptz
FROM (SELECT o.id FROM incidents o JOIN subscriptions s ON s.id = o.subscription_id
      WHERE o.ended_at IS NULL
        AND (s.failing_since IS NULL OR s.failing_since > o.failing_since OR s.deleted_at IS NOT NULL)
      ORDER BY o.id
      LIMIT sqlc.arg('max_rows')::int) due
WHERE i.id = due.id AND i.ended_at IS NULL
RETURNING i.*;

-- name: ClaimIncidentDaySteps :many
-- The 24 h step of up to @max_rows incidents still open a day after they opened, each claimed once.
UPDATE incidents SET day_notified_at = sqlc.arg('now')::timestamptz
WHERE id IN (SELECT o.id FROM incidents o
             WHERE o.ended_at IS NULL AND o.day_notified_at IS NULL AND o.opened_at <= sqlc.arg('day_ago')::timestamptz
             ORDER BY o.id
             LIMIT sqlc.arg('max_rows')::int)
  AND ended_at IS NULL AND day_notified_at IS NULL
RETURNING *;

-- name: ClaimIncidentExpiringSteps :many
-- The "before the first delivery expires" step of up to @max_rows incidents: the earliest give_up_at of the
-- subscription's waiting deliveries is less than @warn_before away. Claimed once per incident. A delivery
-- parked behind its ordering key's head does not count: it cannot expire while it waits (its retry window
-- starts when its turn comes).
WITH due AS (
    SELECT i.id, (SELECT min(d.give_up_at) FROM webhook_deliveries d
                  WHERE d.subscription_id = i.subscription_id AND d.state IN ('pending', 'in_flight')
                    AND d.next_attempt_at < parked_until()) AS first_expiry
    FROM incidents i
    WHERE i.ended_at IS NULL AND i.expiring_notified_at IS NULL
), picked AS (
    SELECT due.id, due.first_expiry FROM due
    WHERE due.first_expiry < sqlc.arg('warn_before')::timestamptz
    ORDER BY due.id
    LIMIT sqlc.arg('max_rows')::int
)
UPDATE incidents i SET expiring_notified_at = sqlc.arg('now')::timestamptz
FROM picked
WHERE i.id = picked.id AND i.expiring_notified_at IS NULL
RETURNING i.*, picked.first_expiry::timestamptz AS first_expiry;

-- name: ClaimIncidentExpiredSteps :many
-- The "what was lost" step of up to @max_rows incidents: deliveries of the subscription expired during the
-- incident, the first of them at least @settle ago (so one summary covers a burst). Claimed once per
-- incident, with the count.
WITH lost AS (
    SELECT i.id, count(*)::int AS n, min(d.dead_at) AS first_dead
    FROM incidents i
    JOIN webhook_deliveries d ON d.subscription_id = i.subscription_id AND d.state = 'expired'
                             AND d.dead_at >= i.failing_since
    WHERE i.ended_at IS NULL AND i.expired_notified_at IS NULL
    GROUP BY i.id
), picked AS (
    SELECT lost.id, lost.n FROM lost
    WHERE lost.first_dead <= sqlc.arg('settled_before')::timestamptz
    ORDER BY lost.id
    LIMIT sqlc.arg('max_rows')::int
)
UPDATE incidents i SET expired_notified_at = sqlc.arg('now')::timestamptz, expired_count = picked.n
FROM picked
WHERE i.id = picked.id AND i.expired_notified_at IS NULL
RETURNING i.*;

-- name: ExpiredEventsOfIncident :many
-- The last few events whose deliveries expired during an incident, for its summary.
SELECT d.event_id, d.event_type, d.dead_at::timestamptz AS dead_at
FROM webhook_deliveries d
WHERE d.subscription_id = sqlc.arg('subscription_id') AND d.state = 'expired' AND d.dead_at >= sqlc.arg('since')::timestamptz
ORDER BY d.dead_at DESC, d.id DESC
LIMIT sqlc.arg('max_rows')::int;

-- name: IncidentWaiting :one
-- How many deliveries of a subscription wait, and when the first of them expires ('epoch' when none wait:
-- the caller reads it as none; deliveries parked behind their ordering key's head do not expire while
-- they wait).
SELECT count(*)::int AS waiting,
       coalesce(min(give_up_at) FILTER (WHERE next_attempt_at < parked_until()), 'epoch')::timestamptz AS first_expiry
FROM webhook_deliveries
WHERE subscription_id = sqlc.arg('subscription_id') AND state IN ('pending', 'in_flight');

-- name: OpenIncidentsOfTenant :many
-- A tenant's open incidents with their subscriptions, for the dashboard's banner.
SELECT sqlc.embed(i), s.url, s.description
FROM incidents i JOIN subscriptions s ON s.id = i.subscription_id
WHERE i.tenant_id = sqlc.arg('tenant_id') AND i.ended_at IS NULL
ORDER BY i.opened_at;

-- name: IncidentsOfSubscription :many
-- A subscription's incidents, newest first.
SELECT * FROM incidents
WHERE tenant_id = sqlc.arg('tenant_id') AND subscription_id = sqlc.arg('subscription_id')
ORDER BY opened_at DESC
LIMIT sqlc.arg('max_rows')::int;

-- name: TenantUserEmails :many
-- Every dashboard user of a tenant: the recipients of its incident emails.
SELECT email FROM users WHERE tenant_id = sqlc.arg('tenant_id') ORDER BY email;

-- name: EnqueueNotification :exec
INSERT INTO notifications (tenant_id, incident_id, kind, recipient, data, next_attempt_at)
VALUES (sqlc.arg('tenant_id'), sqlc.narg('incident_id'), sqlc.arg('kind'), sqlc.arg('recipient'), sqlc.arg('data'),
        sqlc.arg('now')::timestamptz);

-- name: ClaimDisabledNotices :many
-- Up to @max_rows subscriptions disabled (410 or auto-disable) that the operator has not been told about;
-- claimed once. The rows are locked in id order first, as the claim, the completions and auto-disable lock
-- them: updated in scan order, several rows at once could deadlock with a completion holding some of them.
WITH ordered AS (
    SELECT id FROM subscriptions
    WHERE state = 'disabled' AND deleted_at IS NULL AND disabled_notified_at IS NULL
    ORDER BY id
    LIMIT sqlc.arg('max_rows')::int
    FOR NO KEY UPDATE
)
UPDATE subscriptions s SET disabled_notified_at = sqlc.arg('now')::timestamptz
FROM ordered o
WHERE s.id = o.id AND s.state = 'disabled' AND s.deleted_at IS NULL AND s.disabled_notified_at IS NULL
RETURNING s.id, s.tenant_id, s.url, s.disabled_reason;

-- name: LockOperatorWatermark :one
-- A watermark's row, locked until the transaction ends so that two processes never report the same span;
-- made at @until on first use (nothing before a first use is reported).
INSERT INTO operator_watermarks AS w (name, until) VALUES (sqlc.arg('name'), sqlc.arg('until')::timestamptz)
ON CONFLICT (name) DO UPDATE SET name = w.name
RETURNING w.until, w.reporting_until, w.reporting_after;

-- name: SetOperatorWatermark :exec
-- Where a watermark's report stands: reported up to @until, and the window (@until, @reporting_until] under
-- way after subscription @reporting_after (both NULL when no window is under way).
UPDATE operator_watermarks
SET until = sqlc.arg('until')::timestamptz, reporting_until = sqlc.narg('reporting_until')::timestamptz,
    reporting_after = sqlc.narg('reporting_after')::uuid
WHERE name = sqlc.arg('name');

-- name: ExhaustedSince :many
-- Deliveries that expired in (@since, @until], counted per subscription (for deliveries.exhausted): up to
-- @max_rows subscriptions, in id order, after @after_subscription (the nil uuid to start).
SELECT d.tenant_id, d.subscription_id, s.url, count(*)::int AS expired
FROM webhook_deliveries d JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.state = 'expired' AND d.dead_at > sqlc.arg('since')::timestamptz AND d.dead_at <= sqlc.arg('until')::timestamptz
  AND d.subscription_id > sqlc.arg('after_subscription')::uuid
GROUP BY d.tenant_id, d.subscription_id, s.url
ORDER BY d.subscription_id
LIMIT sqlc.arg('max_rows')::int;

-- name: InternalTenant :one
SELECT * FROM tenants WHERE internal AND name = sqlc.arg('name') ORDER BY created_at LIMIT 1;

-- name: CreateInternalTenant :one
INSERT INTO tenants (name, internal) VALUES (sqlc.arg('name'), true) RETURNING *;

-- name: GetSubscriptionAny :one
-- A subscription by id alone, deleted or not: incident messages name the endpoint that failed.
SELECT * FROM subscriptions WHERE id = sqlc.arg('id');

-- name: OperatorSubscriptionStatus :one
-- The operator notifications' subscription as /admin shows it: its state and circuit, since when it has
-- only failed, its newest failed attempt (last_error_at 'epoch' when none) and its dead deliveries (at
-- most @up_to counted).
SELECT s.id, s.url, s.state, s.disabled_reason, s.circuit_state, s.circuit_opened_at, s.failing_since,
       coalesce((SELECT CASE WHEN a.status IS NOT NULL THEN 'HTTP ' || a.status::text ELSE a.error END
                 FROM webhook_attempts a
                 WHERE a.subscription_id = s.id AND a.outcome <> 'delivered'
                 ORDER BY a.started_at DESC LIMIT 1), '')::text AS last_error,
       coalesce((SELECT a.started_at FROM webhook_attempts a
                 WHERE a.subscription_id = s.id AND a.outcome <> 'delivered'
                 ORDER BY a.started_at DESC LIMIT 1), 'epoch')::timestamptz AS last_error_at,
       (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d
                              WHERE d.subscription_id = s.id AND d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
                              LIMIT sqlc.arg('up_to')::int) x)::int AS dead
FROM subscriptions s
WHERE s.tenant_id = sqlc.arg('tenant_id') AND s.deleted_at IS NULL
ORDER BY s.created_at
LIMIT 1;

-- name: RecordIncidentOperatorEvent :exec
-- The operator notification of an incident step, written in the transaction that claimed the step.
INSERT INTO incident_operator_events (incident_id, kind, event_id) VALUES (sqlc.arg('incident_id'), sqlc.arg('kind'), sqlc.arg('event_id'))
ON CONFLICT (incident_id, kind) DO NOTHING;

-- name: IncidentStepEmails :many
-- What the emails of each step of these incidents came to: sent (and when the last went), still queued or
-- retrying (with the newest error), or set aside (never to be sent: no mail server, or given up).
SELECT n.incident_id::uuid AS incident_id, n.kind,
       count(*) FILTER (WHERE n.sent_at IS NOT NULL)::int AS sent,
       coalesce(max(n.sent_at), 'epoch')::timestamptz AS last_sent_at,
       count(*) FILTER (WHERE n.sent_at IS NULL AND n.next_attempt_at <> 'infinity')::int AS pending,
       count(*) FILTER (WHERE n.sent_at IS NULL AND n.next_attempt_at = 'infinity')::int AS set_aside,
       coalesce(max(n.last_error) FILTER (WHERE n.sent_at IS NULL), '')::text AS last_error
FROM notifications n
WHERE n.incident_id = ANY (sqlc.arg('incident_ids')::uuid[])
GROUP BY n.incident_id, n.kind;

-- name: IncidentStepOperatorDeliveries :many
-- The operator notification of each step of these incidents and where its delivery is (state '' when the
-- event is gone, or matched no subscription).
SELECT o.incident_id, o.kind, coalesce(d.state, '')::text AS state, coalesce(d.last_attempt_at, 'epoch')::timestamptz AS last_attempt_at
FROM incident_operator_events o
LEFT JOIN LATERAL (SELECT w.state, w.last_attempt_at FROM webhook_deliveries w WHERE w.event_id = o.event_id LIMIT 1) d ON true
WHERE o.incident_id = ANY (sqlc.arg('incident_ids')::uuid[]);

-- name: ClaimCertificateExpiryNotices :many
-- Up to @max_rows live subscriptions whose client certificate expires before @notice_before (now plus the
-- notice window) and whose tenant and operator have not been told; claimed once per certificate (a new
-- certificate clears certificate_expiry_notified_at). The rows are locked in id order first, as the other
-- claims lock subscriptions; FOR NO KEY UPDATE leaves deliveries free to be written meanwhile (their
-- foreign key takes a key-share lock), and SKIP LOCKED passes by a row a completion holds: the next check
-- takes it.
WITH due AS (
    SELECT id FROM subscriptions
    WHERE tls_certificate_not_after IS NOT NULL AND deleted_at IS NULL
      AND tls_certificate_not_after <= sqlc.arg('notice_before')::timestamptz
      AND certificate_expiry_notified_at IS NULL
    ORDER BY id
    LIMIT sqlc.arg('max_rows')::int
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE subscriptions s SET certificate_expiry_notified_at = sqlc.arg('now')::timestamptz
FROM due
WHERE s.id = due.id AND s.deleted_at IS NULL AND s.certificate_expiry_notified_at IS NULL
RETURNING s.id, s.tenant_id, s.url, s.description, coalesce(s.tls_certificate_subject, '')::text AS subject,
          s.tls_certificate_not_after::timestamptz AS not_after;
