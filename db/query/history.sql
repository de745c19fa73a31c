-- The delivery history's time partitions (internal/history). The partitions themselves are made by
-- history_make_partitions and listed by history_partitions (db/schema/00026_history_partitions.sql): their
-- statements name tables built at run time, which only PL/pgSQL can.

-- name: MakeHistoryPartitions :one
-- Makes the partitions of events, webhook_attempts and webhook_deliveries_finished up to the first interval
-- that starts after horizon; returns how many intervals it made.
SELECT history_make_partitions(make_interval(secs => @step_seconds::float8), @horizon::timestamptz)::int AS made;

-- name: ListHistoryPartitions :many
-- Every time partition of the history, oldest first per table. The legacy partition (every id before the
-- cut-over) has no start: legacy is true and starts_at the epoch.
SELECT p.parent::text AS parent, p.name::text AS name, (p.starts_at IS NULL)::bool AS legacy,
       coalesce(p.starts_at, 'epoch')::timestamptz AS starts_at, p.ends_at::timestamptz AS ends_at, p.bytes::bigint AS bytes
FROM history_partitions() p
ORDER BY 1, 4;

-- name: CompactHistoryPartition :one
-- Replaces the time partitions named <table>_<part> by what is still kept of them, or drops them when
-- nothing is (history_compact); returns 'dropped', 'compacted' or 'kept'.
SELECT history_compact(@part::text, @keep_delivered_after::timestamptz)::text AS outcome;

-- name: HistoryCutover :one
-- The cut-over: every id before it is in the legacy partitions (the tables as they were before the
-- history was partitioned), which retention sweeps row by row.
SELECT legacy_until FROM history_cutover;

-- name: QueueChurn :one
-- The queue partition's dead row versions and live rows as PostgreSQL's statistics count them: every
-- delivery leaves the queue by a delete (moving to its time partition), so after a busy while most of its
-- pages and index entries are dead until a vacuum, and every claim and publish reads past them.
SELECT pg_stat_get_dead_tuples('webhook_deliveries_queue'::regclass)::bigint AS dead,
       pg_stat_get_live_tuples('webhook_deliveries_queue'::regclass)::bigint AS live;

-- name: VacuumQueue :exec
-- Vacuums the queue partition (its heap and indexes, which are small: the queue's own size) and refreshes
-- its statistics, so the planner's estimates and the plans cached on them follow what is waiting now.
VACUUM (ANALYZE) webhook_deliveries_queue;

-- name: HistoryTablesToAnalyze :many
-- The history's tables whose statistics are out of date (history_tables_to_analyze).
SELECT t::text AS name FROM history_tables_to_analyze() AS t;

-- name: AnalyzeHistoryTable :exec
SELECT history_analyze(@name::text);

-- name: OldestHistoryDelivery :one
-- When the oldest finished delivery kept was made (the time in its id): how far behind retention is, for
-- the operator (/admin, /metrics), across tenants. Waiting deliveries are not history and are left out
-- (the queue's partition is pruned). In id order the plan reads the first entry of each partition's primary
-- key and stops: one index probe per partition, however many rows they hold. No row: no finished delivery.
SELECT uuid_v7_time(id)::timestamptz AS made_at
FROM webhook_deliveries
WHERE state IN ('delivered', 'failed', 'expired')
ORDER BY id
LIMIT 1;

-- name: StalestDelivered :one
-- The last attempt of the delivered delivery kept longest since it: retention deletes delivered deliveries
-- HOOKLINE_RETENTION_DELIVERED after their last attempt, so this says how far behind it is. Across tenants,
-- for the operator; in the order of each partition's index of delivered deliveries, one probe per
-- partition. No row: none is kept.
SELECT last_attempt_at::timestamptz AS last_attempt_at
FROM webhook_deliveries
WHERE state = 'delivered' AND last_attempt_at IS NOT NULL
ORDER BY last_attempt_at
LIMIT 1;

-- name: StalestDead :one
-- When the dead delivery kept longest since it died died: retention deletes them HOOKLINE_RETENTION_DEAD
-- after. As StalestDelivered, through each partition's index of dead deliveries.
SELECT dead_at::timestamptz AS dead_at
FROM webhook_deliveries
WHERE state IN ('failed', 'expired')
ORDER BY dead_at
LIMIT 1;

-- name: DropDetachedHistory :one
-- Drops the partitions compactions detached (history_drop_detached): their files' removal, outside the
-- locks the engine waits on. Returns how many.
SELECT history_drop_detached()::int AS dropped;
