-- +goose Up
-- History at scale, step 2 of 2: webhook_deliveries, webhook_attempts and events become partitioned, in one
-- short transaction whatever their size (nothing is copied or scanned: 00025 proved what the attaches need).
--
--   events                      RANGE (id)                 (ids are UUIDv7: their prefix is their time)
--     events_legacy               every id before the cut-over (the table as it was)
--     events_p<start>             one per HOOKLINE_PARTITION_INTERVAL from the cut-over on (made ahead)
--   webhook_attempts            RANGE (delivery_id)        (a delivery's attempts sit in its time range)
--     webhook_attempts_legacy, webhook_attempts_p<start>
--   webhook_deliveries          RANGE (id)
--     webhook_deliveries_legacy   every id before the cut-over, in any state (the table as it was)
--     webhook_deliveries_current  every id from the cut-over on, LIST (state):
--       webhook_deliveries_queue      pending and in_flight: the queue, small however long the history
--       webhook_deliveries_finished   delivered, failed and expired, RANGE (id):
--         webhook_deliveries_p<start>   one per interval, made ahead
--
-- The queue is its own partition so that the claim, the completion and the rescue read a table that holds
-- only the work to do, whatever has gone through it; finished deliveries are history in time partitions,
-- which retention drops whole. A delivery moves from the queue to its time partition when it finishes (an
-- UPDATE of its state moves the row), and back when it is retried or replayed. There is no default
-- partition: a finished delivery, an attempt or an event whose time has no partition is refused, and the
-- maintenance leader keeps partitions made at least three intervals ahead (history_make_partitions).
--
-- Unique constraints on a partitioned table must include its partition keys, so:
--   * a delivery's id is unique within the queue and within the finished partitions (its primary key on
--     each), not across them: a row moving between them keeps its id, and ids are made random after
--     their time prefix;
--   * an Idempotency-Key is unique per tenant through its own table, event_idempotency, not an index on
--     events (which would have to include the event's id);
--   * an attempt is unique by (delivery_id, attempt), its old serial id is gone (nothing read it).
-- The history's only foreign keys are events' and deliveries' to tenants. Between the three tables: their
-- partitions are dropped together, by time, and a key would make every drop check the others. To
-- subscriptions and replays: dropping or attaching a partition that has one locks the table it refers to
-- against writes, and every claim and completion writes subscriptions (measured: the retention's drops
-- deadlocked with them); tenants are not written by the engine. Hookline deletes no subscription (they
-- are marked deleted) and no replay.

LOCK TABLE events, webhook_deliveries, webhook_attempts IN EXCLUSIVE MODE;

ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
DROP TRIGGER webhook_attempts_minutes ON webhook_attempts;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey;
ALTER TABLE webhook_attempts DROP COLUMN id;

ALTER TABLE events RENAME TO events_legacy;
ALTER TABLE webhook_attempts RENAME TO webhook_attempts_legacy;
ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_legacy;

-- The legacy tables' indexes and constraints give their names to the new parents'.
-- +goose StatementBegin
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT i.relname AS name, t.relname AS tbl
             FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
             WHERE t.relname IN ('events_legacy', 'webhook_attempts_legacy', 'webhook_deliveries_legacy')
    LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.name,
                       replace(r.name, replace(r.tbl, '_legacy', ''), r.tbl));
    END LOOP;
    -- The history's only foreign keys are to tenants (below): the legacy tables' others go, those to
    -- tenants give their names to the parents' (which take them as their partitions').
    FOR r IN SELECT c.conname AS name, t.relname AS tbl, c.confrelid = 'tenants'::regclass AS to_tenants
             FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
             WHERE t.relname IN ('events_legacy', 'webhook_attempts_legacy', 'webhook_deliveries_legacy')
               AND c.contype = 'f'
    LOOP
        IF r.to_tenants THEN
            EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', r.tbl, r.name,
                           replace(r.name, replace(r.tbl, '_legacy', ''), r.tbl));
        ELSE
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', r.tbl, r.name);
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd

CREATE TABLE events (
    id               uuid        NOT NULL DEFAULT uuid_v7(),
    tenant_id        uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event_type       text        NOT NULL,
    body             bytea       NOT NULL,
    idempotency_key  text,
    request_hash     bytea,
    response         jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);

