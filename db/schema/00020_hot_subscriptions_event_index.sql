-- +goose NO TRANSACTION
-- +goose Up
-- Performance, second round: what a drain over many subscriptions paid per delivery on top of a drain over
-- one endpoint, found in a CPU profile of PostgreSQL during both (make bench's drains (a) and (c)).
--
-- 1. Every claim updates each claimed subscription's row (its slots and rate-limit tokens) and every
--    completion its subscription_finished row. None of those columns is indexed, so the updates can be
--    heap-only (HOT), but only when the new version fits on the row's page: full pages put four in five of
--    them elsewhere (measured: 2,072 of 10,454 HOT in a drain over 100 subscriptions), each adding index
--    entries, and the subscriptions table grew from 11 to 191 pages in one drain, which every claim then
--    reads. Pages filled to 30 % (subscriptions) and 20 % (subscription_finished, tiny rows) keep room for
--    the versions written while older ones are still visible to running statements: 99.9 % HOT, 11 pages.
--    This applies to pages written from now on; rows move to such pages as they are updated.
ALTER TABLE subscriptions SET (fillfactor = 30);
ALTER TABLE subscription_finished SET (fillfactor = 20);

-- 2. Each claim and completion writes a new entry for every delivery in every index of webhook_deliveries
--    (its state is in their predicates, so no state change is heap-only). In the index on event_id alone
--    an event sent to 100 subscriptions is one key with 100 row pointers, and the entries a batch adds all
--    land on those few keys: PostgreSQL then searches them for dead versions to make room, reading their
--    heap pages (heap_index_delete_tuples, the largest difference between the two drains' profiles). With
--    the delivery's id after event_id every key is one delivery and its versions, as with one subscription.
--    Lookups by event (the deliveries of an event, a repeated Idempotency-Key's answer, deleting an event)
--    read it by its first column as before. Built CONCURRENTLY (outside a transaction) so a large
--    webhook_deliveries keeps taking deliveries.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_event_id_idx ON webhook_deliveries (event_id, id);
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_event_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_event_idx ON webhook_deliveries (event_id);
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_event_id_idx;
ALTER TABLE subscription_finished RESET (fillfactor);
ALTER TABLE subscriptions RESET (fillfactor);
