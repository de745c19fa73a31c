-- name: PublishEvents :many
-- Stores a batch of events (publishes that arrived together), each with one pending delivery per live
-- subscription of its tenant that wants its type, in one statement: atomic without BEGIN/COMMIT, one round
-- trip and one commit for the whole batch. Paused subscriptions get their delivery too (it waits); disabled
-- and deleted ones get none. The arrays are zipped: element i of each is event i; an empty
-- idempotency_key means none, a nil only_subscription_id means every subscription that wants the type, and
-- any other sends to that one subscription whatever its event types (the dashboard's test event). A
-- traceparent is the publish span's trace context, kept on each of the event's deliveries ('' for none:
-- tracing off).
-- The answer is one row per delivery, by event and then subscription creation order, and one row with a
-- nil delivery id for an event that matched nothing. sendable says whether the delivery's subscription is
-- active (a paused one's waits): only those are worth waking the workers for. An event whose Idempotency-Key was used before (or
-- earlier in this batch) inserts nothing, event or deliveries, and has no row at all; its caller then reads
-- the first answer (PublishedDeliveries). Keys are inserted in (tenant, key) order, so two batches that
-- share keys wait for each other instead of deadlocking.
-- A subscription wants a type when its list is empty, names the type, or names a prefix pattern that
-- covers it ("invoice.*" covers every type starting with "invoice."): wanted_by lists, for each event, its
-- type and every pattern that covers it (at most one per dot of the type), so the test against each of the
-- tenant's subscriptions is one array overlap, whatever the number of patterns.
-- Payload filters are evaluated by the caller, from its cache of the tenant's filters (internal/publish):
-- it passes, per event, the tenant's filters_version it read them at, and the subscriptions whose filter
-- the event matched (passed: their ids, comma-separated, one text per event, so that they are zipped with
-- the rest rather than joined: a join of pairs was planned on generic plans as a nested loop, or as a
-- primary-key lookup per pair, each a sixth or more of the statement with 100 filtered subscriptions). A
-- subscription with a filter gets a delivery only when it is among them; one without through the type test. An event whose tenant's filters changed since (filters_version moved) is
-- not stored at all and comes back as one row with stale = true: the caller reads the filters again and
-- publishes it again. So a filter is never applied from a stale cache.
WITH input AS (
    -- Several unnest calls in one select list are zipped row by row.
    SELECT unnest(sqlc.arg('ids')::uuid[]) AS id, unnest(sqlc.arg('tenant_ids')::uuid[]) AS tenant_id,
           unnest(sqlc.arg('event_types')::text[]) AS event_type, unnest(sqlc.arg('bodies')::bytea[]) AS body,
           unnest(sqlc.arg('idempotency_keys')::text[]) AS idempotency_key,
           unnest(sqlc.arg('request_hashes')::bytea[]) AS request_hash,
           unnest(sqlc.arg('only_subscription_ids')::uuid[]) AS only_subscription_id,
           unnest(sqlc.arg('created_at')::timestamptz[]) AS created_at, unnest(sqlc.arg('give_up_at')::timestamptz[]) AS give_up_at,
           unnest(sqlc.arg('traceparents')::text[]) AS traceparent,
           unnest(sqlc.arg('filters_versions')::bigint[]) AS filters_version,
           unnest(sqlc.arg('passed')::text[]) AS passed_list,
           unnest(sqlc.arg('ordering_keys')::text[]) AS ordering_key
), fresh AS MATERIALIZED (
    -- the events whose filters were evaluated at the tenant's current filters (see above); an unknown
    -- tenant's event goes on, to fail on the foreign key as it always has
    SELECT i.id FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = i.tenant_id AND t.filters_version <> i.filters_version)
), typed AS MATERIALIZED (
    -- Materialized: inlined, the patterns would be worked out again for every subscription row.
    SELECT i.*, ARRAY[i.event_type] || ARRAY(
               SELECT left(i.event_type, p) || '*' FROM generate_series(1, length(i.event_type)) AS p
               WHERE substr(i.event_type, p, 1) = '.') AS wanted_by,
           string_to_array(i.passed_list, ',')::uuid[] AS passed
    FROM input i
), keyed AS (
    -- An Idempotency-Key is claimed in event_idempotency (unique per tenant; events, partitioned by time,
    -- cannot hold a unique index without the event's id). DO NOTHING also skips a key's second use within
    -- this batch.
    INSERT INTO event_idempotency (tenant_id, idempotency_key, event_id)
    SELECT i.tenant_id, i.idempotency_key, i.id FROM input i
    WHERE i.idempotency_key <> '' AND i.id IN (SELECT f.id FROM fresh f)
    ORDER BY i.tenant_id, i.idempotency_key, i.id
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING event_id
), ev AS (
    INSERT INTO events (id, tenant_id, event_type, body, idempotency_key, request_hash, created_at)
    SELECT i.id, i.tenant_id, i.event_type, i.body, nullif(i.idempotency_key, ''), i.request_hash, i.created_at
    FROM input i
    WHERE (i.idempotency_key = '' AND i.id IN (SELECT f.id FROM fresh f)) OR i.id IN (SELECT k.event_id FROM keyed k)
    RETURNING id
), matching AS MATERIALIZED (
    -- Each delivery's id is made here, so that the answer is read from this CTE alone: joined back to the
    -- inserted rows by (event, subscription), the answer was planned on generic plans' one-row estimates as a
    -- nested loop, 90,000 comparisons for 3 events to 100 subscriptions (17 of the statement's 23 ms).
    SELECT uuid_v7() AS delivery_id, i.id AS event_id, i.tenant_id, i.event_type, i.created_at, i.give_up_at,
           i.traceparent, s.id AS subscription_id, s.created_at AS subscription_created_at,
           -- a polling subscription's deliveries wait to be pulled: no worker is woken for them
           s.state = 'active' AND s.type = 'webhook' AS sendable,
           -- a polling subscription's delivery gets its position: this transaction's id (00031's migration)
           CASE WHEN s.type = 'polling' THEN pg_current_xact_id()::text::bigint END AS poll_xid,
           nullif(i.ordering_key, '') AS ordering_key, s.ordered AND i.ordering_key <> '' AS in_order
    FROM ev JOIN typed i ON i.id = ev.id
    JOIN subscriptions s ON s.tenant_id = i.tenant_id AND s.deleted_at IS NULL AND s.state <> 'disabled'
         AND (s.id = i.only_subscription_id OR (i.only_subscription_id = '00000000-0000-0000-0000-000000000000'
         AND (cardinality(s.event_types) = 0 OR s.event_types && i.wanted_by)
         AND (s.filter IS NULL OR s.id = ANY(i.passed))))
), orders AS (
    -- Ordered delivery (migration 00030): the batch's deliveries per (ordered subscription, key), and the
    -- first of each, which becomes the key's head when nothing holds the key.
    SELECT m.subscription_id, m.ordering_key, m.tenant_id, count(*)::bigint AS n,
           (array_agg(m.delivery_id ORDER BY m.event_id))[1] AS first_id
    FROM matching m WHERE m.in_order
    GROUP BY m.subscription_id, m.ordering_key, m.tenant_id
), sequenced AS (
    -- The key's row is locked (in key order: two batches sharing keys wait, never deadlock) and counts the
    -- batch's deliveries; a key nobody holds is given to the batch's first. Publishes of one key therefore
    -- take their places one after the other, and their order is the order of these locks.
    INSERT INTO ordering_keys AS k (subscription_id, ordering_key, tenant_id, published, head_id, head_seq, updated_at)
    SELECT o.subscription_id, o.ordering_key, o.tenant_id, o.n, o.first_id, 1, now()
    FROM orders o ORDER BY o.subscription_id, o.ordering_key
    ON CONFLICT (subscription_id, ordering_key) DO UPDATE
    SET published = k.published + excluded.published,
        head_id = coalesce(k.head_id, excluded.head_id),
        head_seq = CASE WHEN k.head_id IS NULL THEN k.published + 1 ELSE k.head_seq END,
        updated_at = excluded.updated_at
    RETURNING k.subscription_id, k.ordering_key, k.published, k.head_id
), placed AS (
    -- each ordered delivery's ordering_seq (the batch's in event order, after the key's earlier ones), and
    -- the key's head, which it may be (due now) or wait behind (parked). Over the ordered deliveries only:
    -- a publish to unordered subscriptions sorts nothing here.
    SELECT m.delivery_id, q.head_id,
           q.published - o.n + row_number() OVER (PARTITION BY m.subscription_id, m.ordering_key ORDER BY m.event_id) AS seq
    FROM matching m
    JOIN sequenced q ON q.subscription_id = m.subscription_id AND q.ordering_key = m.ordering_key
    JOIN orders o ON o.subscription_id = m.subscription_id AND o.ordering_key = m.ordering_key
    WHERE m.in_order
), fanned AS (
    INSERT INTO webhook_deliveries (id, tenant_id, event_id, subscription_id, event_type, next_attempt_at, give_up_at,
                                    created_at, updated_at, traceparent, poll_xid, ordering_key, ordering_seq)
    SELECT m.delivery_id, m.tenant_id, m.event_id, m.subscription_id, m.event_type,
           CASE WHEN p.delivery_id IS NULL OR p.head_id = m.delivery_id THEN m.created_at ELSE parked_until() END,
           m.give_up_at, m.created_at, m.created_at, nullif(m.traceparent, ''), m.poll_xid, m.ordering_key, p.seq
    FROM matching m LEFT JOIN placed p ON p.delivery_id = m.delivery_id
    RETURNING id
)
SELECT a.event_id, a.delivery_id, a.subscription_id, a.sendable, a.stale FROM (
    SELECT ev.id AS event_id,
           coalesce(m.delivery_id, '00000000-0000-0000-0000-000000000000')::uuid AS delivery_id,
           coalesce(m.subscription_id, '00000000-0000-0000-0000-000000000000')::uuid AS subscription_id,
           coalesce(m.sendable, false)::bool AS sendable, false AS stale,
           m.subscription_created_at
    -- every row of matching is inserted (fanned: a data-modifying CTE runs whether or not it is read)
    FROM ev LEFT JOIN matching m ON m.event_id = ev.id
    UNION ALL
    SELECT i.id, '00000000-0000-0000-0000-000000000000'::uuid, '00000000-0000-0000-0000-000000000000'::uuid, false, true, NULL
    FROM input i WHERE i.id NOT IN (SELECT f.id FROM fresh f)
) a
ORDER BY a.event_id, a.subscription_created_at, a.subscription_id;

-- name: TenantFilters :many
-- A tenant's payload filters as of one moment, with the filters_version they are at (one row with a NULL
-- subscription when it has none; no row when the tenant does not exist). Deleted subscriptions are left
-- out; paused and disabled ones are not (the publish statement checks their state itself).
SELECT t.filters_version, s.id AS subscription_id, s.event_types, s.filter
FROM tenants t
LEFT JOIN subscriptions s ON s.tenant_id = t.id AND s.filter IS NOT NULL AND s.deleted_at IS NULL
WHERE t.id = @tenant_id;

-- name: BumpFiltersVersion :exec
-- A subscription's filter was set, changed or removed: publishes evaluating the old filters are refused.
UPDATE tenants SET filters_version = filters_version + 1 WHERE id = @tenant_id;

-- name: PublishedDeliveries :many
-- The deliveries a publish created, in the order its answer listed them: the answer to a publish that
-- reuses its Idempotency-Key.
SELECT d.id, d.subscription_id FROM webhook_deliveries d
JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.event_id = @event_id AND d.tenant_id = @tenant_id
ORDER BY s.created_at, s.id;

-- name: KeepPublishAnswer :exec
-- Keeps the answer of a publish with an Idempotency-Key as it is sent, in the publish's own transaction
-- after the local worker's claim (publishAndClaim): "in_flight" for the deliveries that claim took,
-- "pending" for the rest, in the answer's order. A publish that reuses the key gets this answer, not one
-- rebuilt from rows that have moved on. Nothing for an event without a key, or one this publish did not
-- store (its key was used before).
UPDATE events e SET response = jsonb_build_object(
    'id', e.id, 'event_type', e.event_type, 'created_at', e.created_at,
    'deliveries', coalesce((SELECT jsonb_agg(jsonb_build_object('id', d.id, 'subscription_id', d.subscription_id,
                                                                'state', d.state) ORDER BY s.created_at, s.id)
                            FROM webhook_deliveries d JOIN subscriptions s ON s.id = d.subscription_id
                            -- in the publish's transaction its deliveries are all in the queue's partitions
                            WHERE d.event_id = e.id AND d.tenant_id = e.tenant_id AND d.state IN ('pending', 'in_flight')), '[]'::jsonb))
WHERE e.id = @id AND e.tenant_id = @tenant_id AND e.idempotency_key IS NOT NULL;

-- name: GetEventByIdempotencyKey :one
SELECT e.* FROM event_idempotency k
JOIN events e ON e.id = k.event_id AND e.tenant_id = k.tenant_id
WHERE k.tenant_id = @tenant_id AND k.idempotency_key = @idempotency_key;

-- name: GetEvent :one
SELECT * FROM events WHERE id = @id AND tenant_id = @tenant_id;

-- name: NotifyDeliveriesReady :exec
-- Wakes idle workers; sent at commit (or after it), so they never look before the rows are visible. An
-- empty origin wakes every worker; a publish whose own process's worker was already woken names that
-- worker, whose listener skips it (Worker.Origin), and every other process's worker claims on it.
SELECT pg_notify('hookline_deliveries', @origin::text);

-- name: EventTenant :one
-- Which tenant an event belongs to: operators find any event by its id alone.
SELECT tenant_id FROM events WHERE id = @id;
