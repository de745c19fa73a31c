-- +goose Up
-- Hookline's schema. One migration for the first release; later changes get their own files.
-- Every row below a tenant carries tenant_id so that every query can (and does) filter on it.

-- uuid_v7 returns a time-ordered UUID (RFC 9562 version 7) so that new rows land at the right-hand edge
-- of the primary-key index instead of at random pages, which keeps inserts and keyset scans cheap.
-- +goose StatementBegin
CREATE FUNCTION uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;
-- +goose StatementEnd

CREATE TABLE tenants (
    id         uuid        PRIMARY KEY DEFAULT uuid_v7(),
    name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- api_tokens are random 256-bit bearer tokens. Only their SHA-256 is stored: a slow password hash would be
-- paid on every API request. tenant_id NULL means an operator (admin) token.
CREATE TABLE api_tokens (
    id           uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id    uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    token_hash   bytea       NOT NULL UNIQUE,
    scopes       text[]      NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_tenant_idx ON api_tokens (tenant_id);

-- users are dashboard logins. tenant_id NULL with is_admin = true is a platform operator.
CREATE TABLE users (
    id            uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id     uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    email         text        NOT NULL,
    password_hash text        NOT NULL,
    is_admin      boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (is_admin OR tenant_id IS NOT NULL)
);
CREATE UNIQUE INDEX users_email_idx ON users (lower(email));

-- sessions is the table scs's pgxstore expects.
CREATE TABLE sessions (
    token  text        PRIMARY KEY,
    data   bytea       NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- subscriptions are a tenant's endpoints.
CREATE TABLE subscriptions (
    id                    uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id             uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url                   text        NOT NULL,
    description           text        NOT NULL DEFAULT '',
    -- event_types empty means every event type.
    event_types           text[]      NOT NULL DEFAULT '{}',
    state                 text        NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused', 'disabled')),
    disabled_reason       text        NOT NULL DEFAULT '',
    -- headers are the customer's custom request headers, a JSON object of strings. Kept out of every
    -- response and stored request copy. (Encryption at rest with HOOKLINE_SECRET_KEY is on the roadmap.)
    headers               jsonb       NOT NULL DEFAULT '{}',
    -- rate_limit_per_second is the outgoing rate limit towards this endpoint; NULL means none.
    rate_limit_per_second integer     CHECK (rate_limit_per_second > 0),
    -- Circuit breaker and incident state, kept here so the roadmap's breaker needs no new table.
    circuit_state         text        NOT NULL DEFAULT 'closed' CHECK (circuit_state IN ('closed', 'open', 'half_open')),
    circuit_opened_at     timestamptz,
    -- Health counters, reserved for auto-disable and incident alerts (roadmap): the completer is to keep them
    -- in the statement that records attempts. Until then, health is computed from webhook_attempts.
    consecutive_failures  integer     NOT NULL DEFAULT 0,
    last_success_at       timestamptz,
    last_failure_at       timestamptz,
    -- failing_since is the start of the current run of only failures (NULL while healthy); it drives
    -- auto-disable and incident alerts.
    failing_since         timestamptz,
    deleted_at            timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_tenant_idx ON subscriptions (tenant_id, created_at) WHERE deleted_at IS NULL;

-- subscription_secrets holds every signing secret of a subscription. A rotated-out secret keeps signing
-- until expires_at so receivers can roll over without dropping events.
CREATE TABLE subscription_secrets (
    id              uuid        PRIMARY KEY DEFAULT uuid_v7(),
    subscription_id uuid        NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    secret          text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz
);
CREATE INDEX subscription_secrets_sub_idx ON subscription_secrets (subscription_id);

-- events are what the platform published. body is the exact JSON sent to receivers, so every attempt and
-- every replay sends the same bytes.
CREATE TABLE events (
    id               uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id        uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event_type       text        NOT NULL,
    body             bytea       NOT NULL,
    idempotency_key  text,
    -- request_hash tells a genuine retry of a publish from a different request reusing its key.
    request_hash     bytea,
    -- response is the first answer to the publish, returned again for the same Idempotency-Key.
    response         jsonb,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX events_idempotency_idx ON events (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX events_tenant_created_idx ON events (tenant_id, created_at);

-- replays record operator bulk replays: who, what criteria, how many, when.
CREATE TABLE replays (
    id          uuid        PRIMARY KEY DEFAULT uuid_v7(),
    actor       text        NOT NULL,
    criteria    jsonb       NOT NULL,
    dry_run     boolean     NOT NULL DEFAULT false,
    matched     integer     NOT NULL DEFAULT 0,
    scheduled   integer     NOT NULL DEFAULT 0,
    state       text        NOT NULL DEFAULT 'finished' CHECK (state IN ('running', 'finished', 'failed')),
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX replays_started_idx ON replays (started_at DESC);

-- webhook_deliveries is the queue and the history: one event to one subscription.
--   pending    waiting for next_attempt_at (a "retrying" delivery is a pending one with total_attempts > 0)
--   in_flight  claimed by a worker until lease_expires_at
--   delivered  the receiver answered 2xx
--   failed     a permanent error (4xx other than 408/425/429, 3xx) or the subscription was deleted
--   expired    max attempts or give_up_at reached
-- failed and expired are the dead-letter queue.
CREATE TABLE webhook_deliveries (
    id               uuid        PRIMARY KEY DEFAULT uuid_v7(),
    tenant_id        uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event_id         uuid        NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    subscription_id  uuid        NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    event_type       text        NOT NULL,
    state            text        NOT NULL DEFAULT 'pending'
                                 CHECK (state IN ('pending', 'in_flight', 'delivered', 'failed', 'expired')),
    -- attempt_count counts attempts in the current schedule (reset by a manual retry or replay);
    -- total_attempts counts them over the delivery's life and numbers the attempt rows.
    attempt_count    integer     NOT NULL DEFAULT 0,
    total_attempts   integer     NOT NULL DEFAULT 0,
    manual_retries   integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    give_up_at       timestamptz NOT NULL,
    lease_expires_at timestamptz,
    -- lease_id names one claim, so a worker whose lease ran out cannot complete a later claim's attempt.
    lease_id         uuid,
    last_attempt_at  timestamptz,
    last_status      integer,
    last_response    text,
    last_error       text,
    -- dead_reason says in a word why a delivery is dead: permanent_status, max_attempts, deadline,
    -- subscription_deleted.
    dead_reason      text,
    discarded_at     timestamptz,
    replay_id        uuid        REFERENCES replays (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (state <> 'in_flight' OR lease_expires_at IS NOT NULL)
);
-- The queue: only pending rows, in claim order.
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (next_attempt_at, id) WHERE state = 'pending';
-- The rescuer's view of leases.
CREATE INDEX webhook_deliveries_in_flight_idx ON webhook_deliveries (lease_expires_at) WHERE state = 'in_flight';
-- The dead-letter queue, per tenant and across tenants.
CREATE INDEX webhook_deliveries_dead_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC)
    WHERE state IN ('failed', 'expired') AND discarded_at IS NULL;
CREATE INDEX webhook_deliveries_dead_created_idx ON webhook_deliveries (created_at, id)
    WHERE state IN ('failed', 'expired') AND discarded_at IS NULL;
-- The dashboard's and API's lists, newest first, keyset-paginated on (created_at, id).
CREATE INDEX webhook_deliveries_tenant_created_idx ON webhook_deliveries (tenant_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_sub_created_idx ON webhook_deliveries (tenant_id, subscription_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_tenant_state_idx ON webhook_deliveries (tenant_id, state, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- webhook_attempts has one row per HTTP request of a delivery.
CREATE TABLE webhook_attempts (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id      uuid        NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    tenant_id        uuid        NOT NULL,
    subscription_id  uuid        NOT NULL,
    attempt          integer     NOT NULL,
    started_at       timestamptz NOT NULL,
    duration_ms      integer     NOT NULL,
    -- status is the HTTP status, NULL when no response came (timeout, connection or TLS error).
    status           integer,
    response_snippet text        NOT NULL DEFAULT '',
    error            text        NOT NULL DEFAULT '',
    -- outcome is what the attempt meant: delivered, retry or failed.
    outcome          text        NOT NULL CHECK (outcome IN ('delivered', 'retry', 'failed')),
    -- The request as sent, without secrets: the URL and the non-secret headers.
    request_url      text        NOT NULL,
    request_headers  jsonb       NOT NULL,
    UNIQUE (delivery_id, attempt)
);
-- Health over the last 24 h reads attempts of one subscription by time.
CREATE INDEX webhook_attempts_sub_started_idx ON webhook_attempts (subscription_id, started_at);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE replays;
DROP TABLE events;
DROP TABLE subscription_secrets;
DROP TABLE subscriptions;
DROP TABLE sessions;
DROP TABLE users;
DROP TABLE api_tokens;
DROP TABLE tenants;
DROP FUNCTION uuid_v7();
