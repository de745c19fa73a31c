-- +goose Up
-- Receivers as enterprises run them: authentication beyond the signature (basic auth, OAuth 2 client
-- credentials, a client certificate for mutual TLS), payload filters and a retry schedule per endpoint.
-- Every column is added without a rewrite (no volatile default), so the migration is catalog work.
ALTER TABLE subscriptions
    -- auth is the readable part of the endpoint's authentication: {"type": "basic", "username"} or
    -- {"type": "oauth2_client_credentials", "token_url", "client_id", "scopes", "audience", "client_auth"};
    -- NULL for none. Its secrets are in credentials.
    ADD COLUMN auth jsonb CHECK (auth IS NULL OR auth->>'type' IN ('basic', 'oauth2_client_credentials')),
    -- credentials are the secrets the sender needs (password, client_secret, private_key), a JSON object of
    -- strings sealed with HOOKLINE_SECRET_KEY like custom header values, and never shown back.
    ADD COLUMN credentials jsonb NOT NULL DEFAULT '{}',
    -- tls_certificate is the client certificate's PEM chain (public; its key is credentials.private_key);
    -- its subject and expiry are kept beside it for pages and the expiry notice.
    ADD COLUMN tls_certificate text,
    ADD COLUMN tls_certificate_subject text,
    ADD COLUMN tls_certificate_not_after timestamptz,
    -- certificate_expiry_notified_at is when the tenant and the operator were told the certificate expires
    -- soon; a new certificate clears it.
    ADD COLUMN certificate_expiry_notified_at timestamptz,
    -- filter is the payload filter as the customer wrote it (validated by the application); NULL matches
    -- every event of the subscription's types.
    ADD COLUMN filter jsonb CHECK (filter IS NULL OR jsonb_typeof(filter) = 'object'),
    -- retry_schedule is the endpoint's own delays in seconds (attempt n + 1 waits the n-th); NULL: the
    -- process's backoff.
    ADD COLUMN retry_schedule integer[] CHECK (retry_schedule IS NULL OR (
        cardinality(retry_schedule) BETWEEN 1 AND 30 AND 1 <= ALL (retry_schedule) AND 86400 >= ALL (retry_schedule)));

-- filters_version counts changes of a tenant's filters: a publishing process evaluates filters from its
-- cache and passes the version it read; the publish statement stores nothing for an event whose tenant's
-- version moved meanwhile, and the process reads the filters again (see internal/publish).
ALTER TABLE tenants ADD COLUMN filters_version bigint NOT NULL DEFAULT 0;

-- The expiry notice looks for certificates expiring soon; few subscriptions have one.
CREATE INDEX subscriptions_certificate_expiry_idx ON subscriptions (tls_certificate_not_after)
    WHERE tls_certificate_not_after IS NOT NULL AND deleted_at IS NULL;

-- +goose Down
DROP INDEX subscriptions_certificate_expiry_idx;
ALTER TABLE tenants DROP COLUMN filters_version;
ALTER TABLE subscriptions DROP COLUMN retry_schedule, DROP COLUMN filter, DROP COLUMN certificate_expiry_notified_at,
    DROP COLUMN tls_certificate_not_after, DROP COLUMN tls_certificate_subject, DROP COLUMN tls_certificate,
    DROP COLUMN credentials, DROP COLUMN auth;
