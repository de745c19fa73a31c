-- +goose NO TRANSACTION
-- +goose Up
-- A replay's page and the audit log count the outcome of what each replay scheduled (delivered, dead again,
-- pending) from the deliveries that name it; with state in the replay index that count reads no heap page
-- once the rows are settled. Built CONCURRENTLY (outside a transaction) so a large webhook_deliveries keeps
-- taking deliveries while it builds; it replaces the index on the same key, keeping its name. state is in
-- other indexes' predicates already, so carrying it costs no HOT update.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_replay_state_idx
    ON webhook_deliveries (replay_id, created_at DESC, id DESC) INCLUDE (state) WHERE replay_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_replay_idx;
ALTER INDEX webhook_deliveries_replay_state_idx RENAME TO webhook_deliveries_replay_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_replay_plain_idx
    ON webhook_deliveries (replay_id, created_at DESC, id DESC) WHERE replay_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_replay_idx;
ALTER INDEX webhook_deliveries_replay_plain_idx RENAME TO webhook_deliveries_replay_idx;
