-- name: LockOrderingKeys :many
-- Ordered delivery per key (migration 00030): a key's head is the only delivery of the key that may be
-- claimed; the others wait parked (pending, next_attempt_at = parked_until()). These statements release
-- the next delivery of a key once its head stops holding it.
--
-- Locks keys' rows, in key order (as the publish statement does), before AdvanceOrderingKeys reads them in
-- the same transaction. It must be a statement of its own: AdvanceOrderingKeys then runs on a snapshot
-- taken after the locks were granted, so it sees every delivery a publish of these keys parked before
-- (a publish's parked delivery and its count on the key's row commit together, and a publish after this
-- waits for the lock, then finds the head this transaction sets). In one statement the row would be read
-- at its newest version but the deliveries at the statement's older snapshot, and a delivery parked
-- meanwhile would wait for good.
SELECT k.subscription_id FROM ordering_keys k
JOIN (SELECT unnest(@subscription_ids::uuid[]) AS subscription_id, unnest(@ordering_keys::text[]) AS ordering_key) AS i
     ON k.subscription_id = i.subscription_id AND k.ordering_key = i.ordering_key
ORDER BY k.subscription_id, k.ordering_key
FOR NO KEY UPDATE OF k;

-- name: AdvanceOrderingKeys :many
-- For each key given whose head no longer holds it (delivered; dead on a subscription that skips dead
-- deliveries; discarded; or gone), makes the key's next parked delivery its head and releases it: due now,
-- with a fresh retry window as long as the one it was published with (the time it waited behind the
-- others is not held against it). A key with nothing parked is left free (head_id NULL): the next publish
-- of it goes at once. A head that still holds its key (pending, in flight, or dead on a subscription that
-- blocks) leaves the key as it is, so calling this again, or for a key that was not waiting, changes
-- nothing. Answers the released deliveries.
WITH keys AS (
    SELECT k.subscription_id, k.ordering_key, k.head_id, k.head_seq, s.on_dead
    FROM (SELECT unnest(@subscription_ids::uuid[]) AS subscription_id, unnest(@ordering_keys::text[]) AS ordering_key) AS i
    JOIN ordering_keys k ON k.subscription_id = i.subscription_id AND k.ordering_key = i.ordering_key
    JOIN subscriptions s ON s.id = k.subscription_id
), free AS (
    -- Two lookups rather than one over every state, so that each reads one partition: a head in the
    -- queue (pending, in flight), and, only where dead heads block, a dead one.
    SELECT k.subscription_id, k.ordering_key, k.head_seq FROM keys k
    WHERE k.head_id IS NULL
       OR (NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = k.head_id AND d.state IN ('pending', 'in_flight'))
           AND NOT (k.on_dead = 'block' AND EXISTS (
               SELECT 1 FROM webhook_deliveries d
               WHERE d.id = k.head_id AND d.state IN ('failed', 'expired') AND d.discarded_at IS NULL)))
), next AS (
    SELECT f.subscription_id, f.ordering_key, n.id, n.ordering_seq
    FROM free f
    LEFT JOIN LATERAL (
        SELECT d.id, d.ordering_seq FROM webhook_deliveries d
        -- from just after the head: the key's earlier entries in the index (finished, waiting to be
        -- vacuumed) are not walked again at every release, which made a key's drain quadratic
        WHERE d.subscription_id = f.subscription_id AND d.ordering_key = f.ordering_key
          AND d.ordering_seq > coalesce(f.head_seq, 0)
          AND d.state = 'pending' AND d.next_attempt_at = parked_until()
        ORDER BY d.ordering_seq
        LIMIT 1
    ) n ON true
), moved AS (
    UPDATE ordering_keys k SET head_id = n.id, head_seq = n.ordering_seq, updated_at = sqlc.arg('now')::timestamptz
    FROM next n
    WHERE k.subscription_id = n.subscription_id AND k.ordering_key = n.ordering_key
)
UPDATE webhook_deliveries d
SET next_attempt_at = sqlc.arg('now')::timestamptz, give_up_at = sqlc.arg('now')::timestamptz + (d.give_up_at - d.created_at),
    updated_at = sqlc.arg('now')::timestamptz
FROM next n
WHERE d.id = n.id AND d.state = 'pending' AND d.next_attempt_at = parked_until()
RETURNING d.id, d.subscription_id;

-- name: HeldOrderingKeysOfSubscription :many
-- The keys of a subscription that a head holds now (its on_dead changed: a dead head may no longer hold).
SELECT subscription_id, ordering_key FROM ordering_keys
WHERE tenant_id = @tenant_id AND subscription_id = @subscription_id AND head_id IS NOT NULL
ORDER BY ordering_key;

