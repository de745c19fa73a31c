-- +goose Up
-- activity is a tenant's audit log: one row per change made through the dashboard or the API (a subscription
-- created, paused, a secret revealed, a resend, a portal link made...), written in the same transaction as
-- the change, so a change is never without its entry nor an entry without its change. actor_* say who, as
-- the request knew them: a dashboard user, a portal user (as the platform's link named them), a tenant token
-- (by name) or an admin. Rows are deleted by the maintenance leader after HOOKLINE_RETENTION_ACTIVITY.
CREATE TABLE activity (
    id             uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id      uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    at             timestamptz NOT NULL,
    action         text        NOT NULL,
    object_type    text        NOT NULL,
    object_id      text        NOT NULL,
    actor_kind     text        NOT NULL CHECK (actor_kind IN ('user', 'portal', 'token', 'admin')),
    actor_id       text        NOT NULL DEFAULT '',
    actor_email    text        NOT NULL DEFAULT '',
    actor_name     text        NOT NULL DEFAULT '',
    correlation_id text        NOT NULL DEFAULT '',
    details        jsonb       NOT NULL DEFAULT '{}'
);
-- The list: a tenant's entries newest first, keyset (at, id); the action filter rides on it.
CREATE INDEX activity_tenant_at_idx ON activity (tenant_id, at DESC, id DESC);
-- The retention sweep: oldest first across tenants.
CREATE INDEX activity_at_idx ON activity (at);

-- +goose Down
DROP TABLE activity;
