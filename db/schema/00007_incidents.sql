-- +goose Up
-- Incidents and notifications: a subscription whose attempts have only failed for HOOKLINE_INCIDENT_AFTER has
-- an incident; each of its steps is told once (claimed in SQL, so several processes send one message).

-- internal tenants belong to Hookline itself (the operator-notification tenant): never listed as customers.
ALTER TABLE tenants ADD COLUMN internal boolean NOT NULL DEFAULT false;

-- disabled_notified_at is when the operator was told the subscription was disabled (NULL: not yet, or
-- enabled again since).
ALTER TABLE subscriptions ADD COLUMN disabled_notified_at timestamptz;

CREATE TABLE incidents (
    id                   uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id            uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    subscription_id      uuid        NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    -- failing_since of the subscription when the incident opened: a later value means a 2xx came between.
    failing_since        timestamptz NOT NULL,
    opened_at            timestamptz NOT NULL,
    ended_at             timestamptz,
    -- When each step was claimed (and its messages queued): opened, 24 h, before the first expiry, expired.
    day_notified_at      timestamptz,
    expiring_notified_at timestamptz,
    expired_notified_at  timestamptz,
    expired_count        integer     NOT NULL DEFAULT 0
);
-- At most one open incident per subscription.
CREATE UNIQUE INDEX incidents_open_idx ON incidents (subscription_id) WHERE ended_at IS NULL;
CREATE INDEX incidents_tenant_idx ON incidents (tenant_id, opened_at DESC);

-- notifications is the outbox of customer emails: one row per recipient and step, sent (and retried with
-- backoff) by the notifier, never by the code that found the step, so a slow mail server never blocks it.
CREATE TABLE notifications (
    id              uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id       uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    incident_id     uuid        REFERENCES incidents (id) ON DELETE CASCADE,
    -- kind: incident_opened, incident_day, incident_expiring, incident_expired, incident_ended.
    kind            text        NOT NULL,
    recipient       text        NOT NULL,
    -- data holds what the message says (endpoint, counts, times, event ids), never secrets or payloads.
    data            jsonb       NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    last_error      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_due_idx ON notifications (next_attempt_at) WHERE sent_at IS NULL;

-- One row of maintenance state: how far deliveries.exhausted operator notifications have reported.
CREATE TABLE operator_watermarks (
    name  text        PRIMARY KEY,
    until timestamptz NOT NULL
);

-- +goose Down
DROP TABLE operator_watermarks;
DROP TABLE notifications;
DROP TABLE incidents;
ALTER TABLE subscriptions DROP COLUMN disabled_notified_at;
ALTER TABLE tenants DROP COLUMN internal;
