-- +goose Up
-- The upkeep (every 5 s on the maintenance leader) asks which history partitions changed enough to be
-- analyzed. It named them through history_partitions(), which also sizes every partition
-- (pg_total_relation_size: a stat of each of its files) only to throw the sizes away; the partition tree
-- alone names the same tables: the leaves of the three partitioned tables (the queue, the legacy
-- partitions and the time partitions).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION history_tables_to_analyze() RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text
    FROM pg_class c
    WHERE c.oid IN (SELECT t.relid FROM pg_partition_tree('webhook_deliveries') t WHERE t.isleaf
                    UNION ALL SELECT t.relid FROM pg_partition_tree('webhook_attempts') t WHERE t.isleaf
                    UNION ALL SELECT t.relid FROM pg_partition_tree('events') t WHERE t.isleaf)
      AND pg_stat_get_mod_since_analyze(c.oid) > 1000 + 0.1 * greatest(c.reltuples, 0)
    ORDER BY pg_stat_get_mod_since_analyze(c.oid) DESC
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION history_tables_to_analyze() RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text
    FROM pg_class c
    WHERE (c.relname = 'webhook_deliveries_queue' OR c.relname IN (SELECT p.name FROM history_partitions() p))
      AND pg_stat_get_mod_since_analyze(c.oid) > 1000 + 0.1 * greatest(c.reltuples, 0)
    ORDER BY pg_stat_get_mod_since_analyze(c.oid) DESC
$$;
-- +goose StatementEnd
