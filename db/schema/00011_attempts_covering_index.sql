-- +goose NO TRANSACTION
-- +goose Up
-- The health's latency percentiles and the minutes a window cuts through read attempts of one subscription
-- by time; with outcome and duration_ms in the index they read no heap page. Built CONCURRENTLY (outside a
-- transaction), so a large webhook_attempts keeps taking attempts while it builds; it replaces the index
-- on the same key, keeping its name.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_attempts_sub_started_covering_idx
    ON webhook_attempts (subscription_id, started_at) INCLUDE (outcome, duration_ms);
DROP INDEX CONCURRENTLY IF EXISTS webhook_attempts_sub_started_idx;
ALTER INDEX webhook_attempts_sub_started_covering_idx RENAME TO webhook_attempts_sub_started_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_attempts_sub_started_plain_idx ON webhook_attempts (subscription_id, started_at);
DROP INDEX CONCURRENTLY IF EXISTS webhook_attempts_sub_started_idx;
ALTER INDEX webhook_attempts_sub_started_plain_idx RENAME TO webhook_attempts_sub_started_idx;