-- name: StuckOrderingKeys :many
-- Keys whose head stopped holding them at least a moment ago and were not advanced: the worker advances a
-- key right after its head's outcome is recorded, in a transaction of its own, so a process that stopped
-- between the two leaves the key to this (the maintenance leader's). Across tenants.
SELECT k.subscription_id, k.ordering_key
FROM ordering_keys k
JOIN subscriptions s ON s.id = k.subscription_id
WHERE k.head_id IS NOT NULL AND k.updated_at < @before::timestamptz
  AND NOT EXISTS (
        SELECT 1 FROM webhook_deliveries d
        WHERE d.id = k.head_id AND d.discarded_at IS NULL
          AND (d.state IN ('pending', 'in_flight') OR (d.state IN ('failed', 'expired') AND s.on_dead = 'block')))
ORDER BY k.subscription_id, k.ordering_key
LIMIT @max_keys::int;

-- name: ReleaseParkedOfSubscription :execrows
-- A subscription no longer ordered: everything parked goes now, and its keys are forgotten (ordering
-- starts afresh if it is ordered again). Run after DeleteOrderingKeysOfSubscription, in its transaction,
-- so a publish that parked a delivery meanwhile (it held a key's row) is seen.
UPDATE webhook_deliveries
SET next_attempt_at = sqlc.arg('now')::timestamptz, give_up_at = sqlc.arg('now')::timestamptz + (give_up_at - created_at),
    ordering_seq = NULL, updated_at = sqlc.arg('now')::timestamptz
WHERE subscription_id = @subscription_id AND tenant_id = @tenant_id AND state = 'pending'
  AND ordering_seq IS NOT NULL AND next_attempt_at = parked_until();

-- name: DeleteOrderingKeysOfSubscription :execrows
DELETE FROM ordering_keys WHERE subscription_id = @subscription_id AND tenant_id = @tenant_id;

-- name: ListBlockedKeys :many
-- An ordered subscription's keys held by a dead head (on_dead = 'block'), by key, after @after_key.
-- waiting counts the key's deliveries behind the head (every later one is parked).
SELECT k.ordering_key, k.head_id::uuid AS head_id, d.dead_at, (k.published - k.head_seq)::bigint AS waiting,
       d.event_type, d.state, d.dead_reason, d.last_status
FROM ordering_keys k
JOIN subscriptions s ON s.id = k.subscription_id AND s.tenant_id = k.tenant_id
JOIN webhook_deliveries d ON d.id = k.head_id AND d.tenant_id = k.tenant_id
WHERE k.tenant_id = @tenant_id AND k.subscription_id = @subscription_id AND k.head_id IS NOT NULL
  AND s.on_dead = 'block' AND d.state IN ('failed', 'expired') AND d.discarded_at IS NULL
  AND k.ordering_key > @after_key::text
ORDER BY k.ordering_key
LIMIT @max_keys::int;

-- name: HeadsOfKeys :many
-- The deliveries that hold the keys given (what a parked delivery of each key waits for).
SELECT k.subscription_id, k.ordering_key, k.head_id::uuid AS head_id
FROM ordering_keys k
JOIN (SELECT unnest(@subscription_ids::uuid[]) AS subscription_id, unnest(@ordering_keys::text[]) AS ordering_key) AS i
     ON k.subscription_id = i.subscription_id AND k.ordering_key = i.ordering_key
WHERE k.tenant_id = @tenant_id AND k.head_id IS NOT NULL;

-- name: PruneIdleOrderingKeys :execrows
-- Forgets keys nobody holds that were last used before @before, and every key of a deleted subscription
-- (whose waiting deliveries were dead-lettered with it), at most @max_keys a run: a key is a row for as
-- long as it is used, not for ever. A publish of a key forgotten meanwhile starts it afresh (nothing of it
-- waits). A key a publish takes meanwhile is not deleted: the row is read again once its lock is free, and
-- held then. Across tenants: the maintenance leader runs it.
DELETE FROM ordering_keys k
WHERE (k.subscription_id, k.ordering_key) IN (
    SELECT i.subscription_id, i.ordering_key FROM ordering_keys i
    WHERE (i.head_id IS NULL AND i.updated_at < @before::timestamptz)
       OR i.subscription_id IN (SELECT s.id FROM subscriptions s WHERE s.deleted_at IS NOT NULL)
    LIMIT @max_keys::int
) AND (k.head_id IS NULL OR k.subscription_id IN (SELECT s.id FROM subscriptions s WHERE s.deleted_at IS NOT NULL));

-- name: KeyHeldByDeadHead :one
-- How many deliveries wait behind a dead delivery that holds its ordering key (on_dead block); no row when
-- it does not hold it.
SELECT (k.published - k.head_seq)::bigint AS waiting
FROM ordering_keys k
JOIN subscriptions s ON s.id = k.subscription_id AND s.tenant_id = k.tenant_id
WHERE k.tenant_id = @tenant_id AND k.subscription_id = @subscription_id AND k.ordering_key = @ordering_key
  AND k.head_id = @head_id::uuid AND s.on_dead = 'block';
