-- +goose Up
-- The operator console: when a delivery became dead, replays that run in the background and can be resumed,
-- customer recovers, and the indexes the retention sweep finds its rows by.

-- dead_at is when a delivery entered failed or expired (NULL otherwise). Replays take only rows that were
-- already dead when they started, and retention deletes dead rows this long after they died.
ALTER TABLE webhook_deliveries ADD COLUMN dead_at timestamptz;
UPDATE webhook_deliveries SET dead_at = updated_at WHERE state IN ('failed', 'expired');
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_dead_at_check
    CHECK ((state IN ('failed', 'expired')) = (dead_at IS NOT NULL));

-- Retention: delivered rows by when they were delivered, dead (and discarded) rows by when they died.
CREATE INDEX webhook_deliveries_delivered_at_idx ON webhook_deliveries (last_attempt_at) WHERE state = 'delivered';
CREATE INDEX webhook_deliveries_dead_at_idx ON webhook_deliveries (dead_at) WHERE state IN ('failed', 'expired');
-- A replay's page lists the deliveries it scheduled.
CREATE INDEX webhook_deliveries_replay_idx ON webhook_deliveries (replay_id, created_at DESC, id DESC) WHERE replay_id IS NOT NULL;

-- replays: an operator's bulk replay (kind 'bulk') or a customer's recover of one subscription ('recover').
-- A running replay is worked through in chunks, each one transaction that moves the rows and advances
-- (cursor_created_at, cursor_id) and scheduled together, so a process that dies mid-replay leaves exact
-- counts and any instance resumes from the cursor.
ALTER TABLE replays
    ADD COLUMN kind              text        NOT NULL DEFAULT 'bulk' CHECK (kind IN ('bulk', 'recover')),
    ADD COLUMN tenant_id         uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    ADD COLUMN subscription_id   uuid        REFERENCES subscriptions (id) ON DELETE CASCADE,
    ADD COLUMN skipped           integer     NOT NULL DEFAULT 0,
    ADD COLUMN spread_seconds    integer     NOT NULL DEFAULT 300 CHECK (spread_seconds >= 0),
    ADD COLUMN cursor_created_at timestamptz,
    ADD COLUMN cursor_id         uuid,
    ADD COLUMN error             text        NOT NULL DEFAULT '',
    ADD COLUMN updated_at        timestamptz NOT NULL DEFAULT now();
-- Runners look for unfinished replays.
CREATE INDEX replays_running_idx ON replays (started_at) WHERE state = 'running';
-- A customer's replays, for their own history.
CREATE INDEX replays_tenant_idx ON replays (tenant_id, started_at DESC) WHERE tenant_id IS NOT NULL;
-- At most one recover per subscription at a time.
CREATE UNIQUE INDEX replays_one_recover_idx ON replays (subscription_id) WHERE kind = 'recover' AND state = 'running';

-- +goose Down
DROP INDEX replays_one_recover_idx;
DROP INDEX replays_tenant_idx;
DROP INDEX replays_running_idx;
ALTER TABLE replays DROP COLUMN kind, DROP COLUMN tenant_id, DROP COLUMN subscription_id, DROP COLUMN skipped,
    DROP COLUMN spread_seconds, DROP COLUMN cursor_created_at, DROP COLUMN cursor_id, DROP COLUMN error,
    DROP COLUMN updated_at;
DROP INDEX webhook_deliveries_replay_idx;
DROP INDEX webhook_deliveries_dead_at_idx;
DROP INDEX webhook_deliveries_delivered_at_idx;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_dead_at_check;
ALTER TABLE webhook_deliveries DROP COLUMN dead_at;
