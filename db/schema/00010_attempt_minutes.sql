-- +goose Up
-- Endpoint health read every attempt of its window: a subscription with 40,000 attempts a day cost 110 ms
-- a look, and one at 100 attempts a second would cost seconds. attempt_minutes keeps, per subscription and
-- UTC minute, how many attempts started, how many delivered, and the newest success and failure. Health
-- and its charts add up at most one row a minute (1,440 for a day) and read webhook_attempts only for the
-- minutes a window cuts through.
--
-- A statement trigger keeps it, from the statement's inserted rows (one upsert per subscription and minute
-- per statement, not per attempt), so every writer of webhook_attempts keeps it exact, in the same
-- transaction as the attempts. Rows are upserted in key order, so two completers never deadlock on them.
-- Deleting attempts (retention) leaves their minutes: health counts what was attempted in its window.
CREATE TABLE attempt_minutes (
    subscription_id uuid        NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    minute          timestamptz NOT NULL,
    tenant_id       uuid        NOT NULL,
    attempts        integer     NOT NULL,
    -- successes counts outcome 'delivered'; every other attempt is a failure.
    successes       integer     NOT NULL,
    last_success_at timestamptz,
    last_failure_at timestamptz,
    PRIMARY KEY (subscription_id, minute)
) WITH (fillfactor = 80); -- room for the busy minute's updates to stay HOT
-- Retention drops minutes older than the longest health range.
CREATE INDEX attempt_minutes_minute_idx ON attempt_minutes (minute);

-- +goose StatementBegin
CREATE FUNCTION attempt_minute(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
  SELECT date_bin('1 minute', at, timestamptz '2000-01-01 00:00:00+00')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION attempt_minutes_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO attempt_minutes AS m (subscription_id, minute, tenant_id, attempts, successes, last_success_at, last_failure_at)
    SELECT a.subscription_id, attempt_minute(a.started_at), a.tenant_id, count(*),
           count(*) FILTER (WHERE a.outcome = 'delivered'),
           max(a.started_at) FILTER (WHERE a.outcome = 'delivered'),
           max(a.started_at) FILTER (WHERE a.outcome <> 'delivered')
    FROM new_attempts a
    GROUP BY 1, 2, 3 -- a subscription has one tenant
    ORDER BY 1, 2
    ON CONFLICT (subscription_id, minute) DO UPDATE
    SET attempts = m.attempts + excluded.attempts,
        successes = m.successes + excluded.successes,
        last_success_at = greatest(m.last_success_at, excluded.last_success_at),
        last_failure_at = greatest(m.last_failure_at, excluded.last_failure_at);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER webhook_attempts_minutes AFTER INSERT ON webhook_attempts
REFERENCING NEW TABLE AS new_attempts
FOR EACH STATEMENT EXECUTE FUNCTION attempt_minutes_add();

-- The minutes the health ranges can ask for (7 days), from the attempts already stored.
INSERT INTO attempt_minutes (subscription_id, minute, tenant_id, attempts, successes, last_success_at, last_failure_at)
SELECT a.subscription_id, attempt_minute(a.started_at), a.tenant_id, count(*),
       count(*) FILTER (WHERE a.outcome = 'delivered'),
       max(a.started_at) FILTER (WHERE a.outcome = 'delivered'),
       max(a.started_at) FILTER (WHERE a.outcome <> 'delivered')
FROM webhook_attempts a
JOIN subscriptions s ON s.id = a.subscription_id
WHERE a.started_at >= now() - interval '8 days'
GROUP BY 1, 2, 3;

-- +goose Down
DROP TRIGGER webhook_attempts_minutes ON webhook_attempts;
DROP FUNCTION attempt_minutes_add();
DROP TABLE attempt_minutes;
DROP FUNCTION attempt_minute(timestamptz);
