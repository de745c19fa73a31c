-- +goose Up
-- portal_links are the single-use links a platform makes (POST /tenants/{t}/portal-links) to let one of its
-- customers into the dashboard without a password. Only the SHA-256 of the token is stored. A link is
-- redeemed at most once (used_at, set by one guarded UPDATE), and the session it starts is this same row:
-- the dashboard checks it on every request, so ending a session (sign-out, session_expires_at, or all of a
-- tenant's at once) holds at once in every process. user_* are who the platform says the person is.
CREATE TABLE portal_links (
    id                 uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id          uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    token_hash         bytea       NOT NULL UNIQUE,
    role               text        NOT NULL CHECK (role IN ('manage', 'view')),
    theme              text        NOT NULL CHECK (theme IN ('auto', 'light', 'dark')),
    user_id            text        NOT NULL DEFAULT '',
    user_email         text        NOT NULL DEFAULT '',
    user_name          text        NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL,
    expires_at         timestamptz NOT NULL,
    session_expires_at timestamptz NOT NULL,
    used_at            timestamptz,
    session_ended_at   timestamptz
);
CREATE INDEX portal_links_tenant_idx ON portal_links (tenant_id) WHERE session_ended_at IS NULL;
CREATE INDEX portal_links_session_expires_idx ON portal_links (session_expires_at);

-- +goose Down
DROP TABLE portal_links;