CREATE TABLE webhook_attempts (
    delivery_id      uuid        NOT NULL,
    tenant_id        uuid        NOT NULL,
    subscription_id  uuid        NOT NULL,
    attempt          integer     NOT NULL,
    started_at       timestamptz NOT NULL,
    duration_ms      integer     NOT NULL,
    status           integer,
    response_snippet text        NOT NULL DEFAULT '',
    error            text        NOT NULL DEFAULT '',
    outcome          text        NOT NULL CONSTRAINT webhook_attempts_outcome_check CHECK (outcome IN ('delivered', 'retry', 'failed')),
    request_url      text        NOT NULL,
    request_headers  jsonb       NOT NULL,
    UNIQUE (delivery_id, attempt)
) PARTITION BY RANGE (delivery_id);

CREATE TABLE webhook_deliveries (
    id               uuid        NOT NULL DEFAULT uuid_v7(),
    tenant_id        uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event_id         uuid        NOT NULL,
    subscription_id  uuid        NOT NULL,
    event_type       text        NOT NULL,
    state            text        NOT NULL DEFAULT 'pending'
                                 CONSTRAINT webhook_deliveries_state_check
                                 CHECK (state IN ('pending', 'in_flight', 'delivered', 'failed', 'expired')),
    attempt_count    integer     NOT NULL DEFAULT 0,
    total_attempts   integer     NOT NULL DEFAULT 0,
    manual_retries   integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    give_up_at       timestamptz NOT NULL,
    lease_expires_at timestamptz,
    lease_id         uuid,
    last_attempt_at  timestamptz,
    last_status      integer,
    last_response    text,
    last_error       text,
    dead_reason      text,
    discarded_at     timestamptz,
    replay_id        uuid,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    dead_at          timestamptz,
    traceparent      text,
    CONSTRAINT webhook_deliveries_check CHECK (state <> 'in_flight' OR lease_expires_at IS NOT NULL),
    CONSTRAINT webhook_deliveries_dead_at_check CHECK ((state IN ('failed', 'expired')) = (dead_at IS NOT NULL))
) PARTITION BY RANGE (id);

-- The legacy tables are attached as the partitions of every id before the cut-over (their validated
-- *_legacy_range constraints spare the scan), and the parts from the cut-over on are made.
-- +goose StatementBegin
DO $$
DECLARE
    u uuid := (SELECT uuid_v7_floor(legacy_until) FROM history_cutover);
BEGIN
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_legacy FOR VALUES FROM (MINVALUE) TO (%L)', u);
    EXECUTE format('ALTER TABLE webhook_attempts ATTACH PARTITION webhook_attempts_legacy FOR VALUES FROM (MINVALUE) TO (%L)', u);
    EXECUTE format('ALTER TABLE webhook_deliveries ATTACH PARTITION webhook_deliveries_legacy FOR VALUES FROM (MINVALUE) TO (%L)', u);
    EXECUTE format('CREATE TABLE webhook_deliveries_current PARTITION OF webhook_deliveries FOR VALUES FROM (%L) TO (MAXVALUE) PARTITION BY LIST (state)', u);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
    -- The queue's rows are updated by every claim and completion and deleted from it as they finish:
    -- pages kept part empty hold the new versions of a row beside it.
    CREATE TABLE webhook_deliveries_queue PARTITION OF webhook_deliveries_current
        FOR VALUES IN ('pending', 'in_flight') WITH (fillfactor = 70);
    ALTER TABLE webhook_deliveries_queue ADD PRIMARY KEY (id);
    CREATE TABLE webhook_deliveries_finished PARTITION OF webhook_deliveries_current
        FOR VALUES IN ('delivered', 'failed', 'expired') PARTITION BY RANGE (id);
    ALTER TABLE webhook_deliveries_finished ADD PRIMARY KEY (id);
END
$$;
-- +goose StatementEnd

