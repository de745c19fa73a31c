-- +goose Up
-- Retention by partition. A time partition (the same span of webhook_deliveries_finished, webhook_attempts
-- and events: history_make_partitions makes them together) whose delivered deliveries are past
-- HOOKLINE_RETENTION_DELIVERED is replaced as a whole: by nothing when nothing in it is kept any longer, or
-- by a copy of what is kept. What is kept: delivered deliveries still within their retention (a delivery
-- resent long after it was made is delivered again later than its neighbours), every dead one (those are
-- archived and deleted one by one at HOOKLINE_RETENTION_DEAD, by the retention sweep, as before), the
-- attempts of those and of the partition's deliveries that are waiting again in the queue (a replay, a
-- resend), and the events any delivery still refers to. Delivered deliveries are never deleted one by one.
--
-- history_compact(part, keep_delivered_after) does that for the time partitions named
-- webhook_deliveries_<part>, webhook_attempts_<part> and events_<part> (part: 'p20261128_0000'), in one
-- transaction, and says what it did: 'dropped', 'compacted' or 'kept' (nothing in it was past retention).
-- The caller asks only about partitions whose whole span is past the delivered retention.
-- The three partitions are locked against writes (SHARE) while what is kept is copied: their rows are old,
-- so the writes held are a late retry's; then the copies take the partitions' places, which takes each
-- parent's lock for a moment. lock_timeout bounds every wait: a compaction that would wait longer fails
-- and the next sweep tries again.
-- +goose StatementBegin
CREATE FUNCTION history_compact(part text, keep_delivered_after timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    d text := 'webhook_deliveries_' || part;
    a text := 'webhook_attempts_' || part;
    e text := 'events_' || part;
    lo uuid;
    hi uuid;
    past boolean;
    kept bigint;
    bound text;
BEGIN
    SELECT pg_get_expr(c.relpartbound, c.oid) INTO bound FROM pg_class c WHERE c.relname = d;
    IF bound IS NULL OR bound LIKE '%MINVALUE%' THEN
        RAISE EXCEPTION 'history_compact: % is not a time partition', d;
    END IF;
    lo := (regexp_match(bound, 'FROM \(''([^'']+)''\)'))[1]::uuid;
    hi := (regexp_match(bound, 'TO \(''([^'']+)''\)'))[1]::uuid;
    -- Looked at before locking anything: rows only ever get older, so one past now is past after the lock.
    -- (an emptied partition, whose dead deliveries have all been deleted, goes too)
    EXECUTE format('SELECT EXISTS (SELECT FROM %I WHERE state = ''delivered'' AND last_attempt_at < $1)
                    OR NOT EXISTS (SELECT FROM %I)', d, d)
        INTO past USING keep_delivered_after;
    IF NOT past THEN
        RETURN 'kept';
    END IF;
    -- A compaction gives way to the engine: it waits at most a second for a lock, and when it and an engine
    -- statement wait for each other (a late attempt of this partition's delivery, while the compaction
    -- holds the partition and waits for its parent) it is the compaction that PostgreSQL's deadlock check,
    -- run by the first to have waited its deadlock_timeout, fails; the next sweep tries again.
    PERFORM set_config('lock_timeout', '1s', true);
    PERFORM set_config('deadlock_timeout', '100ms', true);
    EXECUTE format('LOCK TABLE %I, %I, %I IN SHARE MODE', d, a, e);

    -- Read through the partial indexes of dead and of delivered rows: what is kept, never the whole day.
    EXECUTE format('CREATE TEMP TABLE history_kept_deliveries ON COMMIT DROP AS
        SELECT * FROM %I WHERE state IN (''failed'', ''expired'')
        UNION ALL SELECT * FROM %I WHERE state = ''delivered'' AND last_attempt_at >= $1', d, d) USING keep_delivered_after;
    ANALYZE history_kept_deliveries;
    -- whose attempts stay: the kept deliveries, and the partition's deliveries waiting in the queue again
    CREATE TEMP TABLE history_kept_ids ON COMMIT DROP AS
        SELECT id FROM history_kept_deliveries
        UNION SELECT q.id FROM webhook_deliveries_queue q WHERE q.id >= lo AND q.id < hi;
    -- whose events stay: those, and deliveries of later partitions made for an event of this one (an
    -- event's id is taken just before its deliveries are stored, so a few sit across a boundary)
    CREATE TEMP TABLE history_kept_events ON COMMIT DROP AS
        SELECT event_id AS id FROM history_kept_deliveries
        UNION SELECT q.event_id FROM webhook_deliveries_queue q WHERE q.event_id >= lo AND q.event_id < hi
        UNION SELECT f.event_id FROM webhook_deliveries_finished f WHERE f.event_id >= lo AND f.event_id < hi AND f.id >= hi;
    ANALYZE history_kept_ids;
    ANALYZE history_kept_events;
    SELECT count(*) INTO kept FROM (SELECT FROM history_kept_ids UNION ALL SELECT FROM history_kept_events) k;

    DELETE FROM event_idempotency k
    WHERE k.event_id >= lo AND k.event_id < hi AND NOT EXISTS (SELECT FROM history_kept_events x WHERE x.id = k.event_id);
    -- What is kept is copied first, with its indexes, while only this partition is locked (against writes):
    -- the engine goes on meanwhile.
    IF kept > 0 THEN
        PERFORM history_copy_kept('webhook_deliveries_finished', d, lo, hi, 'SELECT * FROM history_kept_deliveries');
        PERFORM history_copy_kept('webhook_attempts', a, lo, hi,
            format('SELECT a.* FROM %I a WHERE a.delivery_id IN (SELECT id FROM history_kept_ids)', a));
        PERFORM history_copy_kept('events', e, lo, hi,
            format('SELECT e.* FROM %I e WHERE e.id IN (SELECT id FROM history_kept_events)', e));
    END IF;
    -- Then the parents, before any of them is needed for a detach, in one statement and in the order the
    -- engine's statements take them (a completion holds webhook_attempts from its start and takes
    -- webhook_deliveries_finished when it moves a row there; a claim holds events): taken one by one, a
    -- completion and the compaction each held what the other waited for. From here to the commit is
    -- catalog work only: the old partitions are detached and renamed history_detached_*, their files
    -- removed afterwards outside these locks (history_drop_detached); the copies take their places.
    LOCK TABLE webhook_attempts, webhook_deliveries_finished, events IN ACCESS EXCLUSIVE MODE;
    PERFORM history_swap_partition('webhook_deliveries_finished', d, lo, hi, kept > 0);
    PERFORM history_swap_partition('webhook_attempts', a, lo, hi, kept > 0);
    PERFORM history_swap_partition('events', e, lo, hi, kept > 0);
    IF kept = 0 THEN
        RETURN 'dropped';
    END IF;
    RETURN 'compacted';
END
$$;
-- +goose StatementEnd

-- history_copy_kept makes <old>_kept, a table like parent with its indexes, holding the rows rows selects
-- (the part of partition old still kept) and a CHECK stating old's bounds, which lets the attach skip its
-- scan and find its indexes already built.
-- +goose StatementBegin
CREATE FUNCTION history_copy_kept(parent text, old text, lo uuid, hi uuid, rows text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    fresh text := left(old, 56) || '_kept';
    key text := CASE WHEN parent = 'webhook_attempts' THEN 'delivery_id' ELSE 'id' END;
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)', fresh, parent);
    EXECUTE format('INSERT INTO %I %s', fresh, rows);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I >= %L AND %I < %L)', fresh, fresh || '_range', key, lo, key, hi);
    IF parent = 'webhook_deliveries_finished' THEN
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (state IN (''delivered'', ''failed'', ''expired''))',
                       fresh, fresh || '_finished');
    END IF;
END
$$;
-- +goose StatementEnd

-- history_swap_partition detaches partition old from parent and renames it history_detached_<old> (dropped
-- later, its files' removal outside the parents' locks); with kept, <old>_kept (history_copy_kept) takes its
-- place, name and index names.
-- +goose StatementBegin
CREATE FUNCTION history_swap_partition(parent text, old text, lo uuid, hi uuid, kept boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    fresh text := left(old, 56) || '_kept';
    idx record;
BEGIN
    EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', parent, old);
    EXECUTE format('ALTER TABLE %I RENAME TO %I', old, left('history_detached_' || old, 63));
    -- its indexes give their names to the copy's
    FOR idx IN SELECT x.indexrelid FROM pg_index x WHERE x.indrelid = left('history_detached_' || old, 63)::regclass LOOP
        EXECUTE format('ALTER INDEX %s RENAME TO %I', idx.indexrelid::regclass, 'history_detached_index_' || idx.indexrelid);
    END LOOP;
    IF kept THEN
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, fresh, lo, hi);
        EXECUTE format('ALTER TABLE %I RENAME TO %I', fresh, old);
        PERFORM history_name_indexes(old::regclass);
    END IF;
END
$$;
-- +goose StatementEnd

-- history_drop_detached drops the partitions compactions detached (history_detached_*): they are no longer
-- part of the history, so removing their files takes no lock anything else waits on. It returns how many
-- it dropped.
-- +goose StatementBegin
CREATE FUNCTION history_drop_detached() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    n integer := 0;
BEGIN
    FOR r IN SELECT c.relname FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'history\_detached\_%' LOOP
        EXECUTE format('DROP TABLE %I', r.relname);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- history_start_at(t) moves the cut-over of a database with no history yet back to t (the start of an
-- interval): its legacy partitions then end at t and time partitions can be made from t on, so history of
-- the past can be loaded into time partitions as it would have been stored (make bench's history phases
-- load days of it with SQL). It refuses a database that has history.
-- +goose StatementBegin
CREATE FUNCTION history_start_at(t timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF EXISTS (SELECT FROM events) OR EXISTS (SELECT FROM webhook_deliveries) OR EXISTS (SELECT FROM webhook_attempts) THEN
        RAISE EXCEPTION 'history_start_at: the database already has history';
    END IF;
    FOR r IN SELECT name FROM history_partitions() WHERE starts_at IS NOT NULL LOOP
        EXECUTE format('DROP TABLE %I', r.name);
    END LOOP;
    FOR r IN SELECT * FROM (VALUES ('events'), ('webhook_attempts'), ('webhook_deliveries')) AS v(parent) LOOP
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', r.parent, r.parent || '_legacy');
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                       r.parent, r.parent || '_legacy', uuid_v7_floor(t));
    END LOOP;
    ALTER TABLE webhook_deliveries DETACH PARTITION webhook_deliveries_current;
    EXECUTE format('ALTER TABLE webhook_deliveries ATTACH PARTITION webhook_deliveries_current FOR VALUES FROM (%L) TO (MAXVALUE)',
                   uuid_v7_floor(t));
    UPDATE history_cutover SET legacy_until = t;
END
$$;
-- +goose StatementEnd

-- history_analyze(name) refreshes the statistics of the queue partition or of one time partition of the
-- history (ANALYZE, which a function may run; VACUUM it may not). The maintenance leader calls it for those
-- much changed since their last ANALYZE: a partition starts each interval empty, and plans made on its
-- empty statistics (and cached by every connection) would read it whole once it holds the interval's rows.
-- +goose StatementBegin
CREATE FUNCTION history_analyze(name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF name <> 'webhook_deliveries_queue' AND NOT EXISTS (SELECT FROM history_partitions() p WHERE p.name = history_analyze.name) THEN
        RAISE EXCEPTION 'history_analyze: % is not a partition of the history', name;
    END IF;
    EXECUTE format('ANALYZE %I', name);
END
$$;
-- +goose StatementEnd

-- history_tables_to_analyze lists the queue partition and the time partitions changed by more rows since
-- their last ANALYZE than autovacuum's own threshold would let pass (50 rows and a tenth of the table; here
-- 1,000 and a tenth), most changed first: whether or not autovacuum runs, the leader analyzes these.
-- +goose StatementBegin
CREATE FUNCTION history_tables_to_analyze() RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text
    FROM pg_class c
    WHERE (c.relname = 'webhook_deliveries_queue' OR c.relname IN (SELECT p.name FROM history_partitions() p))
      AND pg_stat_get_mod_since_analyze(c.oid) > 1000 + 0.1 * greatest(c.reltuples, 0)
    ORDER BY pg_stat_get_mod_since_analyze(c.oid) DESC
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION history_tables_to_analyze();
DROP FUNCTION history_analyze(text);
DROP FUNCTION history_start_at(timestamptz);
DROP FUNCTION history_compact(text, timestamptz);
DROP FUNCTION history_copy_kept(text, text, uuid, uuid, text);
DROP FUNCTION history_swap_partition(text, text, uuid, uuid, boolean);
DROP FUNCTION history_drop_detached();
