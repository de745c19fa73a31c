-- +goose NO TRANSACTION
-- +goose Up
-- The index diet of webhook_deliveries (performance, second round). Every update of a delivery that moves
-- its state is not heap-only, so each row version it writes adds an entry to every index whose predicate
-- the version matches. (tenant_id, state, created_at, id) matched all of them: an entry when the delivery
-- is published (pending), claimed (in_flight) and completed (delivered), three of the 18 a delivery wrote.
-- What read it is served as well by narrower indexes:
--   * pending (the lists' state filter and the operator overview's count): this index, one entry per
--     pending version (published, retried, rescued);
--   * in_flight: webhook_deliveries_in_flight_idx (never more rows than the workers' slots);
--   * failed and expired: webhook_deliveries_dead_idx;
--   * delivered, most of the table: the tenant's newest-first index with the state as a filter.
-- Built CONCURRENTLY (outside a transaction) so a large webhook_deliveries keeps taking deliveries.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_tenant_pending_idx
    ON webhook_deliveries (tenant_id, created_at DESC, id DESC) WHERE state = 'pending';
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_tenant_state_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_tenant_state_idx
    ON webhook_deliveries (tenant_id, state, created_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_tenant_pending_idx;