-- The parents' indexes: CREATE INDEX on a partitioned table takes the legacy table's equal index as its
-- partition (nothing is built for it) and builds the others' (empty).
CREATE INDEX events_tenant_created_idx ON events (tenant_id, created_at);
CREATE INDEX webhook_attempts_sub_started_idx ON webhook_attempts (subscription_id, started_at) INCLUDE (outcome, duration_ms);
CREATE INDEX webhook_deliveries_dead_at_idx ON webhook_deliveries (dead_at) WHERE state IN ('failed', 'expired');
CREATE INDEX webhook_deliveries_dead_created_idx ON webhook_deliveries (created_at, id) WHERE state IN ('failed', 'expired') AND discarded_at IS NULL;
CREATE INDEX webhook_deliveries_dead_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC) WHERE state IN ('failed', 'expired') AND discarded_at IS NULL;
CREATE INDEX webhook_deliveries_delivered_at_idx ON webhook_deliveries (last_attempt_at) WHERE state = 'delivered';
CREATE INDEX webhook_deliveries_event_id_idx ON webhook_deliveries (event_id, id);
CREATE INDEX webhook_deliveries_in_flight_idx ON webhook_deliveries (lease_expires_at) WHERE state = 'in_flight';
CREATE INDEX webhook_deliveries_replay_idx ON webhook_deliveries (replay_id, created_at DESC, id DESC) INCLUDE (state) WHERE replay_id IS NOT NULL;
CREATE INDEX webhook_deliveries_retrying_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC) WHERE state = 'pending' AND total_attempts > 0;
CREATE INDEX webhook_deliveries_sub_created_idx ON webhook_deliveries (tenant_id, subscription_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_sub_dead_idx ON webhook_deliveries (tenant_id, subscription_id) WHERE state IN ('failed', 'expired') AND discarded_at IS NULL;
CREATE INDEX webhook_deliveries_sub_pending_idx ON webhook_deliveries (subscription_id, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_tenant_created_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_tenant_pending_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC) WHERE state = 'pending';

CREATE TRIGGER webhook_attempts_minutes AFTER INSERT ON webhook_attempts
REFERENCING NEW TABLE AS new_attempts
FOR EACH STATEMENT EXECUTE FUNCTION attempt_minutes_add();

-- An Idempotency-Key is the tenant's for as long as the event it made is kept: its row goes when the
-- event's partition is dropped.
CREATE TABLE event_idempotency (
    tenant_id       uuid NOT NULL,
    idempotency_key text NOT NULL,
    event_id        uuid NOT NULL,
    PRIMARY KEY (tenant_id, idempotency_key)
);
CREATE INDEX event_idempotency_event_idx ON event_idempotency (event_id);
INSERT INTO event_idempotency (tenant_id, idempotency_key, event_id)
SELECT tenant_id, idempotency_key, id FROM events_legacy WHERE idempotency_key IS NOT NULL;
DROP INDEX events_legacy_idempotency_idx;

-- history_name_indexes names the indexes of a partition as the parent's are named: "<partition>_<what the
-- root index's name says after its table's>" (webhook_deliveries_queue_sub_pending_idx beside the parent's
-- webhook_deliveries_sub_pending_idx), so plans and \d read the same names at every level. PostgreSQL's own
-- names for them list the columns, numbered when two indexes share them.
-- +goose StatementBegin
CREATE FUNCTION history_name_indexes(part regclass) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT ic.relname AS name, rc.relname AS root_name, rt.relname AS root_table, pc.relname AS part_name
             FROM pg_index x
             JOIN pg_class ic ON ic.oid = x.indexrelid
             JOIN pg_class pc ON pc.oid = x.indrelid
             JOIN pg_class rc ON rc.oid = pg_partition_root(x.indexrelid)
             JOIN pg_index rx ON rx.indexrelid = rc.oid
             JOIN pg_class rt ON rt.oid = rx.indrelid
             WHERE x.indrelid = part AND rc.oid <> ic.oid AND starts_with(rc.relname, rt.relname || '_')
    LOOP
        IF r.name <> left(r.part_name || substr(r.root_name, length(r.root_table) + 1), 63) THEN
            EXECUTE format('ALTER INDEX %I RENAME TO %I', r.name,
                           left(r.part_name || substr(r.root_name, length(r.root_table) + 1), 63));
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- history_make_partitions makes the partitions of events, webhook_attempts and webhook_deliveries_finished
-- for every interval from the newest one made (or the cut-over) until one starts after horizon, each
-- interval long; the three tables always have the same bounds. It returns how many intervals it made. A
-- transaction-scoped advisory lock makes two callers (the maintenance leader, a process starting) take
-- turns; a caller that would wait long for the tables' locks (a long query on them) gives up at
-- lock_timeout and tries again at its next run, well before the partitions made ahead run out.
-- +goose StatementBegin
CREATE FUNCTION history_make_partitions(step interval, horizon timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    last_end timestamptz;
    made integer := 0;
    name text;
BEGIN
    IF step < interval '1 hour' THEN
        RAISE EXCEPTION 'partition interval % is under an hour', step;
    END IF;
    PERFORM pg_advisory_xact_lock(7526744211473408116); -- "hookpart"
    PERFORM set_config('lock_timeout', '2s', true);
    SELECT coalesce(max(p.ends_at), (SELECT legacy_until FROM history_cutover))
    INTO last_end FROM history_partitions() p WHERE p.parent = 'webhook_deliveries_finished';
    WHILE last_end <= horizon LOOP
        name := to_char(last_end AT TIME ZONE 'UTC', 'YYYYMMDD"_"HH24MI');
        EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
                       'events_p' || name, uuid_v7_floor(last_end), uuid_v7_floor(last_end + step));
        PERFORM history_name_indexes(('events_p' || name)::regclass);
        EXECUTE format('CREATE TABLE %I PARTITION OF webhook_attempts FOR VALUES FROM (%L) TO (%L)',
                       'webhook_attempts_p' || name, uuid_v7_floor(last_end), uuid_v7_floor(last_end + step));
        PERFORM history_name_indexes(('webhook_attempts_p' || name)::regclass);
        EXECUTE format('CREATE TABLE %I PARTITION OF webhook_deliveries_finished FOR VALUES FROM (%L) TO (%L)',
                       'webhook_deliveries_p' || name, uuid_v7_floor(last_end), uuid_v7_floor(last_end + step));
        PERFORM history_name_indexes(('webhook_deliveries_p' || name)::regclass);
        last_end := last_end + step;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
