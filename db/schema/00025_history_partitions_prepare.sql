-- +goose NO TRANSACTION
-- +goose Up
-- History at scale, step 1 of 2 (00026 is step 2): what can be done while the previous release keeps
-- running, without a lock that stops it.
--
-- webhook_deliveries, webhook_attempts and events become partitioned tables in 00026. Their rows as they
-- are now stay where they are: each table becomes the first partition of its new parent, covering every id
-- up to a cut-over time (the "legacy" partition), so a populated database is not copied. Attaching a table
-- as a partition scans it to prove that its rows belong there, under a lock, unless a validated CHECK
-- constraint already proves it. The constraints are added here NOT VALID (a moment's lock, no scan) and
-- validated afterwards in their own statements, which scan under a lock that lets reads and writes go on.
-- This file runs outside a transaction for that reason (a transaction would keep the first lock through
-- the scans), so every step is written to be run again if the migration stops half way.

-- Ids (events, deliveries) are UUIDv7: their first 48 bits are the unix milliseconds of their making.
-- uuid_v7_floor(t) is the lowest uuid of t's millisecond (that prefix, the rest zero): every id made
-- before t sorts below it, as PostgreSQL compares uuids bytewise. Partition bounds are made with it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION uuid_v7_floor(at timestamptz) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (lpad(to_hex(greatest(floor(extract(epoch FROM at) * 1000), 0)::bigint), 12, '0') || '00000000000000000000')::uuid
$$;
-- +goose StatementEnd

-- uuid_v7_time(id) is the time a UUIDv7 was made (to the millisecond).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION uuid_v7_time(id uuid) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_timestamp((('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint) / 1000.0)
$$;
-- +goose StatementEnd

-- The cut-over: the start of the day after tomorrow (UTC). The legacy partitions take every id before it
-- (the rows of today and every row the previous release writes until 00026 has run); the maintenance leader
-- makes the partitions from it on. Two days ahead, so a migration that starts just before midnight still
-- has a day before any new row would fall past it. Kept in a table so that a second run of this file (and
-- 00026) use the same time.
CREATE TABLE IF NOT EXISTS history_cutover (
    legacy_until timestamptz NOT NULL,
    only_row     boolean     PRIMARY KEY DEFAULT true CHECK (only_row)
);
-- A database with no history yet (a new installation, a test's) has its cut-over at the start of today, so
-- its rows go to time partitions from the first, and its legacy partitions stay empty.
INSERT INTO history_cutover (legacy_until)
SELECT (date_trunc('day', now() AT TIME ZONE 'UTC')
        + CASE WHEN EXISTS (SELECT FROM events) OR EXISTS (SELECT FROM webhook_deliveries) THEN interval '2 days'
               ELSE interval '0' END) AT TIME ZONE 'UTC'
ON CONFLICT (only_row) DO NOTHING;

-- +goose StatementBegin
DO $$
DECLARE
    u uuid := (SELECT uuid_v7_floor(legacy_until) FROM history_cutover);
BEGIN
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conname = 'events_legacy_range') THEN
        EXECUTE format('ALTER TABLE events ADD CONSTRAINT events_legacy_range CHECK (id < %L::uuid) NOT VALID', u);
    END IF;
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conname = 'webhook_attempts_legacy_range') THEN
        EXECUTE format('ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_legacy_range CHECK (delivery_id < %L::uuid) NOT VALID', u);
    END IF;
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conname = 'webhook_deliveries_legacy_range') THEN
        EXECUTE format('ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_legacy_range CHECK (id < %L::uuid) NOT VALID', u);
    END IF;
END
$$;
-- +goose StatementEnd

-- Each scan under SHARE UPDATE EXCLUSIVE: reads and writes go on. An id made by anything but uuid_v7() or
-- uuid.NewV7 (never the case in Hookline) could sort past the cut-over: the validation then fails, naming
-- the constraint, and nothing has changed.
ALTER TABLE events VALIDATE CONSTRAINT events_legacy_range;
ALTER TABLE webhook_attempts VALIDATE CONSTRAINT webhook_attempts_legacy_range;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_legacy_range;

-- A subscription's dead deliveries are counted for its health card and its Dead tab: through an index of
-- its own dead rows, not its whole history, which the partitions would otherwise read day by day. Built
-- here, concurrently, on the table that becomes the legacy partition: 00026 attaches it whole.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_sub_dead_idx ON webhook_deliveries (tenant_id, subscription_id)
    WHERE state IN ('failed', 'expired') AND discarded_at IS NULL;

-- +goose Down
DROP INDEX IF EXISTS webhook_deliveries_sub_dead_idx;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_legacy_range;
ALTER TABLE webhook_attempts DROP CONSTRAINT IF EXISTS webhook_attempts_legacy_range;
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_legacy_range;
DROP TABLE IF EXISTS history_cutover;
DROP FUNCTION IF EXISTS uuid_v7_time(uuid);
DROP FUNCTION IF EXISTS uuid_v7_floor(timestamptz);