-- +goose StatementEnd

-- history_partitions lists the time partitions of the history tables with their time range (starts_at
-- NULL: from the beginning) and size on disk, from the catalog.
-- +goose StatementBegin
CREATE FUNCTION history_partitions() RETURNS TABLE (parent text, name text, starts_at timestamptz, ends_at timestamptz, bytes bigint)
LANGUAGE sql STABLE AS $$
    SELECT p.relname::text, c.relname::text,
           CASE WHEN b.lo = 'MINVALUE' THEN NULL ELSE uuid_v7_time(b.lo::uuid) END,
           CASE WHEN b.hi = 'MAXVALUE' THEN NULL ELSE uuid_v7_time(b.hi::uuid) END,
           pg_total_relation_size(c.oid)
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    JOIN pg_class p ON p.oid = i.inhparent
    CROSS JOIN LATERAL (
        SELECT m[1] AS lo, m[2] AS hi
        FROM regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''?([^'')]+)''?\) TO \(''?([^'')]+)''?\)') AS m
    ) b
    WHERE p.relname IN ('events', 'webhook_attempts', 'webhook_deliveries', 'webhook_deliveries_finished')
      AND c.relname <> 'webhook_deliveries_current'
$$;
-- +goose StatementEnd

SELECT history_name_indexes(relid)
FROM (SELECT relid FROM pg_partition_tree('webhook_deliveries') UNION ALL SELECT relid FROM pg_partition_tree('webhook_attempts')
      UNION ALL SELECT relid FROM pg_partition_tree('events')) t;

-- The first partitions: three days from the cut-over, whatever the interval (the leader makes the rest).
SELECT history_make_partitions(interval '1 day', (SELECT legacy_until + interval '2 days' FROM history_cutover));

-- +goose Down
SELECT 'history partitions: not reversible by a migration'::text WHERE false;
-- +goose StatementBegin
DO $$ BEGIN RAISE EXCEPTION 'the partitioned history cannot be turned back by a migration: restore a backup taken before'; END $$;
-- +goose StatementEnd
